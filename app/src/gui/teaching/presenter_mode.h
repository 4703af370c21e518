#pragma once
/// Presenter mode (issue 15): the window full screen for a class, with the diagram and the
/// Inspector in large type; the window side of teaching.

#include <QByteArray>
#include <QList>
#include <QObject>
#include <QRect>

class QAction;
class QDockWidget;
class QMainWindow;
class QWidget;

namespace tensorscope::diagram_view {
class DiagramView;
}

namespace tensorscope::app {

class LessonPanel;
class TensorInspector;

/// Presenter mode (View > Presenter mode, F11): the window full screen with the diagram and the
/// inspector side by side, both in view (the diagram the larger share, kDiagramShare of the width),
/// and while a lesson runs the Lesson dock compact under the diagram (about kLessonShare of the height:
/// the step's text, no chooser or step list); large type everywhere (the inspector and its heatmap's
/// tick labels, the diagram's header, the lesson), a diagram fitted up to kFontScale times larger
/// than on the desktop; menus, toolbars and the status bar hidden. Right / Left step the plan,
/// Space plays it, Esc or F11 leave, and everything comes back as it was (docks and their tab
/// groups, geometry, fonts).
class PresenterMode : public QObject {
  Q_OBJECT
 public:
  PresenterMode(QMainWindow* window, TensorInspector* inspector, diagram_view::DiagramView* diagram,
                QObject* parent = nullptr);
  /// The View menu's checkable entry (F11).
  QAction* toggleAction() const { return toggle_; }
  /// The Lesson dock's panel: shown, compact, under the diagram while a lesson runs (a step is on
  /// show).
  void setLessonPanel(LessonPanel* panel) { lesson_ = panel; }
  bool active() const { return active_; }
  void setActive(bool active);
  /// The font scale of the inspector (and its heatmap), the lesson and the diagram's header while
  /// presenting.
  static constexpr double kFontScale = 1.6;
  /// The diagram's share of the window's width, the inspector's the rest.
  static constexpr double kDiagramShare = 0.62;
  /// The Lesson dock's share of the height of the diagram's column while a lesson runs (more, up
  /// to kMaxLessonShare, where its step needs it).
  static constexpr double kLessonShare = 0.28;
  static constexpr double kMaxLessonShare = 0.4;

 Q_SIGNALS:
  void activeChanged(bool active);

 private:
  QMainWindow* window_;
  TensorInspector* inspector_;
  diagram_view::DiagramView* diagram_;
  QAction* toggle_;
  QList<QAction*> keys_;  ///< Right, Left, Space, Esc: enabled only while presenting
  bool active_ = false;
  QByteArray savedState_;
  QRect savedGeometry_;
  bool wasMaximized_ = false;
  QList<QWidget*> hiddenBars_;
  LessonPanel* lesson_ = nullptr;
  bool lessonShown_ = false;  ///< the Lesson dock is in the presenter's layout
  bool sizesPending_ = false;

  bool eventFilter(QObject* watched, QEvent* event) override;
  QDockWidget* dock(const char* name) const;
  /// Puts the diagram, the inspector and (lessonShown_) the lesson side by side, out of any tab group.
  void arrange();
  /// Gives them their shares of the window (again after it changes size while presenting).
  void applySizes();
};

}  // namespace tensorscope::app
