#pragma once
/// The only place Qt meets the trainer thread. A run trains on a std::thread through
/// model_core::train; its progress sink copies plain snapshots into a locked queue that the GUI
/// drains on a 40 ms coalescing timer, so the event loop never waits on training.

#include <QObject>
#include <QString>
#include <QTimer>
#include <QVector>
#include <memory>
#include <mutex>
#include <thread>

#include "model_core/run_config.h"
#include "model_core/snapshots.h"
#include "model_core/trainer.h"

namespace tensorscope::app {

class TrainingController : public QObject {
  Q_OBJECT
 public:
  explicit TrainingController(QObject* parent = nullptr);
  /// Requests stop and joins: a window can close mid-run and the checkpoint stays consistent.
  ~TrainingController() override;

  /// Starts training `config` into `runDir` (resume: continue its checkpoint; `warm`: a new run
  /// starting from another run's weights). Returns false and emits failed() when a run is active.
  bool start(const model_core::RunConfig& config, const QString& runDir, bool resume = false,
             qint64 stepsOverride = -1, const model_core::WarmStart& warm = {});
  void pause();
  void resume();
  /// While paused: exactly one more step.
  void step();
  /// Stops within one step; the run checkpoints and finished() follows.
  void stop();
  /// Asks for a checkpoint at the next step boundary (also while paused); checkpointed() follows.
  void requestCheckpoint();
  /// Sets the probe of the run's inspections (empty: the task's default) and asks for an
  /// inspection at the next step boundary (also while paused); inspected() follows.
  void requestInspection(const QString& probe);
  /// The layer whose diagram values the inspections carry (the diagram's inspector), this run and
  /// the next ones; -1: none (they cost an evaluation of every tensor of the layer).
  void setNetworkLayer(int layer);
  int networkLayer() const { return networkLayer_; }

  bool running() const { return worker_.joinable(); }
  bool paused() const { return control_ && control_->paused(); }
  QString runDir() const { return runDir_; }

  /// Blocks until the current run ends and its last signals were emitted (tests, shutdown).
  void waitForFinished();

 Q_SIGNALS:
  void started(qint64 firstStep, qint64 totalSteps, const QString& device, int threads);
  /// Per-step scalars since the last drain, in step order.
  void metrics(const QVector<tensorscope::model_core::MetricsSnapshot>& batch);
  void evaluated(const tensorscope::model_core::EvalSnapshot& eval);
  /// The newest inspection only (older ones in the same drain are superseded).
  void inspected(std::shared_ptr<const tensorscope::model_core::InspectionSnapshot> snapshot);
  void checkpointed(qint64 step);
  void message(const QString& text);
  void finished(const tensorscope::model_core::TrainResult& result);
  void failed(const QString& reason);
  /// The run folder is trained by another writer (files::RunLockedError): nothing was trained or
  /// written; `reason` names the holder.
  void refused(const QString& reason);

 private:
  class Sink;
  void drain();

  std::unique_ptr<model_core::TrainerControl> control_;
  std::shared_ptr<Sink> sink_;
  std::thread worker_;
  QTimer timer_;
  QString runDir_;
  int networkLayer_ = -1;
};

}  // namespace tensorscope::app
