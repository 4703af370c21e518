#pragma once
/// Dock arrangements of the explorer for its three uses, chosen from View > Layout: Design (the
/// design docks large), Train (the live plots large), Present (the diagram and C for a projector,
/// plots below), Experiments (a sweep's tables and figure large) and Teach (the lesson, the diagram
/// and its inspector), plus the default arrangement of a first start.

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

/// Gives the Experiments dock the front of its tab group, half the window's height and most of the
/// bottom row (the docks beside it stay, narrower). Used by the Experiments layout and when a sweep
/// is opened; changes nothing of a floating dock.
void enlargeExperimentsDock(QMainWindow& window);

}  // namespace tensorscope::app
