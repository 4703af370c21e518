#pragma once
/// The diagram's inspector as an observer of the document (issue 15): it shows the value of every
/// tensor of the selected run's chosen layer on the probe the attention maps use — live from the
/// training run's inspections (TrainingController::setNetworkLayer), from a stopped run's
/// checkpoint (model_core::runNetworkValues on a worker thread), or for a design that has never
/// trained with random weights on a random input (model_core::designNetworkValues). Clicks on the
/// diagram choose what the inspector shows; its contraction stepping highlights the diagram.

#include <QByteArray>
#include <QObject>
#include <QRect>
#include <QString>
#include <functional>
#include <memory>

class QAction;
class QMainWindow;

namespace tensorscope::diagram_view {
class DiagramView;
}
namespace tensorscope::model_core {
struct InspectionSnapshot;
struct NetworkValues;
}  // namespace tensorscope::model_core

namespace tensorscope::app {

class InspectionViews;
class SessionModel;
class TensorInspector;
class TrainingController;

class TeachingViews : public QObject {
  Q_OBJECT
 public:
  TeachingViews(SessionModel* model, TrainingController* controller, InspectionViews* inspections,
                diagram_view::DiagramView* diagram, TensorInspector* inspector, QObject* parent = nullptr);

  /// Only an active inspector (its dock shown) costs anything: the training run evaluates every
  /// tensor of the layer with each inspection only then.
  void setActive(bool active);
  bool active() const { return active_; }
  /// Computes the values again for the selected run, layer and probe (coalesced: once per turn
  /// of the event loop).
  void refresh();
  /// True while a stopped run's or a design's values are computed on a worker thread.
  bool computing() const { return computing_; }
  /// Tokens of a never-trained design's random input.
  static constexpr int kDesignTokens = 8;

 Q_SIGNALS:
  /// The inspector got new values (or the reason it has none).
  void valuesShown();

 private:
  void refreshNow();
  void onInspected(quint64 runId, std::shared_ptr<const model_core::InspectionSnapshot> snap);
  void show(std::shared_ptr<const model_core::NetworkValues> values, const QString& caption);

  SessionModel* model_;
  TrainingController* controller_;
  InspectionViews* inspections_;
  diagram_view::DiagramView* diagram_;
  TensorInspector* inspector_;
  bool active_ = false;
  bool pending_ = false;
  bool computing_ = false;
  quint64 ticket_ = 0;  ///< the newest computation asked for; older answers are dropped
  quint64 shownRun_ = 0;  ///< the run whose values the inspector shows (0: none)
  QString lastProbe_;
};

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
