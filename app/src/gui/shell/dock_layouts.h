#pragma once
/// Dock arrangements of the explorer for its three uses, chosen from View > Layout: Design (the
/// design docks large), Train (the live plots large), Present (the diagram and C for a projector,
/// plots below), Experiments (a sweep's tables and figure large) and Teach (the lesson over the
/// Design form in a full-height column, the diagram and its inspector), plus the default
/// arrangement of a first start.

#include <QByteArray>
#include <QString>

class QMainWindow;

namespace tensorscope::app {

enum class DockLayout { Default, Design, Train, Present, Experiments, Teach };

/// The menu name of a layout ("Design", …).
QString dockLayoutName(DockLayout layout);

/// Arranges the window's docks (found by their titles) for `layout`; `defaultState` is the
/// QMainWindow::saveState of the first-start arrangement, restored first so that every preset
/// starts from the same place (docks the user closed come back).
void applyDockLayout(QMainWindow& window, DockLayout layout, const QByteArray& defaultState);

/// Gives the bottom-row dock titled `title` the front of its tab group, `heightShare` of the
/// window's height and most of the bottom row (the docks beside it stay, narrower). Used for the
/// Experiments dock (its layout, an opened sweep) and the labs; changes nothing of a floating dock.
void enlargeBottomDock(QMainWindow& window, const QString& title, double heightShare = 0.5);

/// Whether the docked Lesson dock has room to be read: in front and alone (no visible dock tabbed
/// with it) and at least `heightShare` of the window's height (a floating one always has).
bool lessonHasRoom(QMainWindow& window, double heightShare = 0.45);
inline void enlargeExperimentsDock(QMainWindow& window) { enlargeBottomDock(window, "Experiments"); }

}  // namespace tensorscope::app
