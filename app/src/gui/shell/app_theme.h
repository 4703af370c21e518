#pragma once
/// The application's look: one Fusion style for every widget, with a light or dark palette.

#include <QIcon>
#include <QPalette>
#include <QStyle>

namespace tensorscope::app {

/// Sets the Fusion style (once: QApplication owns it, so a style per call would leak) and the
/// light or dark palette of the whole application.
void applyApplicationTheme(bool dark);

/// The style's standard icon `which` (Fusion's are black), recoloured to `palette`'s button text
/// (and its disabled button text for the disabled state): legible on a dark toolbar too.
QIcon paletteIcon(QStyle::StandardPixmap which, const QPalette& palette);

}  // namespace tensorscope::app
