#pragma once
/// Presenter mode (issue 15): the window full screen for a class, with the diagram and the
/// Inspector in large type; the window side of teaching.

#include <QByteArray>
#include <QList>
#include <QObject>
#include <QRect>
#include <functional>

class QAction;
class QMainWindow;
class QWidget;

namespace tensorscope::diagram_view {
class DiagramView;
}

namespace tensorscope::app {

class TensorInspector;

/// Presenter mode (View > Presenter mode, F11): the window full screen with only the diagram and
/// the inspector (and the Lesson dock while a lesson runs), large fonts, menus and toolbars hidden;
/// Right / Left step the plan, Space plays it, Esc or F11 leave, and everything comes back as it
/// was (docks, geometry, fonts).
class PresenterMode : public QObject {
  Q_OBJECT
 public:
  PresenterMode(QMainWindow* window, TensorInspector* inspector, diagram_view::DiagramView* diagram,
                QObject* parent = nullptr);
  /// The View menu's checkable entry (F11).
  QAction* toggleAction() const { return toggle_; }
  /// Whether the Lesson dock stays beside the diagram (a lesson is running).
  void setKeepLesson(std::function<bool()> keep) { keepLesson_ = std::move(keep); }
  bool active() const { return active_; }
  void setActive(bool active);
  /// The inspector's font scale while presenting.
  static constexpr double kFontScale = 1.6;

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
  std::function<bool()> keepLesson_;
};

}  // namespace tensorscope::app
