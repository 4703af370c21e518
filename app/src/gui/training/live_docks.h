#pragma once
/// The training curves as an observer of training and of the document: the training run's metrics
/// as they come, every other run's from its metrics log, overlaid or not. (The views of the model's
/// insides are SnapshotDocks'.) It also tells the plot what the document knows about the runs:
/// their order (a run's colour is its place in the session, so a reopened session looks the same),
/// where each fork starts (its parent's step, read from the checkpoint it starts from, so it
/// survives a reopen), and the training time of each live point (counted as readMetricsCurves
/// counts it from the log). The metric filter is remembered across sessions and restarts.

#include <QHash>
#include <QObject>
#include <QSet>
#include <QVector>

#include <vector>

#include "viz/curves_plot.h"

namespace tensorscope::viz {
class CurvesPlot;
}  // namespace tensorscope::viz
namespace tensorscope::model_core {
struct EvalSnapshot;
struct MetricsSnapshot;
}  // namespace tensorscope::model_core

namespace tensorscope::app {

class SessionModel;
class TrainingController;

class LiveDocks : public QObject {
  Q_OBJECT
 public:
  LiveDocks(SessionModel* model, TrainingController* controller, viz::CurvesPlot* curves, QObject* parent = nullptr);

 Q_SIGNALS:
  /// Something the user should read in the status bar (damaged lines of a metrics log).
  void message(const QString& text, int timeoutMs);

 private:
  void onMetrics(const QVector<model_core::MetricsSnapshot>& batch);
  void onEvaluated(const model_core::EvalSnapshot& e);
  /// Draws run `index`'s curves from its metrics log (nothing without a run directory).
  void loadCurves(int index);
  void reloadAllCurves();
  QString trainingRunName() const;
  /// Run order and fork origins from the document.
  void syncRuns();

  SessionModel* model_;
  viz::CurvesPlot* curves_;
  /// The training run's clock: its last step and the training time at that step (NaN: not yet
  /// known; taken from its curves at the first batch, so a resumed run goes on from its history).
  double lastStep_ = -1;
  double lastTime_ = 0;
  bool clockKnown_ = false;
  QSet<QString> loadedDirs_;  ///< run directories whose metrics.jsonl the curves hold
  /// The curves of un-ticked runs as the plot held them, by run id: a run whose folder is gone
  /// when it is ticked again draws these instead of nothing (issue 35, N23).
  QHash<quint64, std::vector<viz::CurvesPlot::RunCurve>> hiddenCurves_;
};

}  // namespace tensorscope::app
