#pragma once
/// Training as the explorer runs it: starts the current run in a fresh run directory (locking it in
/// the SessionModel while it trains), forks the training run from a checkpoint it asks for, keeps
/// the Training dock's buttons and the runs' statuses in step with the controller, and releases the
/// lock when the run finishes or fails.

#include <QObject>
#include <QString>

#include <functional>
#include <vector>

namespace tensorscope::model_core {
struct RunConfig;
struct TrainResult;
}
namespace tensorscope::spec {
struct AttentionSpec;
}

namespace tensorscope::app {

struct RunEntry;
class SessionModel;
class TrainingController;
class TrainingPanel;

class TrainingDriver : public QObject {
  Q_OBJECT
 public:
  TrainingDriver(SessionModel* model, TrainingPanel* panel, QObject* parent = nullptr);
  TrainingController* controller() const { return controller_; }

  /// What to do with a run that has trained before (its checkpoint at `step`).
  enum class History { Resume, Restart, Cancel };
  using HistoryQuestion = std::function<History(const QString& run, qint64 step)>;
  /// Who answers that question (the window: a dialog); none: resume, which loses nothing.
  void setHistoryQuestion(HistoryQuestion ask) { askHistory_ = std::move(ask); }
  /// Asks whether a Training dock setting that changes the weight set (task, layers, sequence
  /// length) of run `run`, which has trained, goes to a fork (the window: a dialog); none: yes.
  using ForkQuestion = std::function<bool(const QString& run, const QString& changed)>;
  void setForkQuestion(ForkQuestion ask) { askFork_ = std::move(ask); }
  /// What in `now` changes the weight set `trained` was trained with (the task, the sequence
  /// length, the layers): "the layers were 1, now 2; …", or "" when nothing does.
  static QString weightSetChanges(const model_core::RunConfig& trained, const model_core::RunConfig& now);

  /// Starts training the current run (optionally stopping at `steps`). A run with a checkpoint is
  /// resumed from it or trained again in a new directory (the old one stays), as the history
  /// question answers. False, with the reason in error(), when a run trains already, the design is
  /// invalid, no run directory can be made, or the question was cancelled.
  bool start(qint64 steps = -1);
  /// Pause when running, resume when paused.
  void togglePause();
  /// Forks the training run from its current state: asks the trainer for a checkpoint; when it
  /// lands, adds and selects a new run whose every layer's design holds that layer's learned C
  /// (editable) and whose other weights start from a snapshot of that checkpoint. With no run
  /// training, forks the selected run from its newest checkpoint at once; false when it has none.
  bool fork();
  /// A design edit of run `runId` (not training, with a checkpoint): forks it from its checkpoint
  /// and applies the edit (`after`: one spec, or one per layer) to the fork, which is selected.
  bool forkWithDesign(quint64 runId, const std::vector<spec::AttentionSpec>& after, const QString& what);
  /// The Training dock's settings of run `runId` (not training, with a checkpoint) change its weight
  /// set: forks it from its checkpoint with `config` (findings N8: such a change in place made its
  /// checkpoint unloadable, and Resume then failed). The fork is selected.
  bool forkWithSettings(quint64 runId, const model_core::RunConfig& config);
  /// Stops a run (it checkpoints) and waits for it to end (window close, session replaced).
  void stopAndWait();
  /// Asks every run's folder whether another writer trains it (another window or process; the
  /// run lock, files::runLockHolder) and records it in the model. Every kLockPollMs and on
  /// selection.
  void pollRunLocks();
  static constexpr int kLockPollMs = 1500;

 Q_SIGNALS:
  void error(const QString& title, const QString& text);
  void message(const QString& text, int timeoutMs);
  /// A fork was added (and selected): its run id.
  void forked(quint64 runId);

 private:
  bool forkFromCheckpoint();
  /// Locks `run`, trains it into `dir` (resuming its checkpoint there, or fresh) and starts.
  bool launch(const RunEntry& run, const QString& dir, bool resume, qint64 steps);
  void onFinished(const model_core::TrainResult& result);
  void onFailed(const QString& reason);
  /// The trainer found the folder locked by another writer: nothing of the run changed.
  void onRefused(const QString& reason);
  /// Why run `run` cannot train in its folder now (another writer, or the folder is gone); empty
  /// when it can.
  QString folderRefusal(const RunEntry& run);
  /// The Training-dock settings a resume of `run` cannot take (task, sequence length, layers:
  /// its checkpoint's weights and data were made with those of RUN/config.json), as "the layers
  /// were 1, now 2"; empty when none changed.
  QString changedSinceCheckpoint(const RunEntry& run);
  void release(const QString& status);

  SessionModel* model_;
  TrainingPanel* panel_;
  TrainingController* controller_;
  quint64 forkParent_ = 0;  ///< the run whose checkpoint a fork waits for (0: none)
  HistoryQuestion askHistory_;
  ForkQuestion askFork_;
  /// The training run's status and folder before launch(): a refusal puts them back.
  QString statusBefore_, dirBefore_;
};

}  // namespace tensorscope::app
