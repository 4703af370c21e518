#include "gui/live_views.h"

#include <algorithm>

#include "gui/run_features.h"
#include "gui/session_model.h"
#include "gui/training_controller.h"
#include "viz/curves_plot.h"

namespace tensorscope::app {

LiveViews::LiveViews(SessionModel* model, TrainingController* controller, viz::CurvesPlot* curves, QObject* parent)
    : QObject(parent), model_(model), curves_(curves) {
  connect(controller, &TrainingController::metrics, this, &LiveViews::onMetrics);
  connect(controller, &TrainingController::evaluated, this, &LiveViews::onEvaluated);

  connect(model_, &SessionModel::sessionReset, this, &LiveViews::reloadAllCurves);
  connect(model_, &SessionModel::runRemoved, curves_, [this](quint64, const QString& name) { curves_->removeRun(name); });
  connect(model_, &SessionModel::overlayChanged, this, [this](quint64 runId, bool shown) {
    const int i = model_->indexOf(runId);
    if (!shown) curves_->removeRun(model_->run(i).name);
    else loadCurves(i);
  });
  connect(model_, &SessionModel::trainingChanged, this, [this](quint64 runId) {
    if (runId == 0 || model_->trainingResumed()) return;  // a resumed run's curves go on
    curves_->removeRun(trainingRunName());  // a new run of this entry: its curves start again
  });
}

QString LiveViews::trainingRunName() const {
  const int i = model_->trainingIndex();
  return i < 0 ? QString() : model_->run(i).name;
}

void LiveViews::reloadAllCurves() {
  curves_->clear();
  for (int i = 0; i < model_->count(); ++i) loadCurves(i);
}

void LiveViews::loadCurves(int index) {
  if (index < 0 || !model_->overlaid(index)) return;
  const RunEntry& run = model_->run(index);
  if (run.runDir.isEmpty()) return;
  const auto curves = readMetricsCurves(run.runDir.toStdString());
  if (curves.damaged > 0)
    Q_EMIT message(QString("skipped %1 damaged line(s) of %2/metrics.jsonl (line %3: %4)")
                     .arg(curves.damaged)
                     .arg(run.runDir)
                     .arg(curves.firstDamaged)
                     .arg(QString::fromStdString(curves.firstReason)),
                 8000);
  for (const auto& [name, s] : curves.series) curves_->setSeries(QString::fromStdString(name), s.steps, s.values, run.name);
}

void LiveViews::onMetrics(const QVector<model_core::MetricsSnapshot>& batch) {
  const QString run = trainingRunName();
  if (run.isEmpty() || batch.isEmpty()) return;
  std::vector<double> steps, loss, lr;
  for (const auto& m : batch) {
    steps.push_back(double(m.step));
    loss.push_back(m.loss);
    lr.push_back(m.lr);
  }
  curves_->appendPoints("train loss", steps, loss, run);
  curves_->appendPoints("lr", steps, lr, run);
}

void LiveViews::onEvaluated(const model_core::EvalSnapshot& e) {
  const QString run = trainingRunName();
  if (run.isEmpty()) return;
  const QString split = QString::fromStdString(e.split);
  curves_->appendPoint("eval loss (" + split + ")", double(e.step), e.loss, run);
  if (e.exact_match >= 0) curves_->appendPoint("exact match (" + split + ")", double(e.step), e.exact_match, run);
  else curves_->appendPoint("accuracy (" + split + ")", double(e.step), e.accuracy, run);
}

}  // namespace tensorscope::app
