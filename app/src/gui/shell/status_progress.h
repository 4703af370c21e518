#pragma once
/// Two small pieces of the window's frame: the training progress in the status bar (a permanent
/// widget, visible while a run trains or is paused, whichever dock is raised) and the window's size
/// at a start without a saved geometry (it must fit the screen, frame and status bar included).

#include <QSize>

class QMainWindow;

namespace tensorscope::app {

class TrainingPanel;

/// Adds the progress of `panel`'s run ("step 120 / 600 · … · ETA 00:42", "paused at step 120 / 600")
/// to `window`'s status bar as a permanent label, shown only while a run trains.
void addStatusProgress(QMainWindow& window, TrainingPanel& panel);

/// True when a window of `preferred` client size plus a window manager's frame (title bar and
/// borders, estimated generously) does not fit `available` (QScreen::availableGeometry): then the
/// first start shows the window maximised, else at `preferred`, centred.
bool firstStartMaximised(QSize available, QSize preferred);
/// Sizes `window` so: preferred 1600 × 1000, centred, or where that does not fit the screen a size
/// that fits, maximised when first shown (unless resized before: `--size`, tests).
void applyFirstStartGeometry(QMainWindow& window, QSize preferred = QSize(1600, 1000));

}  // namespace tensorscope::app
