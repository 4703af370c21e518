#include "gui/training/training_driver.h"

#include <QDateTime>
#include <QFile>
#include <QFileInfo>
#include <QTimer>

#include "gui/training/run_features.h"
#include "gui/document/session_model.h"
#include "gui/training/training_controller.h"
#include "gui/training/training_panel.h"
#include "files/run_lock.h"
#include "model_core/run_directory.h"

namespace tensorscope::app {

TrainingDriver::TrainingDriver(SessionModel* model, TrainingPanel* panel, QObject* parent)
    : QObject(parent), model_(model), panel_(panel), controller_(new TrainingController(this)) {
  connect(controller_, &TrainingController::started, panel_, &TrainingPanel::onStarted);
  connect(controller_, &TrainingController::metrics, panel_, [this](const QVector<model_core::MetricsSnapshot>& batch) {
    if (!batch.isEmpty()) panel_->onMetrics(batch.back());
    if (!batch.isEmpty() && controller_->paused() && model_->trainingRunId())  // a step while paused
      model_->setStatus(model_->trainingRunId(), QString("paused at step %1").arg(batch.back().step));
  });
  connect(controller_, &TrainingController::message, this, [this](const QString& m) { Q_EMIT message(m, 15000); });
  connect(controller_, &TrainingController::checkpointed, this, [this](qint64) {
    if (forkParent_) forkFromCheckpoint();
  });
  connect(controller_, &TrainingController::finished, this, &TrainingDriver::onFinished);
  connect(controller_, &TrainingController::failed, this, &TrainingDriver::onFailed);
  connect(controller_, &TrainingController::refused, this, &TrainingDriver::onRefused);
  // Another writer of a run's folder (a second window, `tensorscope train --resume`) is looked for
  // every 1.5 s and when a run is selected: one open and one lock test per trained run.
  auto* lockPoll = new QTimer(this);
  connect(lockPoll, &QTimer::timeout, this, &TrainingDriver::pollRunLocks);
  lockPoll->start(kLockPollMs);
  connect(model_, &SessionModel::currentChanged, this, &TrainingDriver::pollRunLocks);
  connect(panel_, &TrainingPanel::startRequested, this, [this] { start(); });
  connect(panel_, &TrainingPanel::pauseRequested, this, [this] {
    if (!controller_->paused()) togglePause();
  });
  connect(panel_, &TrainingPanel::resumeRequested, this, [this] {
    if (controller_->paused()) togglePause();
  });
  connect(panel_, &TrainingPanel::stepRequested, controller_, &TrainingController::step);
  connect(panel_, &TrainingPanel::stopRequested, controller_, &TrainingController::stop);
  connect(panel_, &TrainingPanel::settingsChanged, model_, [this] {
    const RunEntry& run = model_->currentRun();
    auto config = run.config;
    panel_->applyTo(config);
    // A setting that changes the weight set of a run that has trained goes to a fork, as a design
    // edit of it does (docs/decisions.md): its checkpoint stays loadable, and it can still resume.
    const int index = model_->current();
    if (!model_->isTraining(index) && model_->hasCheckpoint(index)) {
      if (const QString changed = weightSetChanges(run.config, config); !changed.isEmpty()) {
        if (askFork_ && !askFork_(run.name, changed)) {
          Q_EMIT message("The setting was not applied: " + run.name + " stays as it trained.", 8000);
          panel_->setConfig(run.config);
          return;
        }
        forkWithSettings(run.id, config);
        return;
      }
    }
    model_->setCurrentConfig(config);
  });
  // The panel shows the current run's settings, and its status while nothing trains.
  const auto showStatus = [this] {
    if (!model_->trainingRunId()) panel_->showIdle(model_->currentRun().name, model_->statusLine(model_->current()));
  };
  const auto showSettings = [this, showStatus] {
    panel_->setConfig(model_->currentRun().config);
    showStatus();
  };
  connect(model_, &SessionModel::currentChanged, panel_, showSettings);
  connect(model_, &SessionModel::sessionReset, panel_, showSettings);
  connect(model_, &SessionModel::runsChanged, panel_, showStatus);  // e.g. training elsewhere
}

void TrainingDriver::pollRunLocks() {
  for (int i = 0; i < model_->count(); ++i) {
    const RunEntry& run = model_->run(i);
    std::optional<std::string> holder;
    // The run this window trains holds its own lock.
    if (!run.runDir.isEmpty() && run.id != model_->trainingRunId())
      holder = files::runLockHolder(QFile::encodeName(run.runDir).toStdString());
    model_->setLockHolder(run.id, holder ? QString::fromStdString(*holder) : QString());
  }
}

QString TrainingDriver::changedSinceCheckpoint(const RunEntry& run) {
  model_core::RunConfig trained;
  try {
    trained = model_core::readRunConfig(QFile::encodeName(run.runDir).toStdString() + "/config.json");
  } catch (const std::exception&) {
    return {};  // the trainer says what is wrong with the folder
  }
  return weightSetChanges(trained, run.config);
}

QString TrainingDriver::weightSetChanges(const model_core::RunConfig& trained, const model_core::RunConfig& now) {
  QStringList changed;
  if (trained.task.name != now.task.name)
    changed << QString("the task was %1, now %2").arg(QString::fromStdString(trained.task.name), QString::fromStdString(now.task.name));
  if (trained.task.seq_len != now.task.seq_len)
    changed << QString("the sequence length was %1, now %2").arg(trained.task.seq_len).arg(now.task.seq_len);
  if (trained.model.layers != now.model.layers)
    changed << QString("the layers were %1, now %2").arg(trained.model.layers).arg(now.model.layers);
  if (trained.model.positions != now.model.positions)
    changed << QString("the positions were %1, now %2").arg(QString::fromStdString(trained.model.positions),
                                                            QString::fromStdString(now.model.positions));
  return changed.join("; ");
}

QString TrainingDriver::folderRefusal(const RunEntry& run) {
  if (run.runDir.isEmpty()) return {};
  if (!QFileInfo::exists(run.runDir))
    return QString("The run folder of %1 is gone: %2 (deleted or moved while the session was open). Its checkpoint "
                   "and curves went with it, so it is not trained again from step 0 in its place. Put the folder "
                   "back to resume it, or duplicate the run (Runs dock) to train its design in a new folder.")
        .arg(run.name, run.runDir);
  if (const auto holder = files::runLockHolder(QFile::encodeName(run.runDir).toStdString())) {
    model_->setLockHolder(run.id, QString::fromStdString(*holder));
    return QString("%1 is training elsewhere: its folder %2 is being trained by %3. One run folder has one writer: "
                   "stop that training first (or wait for it), or duplicate the run to train its design in a new "
                   "folder.")
        .arg(run.name, run.runDir, QString::fromStdString(*holder));
  }
  return {};
}

bool TrainingDriver::start(qint64 steps) {
  if (controller_->running()) {
    Q_EMIT error("Training", "A run is already training; stop it first.");
    return false;
  }
  auto config = model_->currentRun().config;
  panel_->applyTo(config);
  model_->setCurrentConfig(config);
  const auto problems = model_core::validateRunConfig(config);
  if (!problems.empty()) {
    Q_EMIT error("Cannot train this design", QString::fromStdString(problems.front()));
    return false;
  }
  const RunEntry& run = model_->currentRun();
  if (const QString why = folderRefusal(run); !why.isEmpty()) {
    Q_EMIT error("Cannot train " + run.name, why);
    return false;
  }
  // A run with history: resume it, or train it again from step 0 in a new directory.
  if (!run.runDir.isEmpty()) {
    const auto state = model_core::inspectRunDirectory(run.runDir.toStdString());
    if (state.checkpoint_step >= 0) {
      const History choice = askHistory_ ? askHistory_(run.name, state.checkpoint_step) : History::Resume;
      if (choice == History::Cancel) return false;
      if (choice == History::Resume) {
        if (const QString changed = changedSinceCheckpoint(run); !changed.isEmpty()) {
          Q_EMIT error("Cannot resume " + run.name,
                       QString("%1 cannot resume with the Training dock's settings: %2. A resume continues its "
                               "checkpoint, which was trained with them. Set them back to resume it, train it again "
                               "from step 0 in a new folder, or duplicate the run to train the new settings.")
                           .arg(run.name, changed));
          return false;
        }
        return launch(run, run.runDir, true, steps);
      }
    }
  }
  const QString dir = makeRunDirectory(runsFolderFor(model_->path()), run.name, QDateTime::currentDateTime());
  if (dir.isEmpty()) {
    Q_EMIT error("Training", "Cannot create a run directory for " + run.name + " (check that the session's folder is writable)");
    return false;
  }
  return launch(run, dir, false, steps);
}

bool TrainingDriver::launch(const RunEntry& run, const QString& dir, bool resume, qint64 steps) {
  statusBefore_ = model_->status(model_->indexOf(run.id));
  dirBefore_ = run.runDir;
  model_->setRunDirectory(run.id, dir);
  model_->setTrainingRun(run.id, resume);
  model_->setStatus(run.id, resume ? "resuming…" : "training…");
  panel_->setState(true, false);
  panel_->setTokensPerStep(run.config.train.batch * model_core::modelSequenceLength(run.config));
  model_core::WarmStart warm;
  if (!resume && !run.initFrom.isEmpty()) warm.checkpoint_dir = run.initFrom.toStdString();  // a fork: cores from its design
  return controller_->start(run.config, dir, resume, steps, warm);
}

void TrainingDriver::togglePause() {
  if (!controller_->running()) return;
  if (controller_->paused()) controller_->resume();
  else controller_->pause();
  panel_->setState(true, controller_->paused());
  if (model_->trainingRunId())  // the runs list says so too, not "training…"
    model_->setStatus(model_->trainingRunId(), controller_->paused() ? QString("paused at step %1").arg(panel_->lastStep()) : "training…");
}

bool TrainingDriver::fork() {
  if (!model_->trainingRunId() || !controller_->running()) {
    // A trained run that is not training: fork from its newest checkpoint at once.
    const RunEntry& current = model_->currentRun();
    if (current.runDir.isEmpty() || model_core::inspectRunDirectory(current.runDir.toStdString()).checkpoint_step < 0) {
      Q_EMIT error("Fork", "No run is training and " + current.name + " has no checkpoint to fork from; edit its design directly.");
      return false;
    }
    forkParent_ = current.id;
    return forkFromCheckpoint();
  }
  // Fork from the state shown now: the trainer writes a checkpoint at its next step boundary
  // (also while paused) and the fork is made when it lands (forkFromCheckpoint).
  forkParent_ = model_->trainingRunId();
  controller_->requestCheckpoint();
  Q_EMIT message("Writing a checkpoint of " + model_->run(model_->trainingIndex()).name + " to fork from…", 10000);
  return true;
}

bool TrainingDriver::forkWithDesign(quint64 runId, const std::vector<spec::AttentionSpec>& after, const QString& what) {
  const int index = model_->indexOf(runId);
  if (index < 0 || model_->isTraining(index)) return false;
  const auto before = SessionModel::layerDesigns(model_->run(index).config);
  forkParent_ = runId;
  if (!forkFromCheckpoint()) return false;
  model_->carryDesignEdit(before, after, what);  // on the fork, which forkFromCheckpoint selected
  return true;
}

bool TrainingDriver::forkWithSettings(quint64 runId, const model_core::RunConfig& config) {
  const int index = model_->indexOf(runId);
  if (index < 0 || model_->isTraining(index)) return false;
  forkParent_ = runId;
  if (!forkFromCheckpoint()) {
    panel_->setConfig(model_->currentRun().config);  // the panel shows what the run has
    return false;
  }
  // On the fork, which forkFromCheckpoint selected: its design stays the parent's (learned C
  // included), the settings are the ones asked for.
  auto forked = model_->currentRun().config;
  forked.task = config.task;
  forked.model.layers = config.model.layers;
  forked.model.kind = config.model.kind;
  forked.model.positions = config.model.positions;
  forked.train = config.train;
  auto& attention = forked.model.attention;
  if (attention.size() != 1 && static_cast<int>(attention.size()) != std::max(1, forked.model.layers)) {
    const auto last = attention.back();  // one spec per layer: a new layer takes the last one's
    attention.resize(static_cast<size_t>(std::max(1, forked.model.layers)), last);
  }
  for (auto& a : attention) a.sizes.seq_len = config.task.seq_len;
  model_->setCurrentConfig(forked);
  panel_->setConfig(model_->currentRun().config);
  return true;
}

bool TrainingDriver::forkFromCheckpoint() {
  const int parentIndex = model_->indexOf(forkParent_);
  forkParent_ = 0;
  if (parentIndex < 0) return false;
  const RunEntry parent = model_->run(parentIndex);
  const QString snapshot = makeRunDirectory(runsFolderFor(model_->path()), parent.name + "-fork-start", QDateTime::currentDateTime());
  if (snapshot.isEmpty()) {
    Q_EMIT error("Cannot fork the run", "cannot create a directory for the fork's starting checkpoint");
    return false;
  }
  try {
    // One consistent copy of the latest checkpoint: the parent keeps training and overwriting it.
    const auto step = model_core::snapshotCheckpoint(parent.runDir.toStdString(), snapshot.toStdString());
    QStringList taken;
    for (int i = 0; i < model_->count(); ++i) taken << model_->run(i).name;
    const quint64 id =
        model_->addRun(forkEntry(parent, snapshot, step, taken), QString("fork of %1 at step %2: not trained").arg(parent.name).arg(step));
    Q_EMIT message(QString("Forked %1 at step %2: edit the fork's design (C, C′, the slots); its other weights start from that checkpoint when it trains.")
                     .arg(parent.name)
                     .arg(step),
                 10000);
    Q_EMIT forked(id);
    return true;
  } catch (const std::exception& e) {
    Q_EMIT error("Cannot fork the run", e.what());
    return false;
  }
}

void TrainingDriver::onFinished(const model_core::TrainResult& r) {
  if (forkParent_) forkFromCheckpoint();  // e.g. a diverged run: its last good checkpoint
  panel_->onFinished(QString::fromStdString(r.message));
  release(QString::fromStdString(r.message));
  if (r.diverged) Q_EMIT error("Training diverged", QString::fromStdString(r.message));
}

void TrainingDriver::onFailed(const QString& reason) {
  forkParent_ = 0;
  panel_->onFinished("Failed: " + reason);
  release("failed: " + reason);
  Q_EMIT error("Training failed", reason);
}

void TrainingDriver::onRefused(const QString& reason) {
  forkParent_ = 0;
  const quint64 id = model_->trainingRunId();
  panel_->onFinished("Not trained: another writer holds its folder");
  model_->setTrainingRun(0);
  if (id) {
    model_->setRunDirectory(id, dirBefore_);
    model_->setStatus(id, statusBefore_);
  }
  panel_->setState(false, false);
  pollRunLocks();
  Q_EMIT error("Training elsewhere", reason);
}

void TrainingDriver::release(const QString& status) {
  if (model_->trainingRunId()) model_->setStatus(model_->trainingRunId(), status);
  model_->setTrainingRun(0);
  panel_->setState(false, false);
}

void TrainingDriver::stopAndWait() {
  if (!controller_->running()) return;
  controller_->stop();
  controller_->waitForFinished();  // the run checkpoints before the caller goes on
}

}  // namespace tensorscope::app
