#include "gui/training/live_docks.h"

#include <QFileInfo>
#include <QSettings>

#include <algorithm>
#include <cmath>

#include "gui/training/run_features.h"
#include "gui/document/session_model.h"
#include "gui/training/training_controller.h"
#include "viz/curves_plot.h"

namespace tensorscope::app {

LiveDocks::LiveDocks(SessionModel* model, TrainingController* controller, viz::CurvesPlot* curves, QObject* parent)
    : QObject(parent), model_(model), curves_(curves) {
  connect(controller, &TrainingController::metrics, this, &LiveDocks::onMetrics);
  connect(controller, &TrainingController::evaluated, this, &LiveDocks::onEvaluated);

  curves_->setHiddenMetrics(QSettings().value("curves/hiddenMetrics").toStringList());
  connect(curves_, &viz::CurvesPlot::metricFilterChanged, this,
          [this] { QSettings().setValue("curves/hiddenMetrics", curves_->hiddenMetrics()); });
  connect(model_, &SessionModel::sessionReset, this, &LiveDocks::reloadAllCurves);
  connect(model_, &SessionModel::runsChanged, this, &LiveDocks::syncRuns);
  connect(model_, &SessionModel::runRemoved, curves_, [this](quint64 runId, const QString& name) {
    hiddenCurves_.remove(runId);
    curves_->removeRun(name);
  });
  connect(model_, &SessionModel::overlayChanged, this, [this](quint64 runId, bool shown) {
    const int i = model_->indexOf(runId);
    if (i < 0) return;
    const RunEntry& run = model_->run(i);
    if (!shown) {
      hiddenCurves_.insert(runId, curves_->runCurves(run.name));
      curves_->removeRun(run.name);
      return;
    }
    const auto kept = hiddenCurves_.take(runId);
    if (!run.runDir.isEmpty() && !QFileInfo::exists(run.runDir) && !kept.empty()) {
      // Its folder is gone: the curves the window had are drawn again, not re-read from nothing.
      for (const auto& c : kept) curves_->setSeries(c.metric, c.steps, c.values, run.name, c.times);
      Q_EMIT message(QString("The run folder of %1 is gone: %2 (deleted or moved); its curves are the ones "
                             "this window already had")
                         .arg(run.name, run.runDir),
                     8000);
      return;
    }
    loadCurves(i);
  });
  connect(model_, &SessionModel::trainingChanged, this, [this](quint64 runId) {
    clockKnown_ = false;
    if (runId == 0) return;
    syncRuns();  // a fork that starts training now has its snapshot
    if (model_->trainingResumed()) return;  // a resumed run's curves go on
    curves_->removeRun(trainingRunName());  // a new run of this entry: its curves start again
  });
}

QString LiveDocks::trainingRunName() const {
  const int i = model_->trainingIndex();
  return i < 0 ? QString() : model_->run(i).name;
}

void LiveDocks::syncRuns() {
  QStringList order;
  for (int i = 0; i < model_->count(); ++i) order << model_->run(i).name;
  curves_->setRunOrder(order);
  for (int i = 0; i < model_->count(); ++i) {
    const RunEntry& run = model_->run(i);
    if (run.initFrom.isEmpty() || curves_->runStepOffset(run.name) != 0) continue;  // read once
    const double step = double(forkStartStep(run));
    const QString parent = forkParentName(run, model_->session().runs);
    if (step != curves_->runStepOffset(run.name)) curves_->setRunOrigin(run.name, step, parent);
  }
  // A run that came with a history (Open run…, `tensorscope RUN_DIR`) draws it at once.
  for (int i = 0; i < model_->count(); ++i) {
    const RunEntry& run = model_->run(i);
    if (run.runDir.isEmpty() || model_->isTraining(i) || loadedDirs_.contains(run.runDir)) continue;
    loadCurves(i);
  }
}

void LiveDocks::reloadAllCurves() {
  curves_->clear();
  hiddenCurves_.clear();
  loadedDirs_.clear();
  syncRuns();
  for (int i = 0; i < model_->count(); ++i) loadCurves(i);
}

void LiveDocks::loadCurves(int index) {
  if (index < 0 || !model_->overlaid(index)) return;
  const RunEntry& run = model_->run(index);
  if (run.runDir.isEmpty()) return;
  loadedDirs_.insert(run.runDir);
  const auto curves = readMetricsCurves(run.runDir.toStdString());
  if (curves.damaged > 0)
    Q_EMIT message(QString("skipped %1 damaged line(s) of %2/metrics.jsonl (line %3: %4)")
                     .arg(curves.damaged)
                     .arg(run.runDir)
                     .arg(curves.firstDamaged)
                     .arg(QString::fromStdString(curves.firstReason)),
                 8000);
  for (const auto& [name, s] : curves.series)
    curves_->setSeries(QString::fromStdString(name), s.steps, s.values, run.name, s.times);
}

void LiveDocks::onMetrics(const QVector<model_core::MetricsSnapshot>& batch) {
  const QString run = trainingRunName();
  if (run.isEmpty() || batch.isEmpty()) return;
  // Training time as readMetricsCurves counts it from the log (each step's throughput), so the
  // live curve and the reopened one are the same.
  const std::int64_t tokens = tokensPerStep(model_->run(model_->trainingIndex()).config);
  std::vector<double> steps, loss, lr, times;
  for (const auto& m : batch) {
    const double step = double(m.step);
    if (!clockKnown_ || step <= lastStep_) {  // the first batch of a run, fresh or resumed
      lastStep_ = step - 1;
      const double t = curves_->timeAt(run, lastStep_);
      lastTime_ = std::isfinite(t) ? t : 0.0;
      clockKnown_ = true;
    }
    const double dt = stepSeconds(tokens, step - lastStep_, m.tokens_per_second);
    if (std::isfinite(dt)) lastTime_ += dt;
    lastStep_ = step;
    steps.push_back(step);
    loss.push_back(m.loss);
    lr.push_back(m.lr);
    times.push_back(lastTime_);
  }
  curves_->appendPoints("train loss", steps, loss, run, times);
  curves_->appendPoints("lr", steps, lr, run, times);
}

void LiveDocks::onEvaluated(const model_core::EvalSnapshot& e) {
  const QString run = trainingRunName();
  if (run.isEmpty()) return;
  const QString split = QString::fromStdString(e.split);
  curves_->appendPoint("eval loss (" + split + ")", double(e.step), e.loss, run);
  if (e.exact_match >= 0) curves_->appendPoint("exact match (" + split + ")", double(e.step), e.exact_match, run);
  else curves_->appendPoint("accuracy (" + split + ")", double(e.step), e.accuracy, run);
}

}  // namespace tensorscope::app
