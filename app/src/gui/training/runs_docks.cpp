#include "gui/training/runs_docks.h"
#include "gui/training/run_cost.h"

#include <QFileDialog>

#include "gui/document/run_status.h"
#include "gui/document/session.h"
#include "gui/document/default_session.h"
#include "gui/document/session_model.h"
#include "gui/training/run_features.h"
#include "gui/training/runs_panel.h"
#include "spec/attention_spec.h"

namespace tensorscope::app {

RunsDocks::RunsDocks(SessionModel* model, RunsPanel* runs, std::function<void(const QString&, const QString&)> showError,
                     QObject* parent)
    : QObject(parent), model_(model), runs_(runs), showError_(std::move(showError)) {
  connect(model_, &SessionModel::runsChanged, this, &RunsDocks::showRuns);
  connect(model_, &SessionModel::designChanged, this, &RunsDocks::showRuns);  // a design made valid or invalid
  connect(runs_, &RunsPanel::currentChanged, model_, &SessionModel::select);
  connect(runs_, &RunsPanel::overlayChanged, model_, &SessionModel::setOverlay);
  connect(runs_, &RunsPanel::newRunRequested, model_, [this] {
    model_->addRun({QString("Run %1").arg(model_->count() + 1), defaultRunConfig(spec::makeSpecPreset("mhsa")), {}, {}}, "not trained");
  });
  connect(runs_, &RunsPanel::duplicateRequested, model_, [this] {
    RunEntry copy = model_->currentRun();
    copy.name += " copy";
    copy.runDir.clear();
    model_->addRun(std::move(copy), "not trained");
  });
  connect(runs_, &RunsPanel::removeRequested, this, [this](int i) {
    QString why;
    if (!model_->removeRun(i, &why)) showError_("Cannot remove this run", why);
  });
  connect(runs_, &RunsPanel::openRunDirectoryRequested, this, [this] {
    const QString dir = QFileDialog::getExistingDirectory(runs_, "Open a run directory");
    if (!dir.isEmpty()) openRunDirectory(dir);
  });
}

void RunsDocks::showRuns() {
  QStringList names, statuses, problems, costs;
  QList<bool> overlaid;
  for (int i = 0; i < model_->count(); ++i) {
    names << model_->run(i).name;
    statuses << model_->statusLine(i);
    // Its length before F5 (the default session's fourth run takes most of an hour).
    if (const QString time = roughTrainingTime(model_->run(i).config); model_->run(i).runDir.isEmpty() && !time.isEmpty())
      statuses.last() += " · " + time + " to train";
    // An invalid design (opened from a file, or edited so) is marked until it is fixed.
    problems << runProblems(model_->run(i)).join('\n');
    overlaid << model_->overlaid(i);
    costs << runCostText(model_->run(i).config);
  }
  runs_->setRuns(names, statuses, overlaid, model_->current(), problems, costs);
}

bool RunsDocks::openRunDirectory(const QString& dir) {
  try {
    auto entry = runEntryFromDirectory(dir);
    const QString status = runStatusText(entry.runDir);  // how its training ended (finding N21)
    model_->addRun(std::move(entry), status);
    return true;
  } catch (const std::exception& e) {
    showError_("Cannot open run directory", dir + ": " + QString::fromUtf8(e.what()));
    return false;
  }
}

}  // namespace tensorscope::app
