#include "gui/training_driver.h"

#include <QDateTime>

#include "gui/run_features.h"
#include "gui/session_model.h"
#include "gui/training_controller.h"
#include "gui/training_panel.h"
#include "model_core/run_directory.h"

namespace tensorscope::app {

TrainingDriver::TrainingDriver(SessionModel* model, TrainingPanel* panel, QObject* parent)
    : QObject(parent), model_(model), panel_(panel), controller_(new TrainingController(this)) {
  connect(controller_, &TrainingController::started, panel_, &TrainingPanel::onStarted);
  connect(controller_, &TrainingController::metrics, panel_, [this](const QVector<model_core::MetricsSnapshot>& batch) {
    if (!batch.isEmpty()) panel_->onMetrics(batch.back());
  });
  connect(controller_, &TrainingController::message, this, [this](const QString& m) { Q_EMIT message(m, 15000); });
  connect(controller_, &TrainingController::checkpointed, this, [this](qint64) {
    if (forkParent_) forkFromCheckpoint();
  });
  connect(controller_, &TrainingController::finished, this, &TrainingDriver::onFinished);
  connect(controller_, &TrainingController::failed, this, &TrainingDriver::onFailed);
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
    auto config = model_->currentRun().config;
    panel_->applyTo(config);
    model_->setCurrentConfig(config);
  });
  // The panel shows the current run's settings, and its status while nothing trains.
  const auto showSettings = [this] {
    panel_->setConfig(model_->currentRun().config);
    if (!model_->trainingRunId()) panel_->showIdle(model_->currentRun().name, model_->status(model_->current()));
  };
  connect(model_, &SessionModel::currentChanged, panel_, showSettings);
  connect(model_, &SessionModel::sessionReset, panel_, showSettings);
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
  // A run with history: resume it, or train it again from step 0 in a new directory.
  if (!run.runDir.isEmpty()) {
    const auto state = model_core::inspectRunDirectory(run.runDir.toStdString());
    if (state.checkpoint_step >= 0) {
      const History choice = askHistory_ ? askHistory_(run.name, state.checkpoint_step) : History::Resume;
      if (choice == History::Cancel) return false;
      if (choice == History::Resume) return launch(run, run.runDir, true, steps);
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
    Q_EMIT message(QString("Forked %1 at step %2: edit C of the fork; its other weights start from that checkpoint when it trains.")
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
