#pragma once
/// The application's look: one Fusion style for every widget, with a light or dark palette.

namespace tensorscope::app {

/// Sets the Fusion style (once: QApplication owns it, so a style per call would leak) and the
/// light or dark palette of the whole application.
void applyApplicationTheme(bool dark);

}  // namespace tensorscope::app
