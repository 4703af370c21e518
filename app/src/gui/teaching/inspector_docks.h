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

#include "spec/attention_spec.h"

namespace tensorscope::diagram_view {
class DiagramView;
}
namespace tensorscope::model_core {
struct InspectionSnapshot;
struct NetworkValues;
}  // namespace tensorscope::model_core

namespace tensorscope::app {

class SnapshotDocks;
class SessionModel;
class TensorInspector;
class TrainingController;

class InspectorDocks : public QObject {
  Q_OBJECT
 public:
  InspectorDocks(SessionModel* model, TrainingController* controller, SnapshotDocks* inspections,
                diagram_view::DiagramView* diagram, TensorInspector* inspector, QObject* parent = nullptr);

  /// Only an active inspector (its dock shown) costs anything: the training run evaluates every
  /// tensor of the layer with each inspection only then.
  void setActive(bool active);
  bool active() const { return active_; }
  /// Computes the values again for the selected run, layer and probe (coalesced: once per turn
  /// of the event loop).
  void refresh();
  /// True while a stopped run's or a design's values are computed on a worker thread, or while a
  /// refresh is queued (a design edit just made: the values on show are the old design's).
  bool computing() const { return computing_ || (active_ && pending_); }
  /// Who the values belong to: the run's name and the design it has now ("THSA · differential
  /// attention (Diff Transformer)"), so a run named for another design is never taken for it.
  static QString whose(const QString& runName, const spec::AttentionSpec& design);
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
  SnapshotDocks* inspections_;
  diagram_view::DiagramView* diagram_;
  TensorInspector* inspector_;
  bool active_ = false;
  bool pending_ = false;
  bool computing_ = false;
  quint64 ticket_ = 0;  ///< the newest computation asked for; older answers are dropped
  quint64 shownRun_ = 0;  ///< the run whose values the inspector shows (0: none)
  QString lastProbe_;
};

}  // namespace tensorscope::app
