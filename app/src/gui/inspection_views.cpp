#include "gui/inspection_views.h"

#include <algorithm>

#include "gui/session_model.h"
#include "model_core/inspection_files.h"
#include "gui/training_controller.h"
#include "viz/attention_map_grid.h"
#include "viz/role_cluster_plot.h"
#include "viz/spectrum_plot.h"
#include "viz/stable_rank_plot.h"

namespace tensorscope::app {

namespace {
QString stepHeader(const QString& run, std::int64_t step) { return QString("%1 · step %2").arg(run).arg(step); }
}  // namespace

InspectionViews::InspectionViews(SessionModel* model, TrainingController* controller,
                                 const InspectionViewWidgets& views, ViewHeaderSetter setHeader, QObject* parent)
    : QObject(parent), model_(model), v_(views), setHeader_(std::move(setHeader)) {
  connect(controller, &TrainingController::inspected, this, &InspectionViews::onInspection);
  connect(v_.roles, &viz::RoleClusterPlot::kChanged, this, &InspectionViews::reclusterRoles);
  // The views show the selected run: a new session, another run, a run that starts training or
  // gets a run directory (Open run…) shows it again.
  connect(model_, &SessionModel::sessionReset, this, [this] {
    live_.reset();
    liveRun_ = 0;
    showSelectedRun();
  });
  connect(model_, &SessionModel::currentChanged, this, &InspectionViews::showSelectedRun);
  connect(model_, &SessionModel::runsChanged, this, [this] {
    if (model_->currentRun().id != shownRun_ || (!last_ && !model_->currentRun().runDir.isEmpty())) showSelectedRun();
  });
  connect(model_, &SessionModel::trainingChanged, this, [this](quint64 runId) {
    if (runId != 0 && !model_->trainingResumed()) {  // a new run of this entry: nothing of the old one
      live_.reset();
      liveRun_ = runId;
    }
    showSelectedRun();
  });
  // The stable-rank views follow the layer chosen in the core editor, and choose it too.
  const auto followLayer = [this] {
    v_.stableRank->setHighlightedLayer(model_->layerCount(model_->current()) > 1 ? model_->currentLayer() : -1);
    v_.spectrum->setCurrentLayer(model_->currentLayer());
  };
  connect(model_, &SessionModel::currentLayerChanged, this, followLayer);
  connect(model_, &SessionModel::currentChanged, this, followLayer);
  connect(v_.spectrum, &viz::SpectrumPlot::layerChanged, model_, &SessionModel::setCurrentLayer);
}

void InspectionViews::clearInspectionViews(const QString& why) {
  last_.reset();
  rankHistory_ = false;
  lastRoles_ = {};
  v_.stableRank->clear();
  v_.stableRank->setHeadsReference(0);
  v_.spectrum->setSpectra({});
  explain(why);
}

void InspectionViews::explain(const QString& why) {
  v_.maps->clear(why);
  v_.roles->showMessage(why);
}

void InspectionViews::showSelectedRun() {
  const int index = model_->current();
  if (index < 0 || index >= model_->count()) return;
  const RunEntry& run = model_->run(index);
  shownRun_ = run.id;
  shownName_ = run.name;
  const bool training = model_->isTraining(index);
  clearInspectionViews(training ? QString("%1 is training: its first inspection comes at step %2")
                                      .arg(run.name)
                                      .arg(run.config.train.inspect_interval)
                                : QString("%1 has not been trained: its attention maps and role vectors appear "
                                          "here while it trains").arg(run.name));
  std::shared_ptr<const model_core::InspectionSnapshot> snap;
  if (!run.runDir.isEmpty()) {
    const std::string dir = run.runDir.toStdString();
    try {  // the stable rank history: written as the run trains, so the training run's too
      const auto h = model_core::readInspectionHistory(dir);
      rankHistory_ = !h.steps.empty() && !h.layers.empty();
      for (size_t i = 0; i < h.layers.size(); ++i) {
        std::vector<double> steps, ranks;
        for (size_t k = 0; k < h.steps.size(); ++k) steps.push_back(double(h.steps[k])), ranks.push_back(h.stable_ranks[k][i]);
        v_.stableRank->setLayerHistory(h.layers[i], steps, ranks);
      }
      if (h.damaged > 0)
        Q_EMIT message(QString("skipped %1 damaged line(s) of %2/%3 (%4)")
                         .arg(h.damaged)
                         .arg(run.runDir, model_core::kInspectionLogName, QString::fromStdString(h.first_damage)),
                       8000);
    } catch (const std::exception& e) {
      Q_EMIT message(QString("cannot read the stable rank history of %1: %2").arg(run.name, e.what()), 8000);
    }
    if (training && liveRun_ == run.id) {
      snap = live_;
    } else if (!training) {
      try {
        if (auto read = model_core::readInspection(dir))
          snap = std::make_shared<const model_core::InspectionSnapshot>(std::move(*read));
        else
          explain(QString("%1 kept no inspection (trained before Tensorscope kept them, or stopped "
                                       "before its first checkpoint)").arg(run.name));
      } catch (const std::exception& e) {
        explain(QString("The inspection of %1 is damaged: %2").arg(run.name, e.what()));
      }
    }
  }
  if (snap) drawSnapshot(*snap);
  last_ = snap;
  setHeaders();
  Q_EMIT inspected(run.id, snap);
}

void InspectionViews::setHeaders() {
  const QString step = last_ ? stepHeader(shownName_, last_->step) : QString();
  setHeader_(v_.stableRank, rankHistory_ || (last_ && !last_->stable_ranks.empty()) ? shownName_ : QString());
  setHeader_(v_.spectrum, step);
  setHeader_(v_.maps, step);
  setHeader_(v_.roles, last_ && last_->roles.rows() > 0 ? step : QString());
}

void InspectionViews::onInspection(std::shared_ptr<const model_core::InspectionSnapshot> snap) {
  if (!snap) return;
  live_ = snap;
  liveRun_ = model_->trainingRunId();
  if (liveRun_ != model_->currentRun().id) return;  // another run is on show
  if (!snap->stable_ranks.empty()) v_.stableRank->appendSnapshot(double(snap->step), snap->core_layers, snap->stable_ranks);
  drawSnapshot(*snap);
  last_ = snap;
  setHeaders();
  Q_EMIT inspected(liveRun_, snap);
}

void InspectionViews::drawSnapshot(const model_core::InspectionSnapshot& snap) {
  const double step = double(snap.step);
  const auto design = model_->currentSpec();  // the shown run's design (a training run's is locked)
  if (!snap.stable_ranks.empty()) {
    std::vector<viz::CoreSpectrum> spectra;
    for (size_t i = 0; i < snap.core_layers.size(); ++i)
      spectra.push_back({snap.core_layers[i], snap.spectra[i], snap.stable_ranks[i]});
    v_.spectrum->setSpectra(spectra, step);
    v_.spectrum->setCurrentLayer(model_->currentLayer());
    // "H heads" is a reference only for a design with a core C (the stable rank's meaning).
    v_.stableRank->setHeadsReference(design.core ? design.sizes.H : 0);
    v_.spectrum->setHeads(design.core ? design.sizes.H : 0);
  }
  std::vector<std::vector<viz::MatrixData>> maps;
  std::vector<int> layers;
  for (size_t l = 0; l < snap.maps.size(); ++l) {
    std::vector<viz::MatrixData> row;
    for (const auto& m : snap.maps[l]) row.push_back({m.rows(), m.cols(), m.values});
    maps.push_back(std::move(row));
    layers.push_back(static_cast<int>(l));
  }
  QStringList tokens;
  for (const auto& t : snap.probe_tokens) tokens << QString::fromStdString(t);
  v_.maps->setGroupSize(design.core ? std::max(1, design.sizes.D) : 1);
  v_.maps->setMaps(maps, tokens, layers, step);
  drawRoles(&snap, v_.roles->k());
}

void InspectionViews::reclusterRoles(int k) { drawRoles(last_.get(), k); }

void InspectionViews::drawRoles(const model_core::InspectionSnapshot* shown, int k) {
  if (!shown) return;  // the views say why they are empty
  if (shown->roles.rows() < 3) {
    v_.roles->showMessage(QString("%1 has no role vectors: they appear for TP-attention models (variant tp).").arg(shownName_));
    return;
  }
  const auto& snap = *shown;
  auto p = projectRoles(snap.roles, k);
  alignRoleProjection(p, lastRoles_);  // the same probe: the picture turns and relabels smoothly
  lastRoles_ = p;
  QStringList tokens, contexts, labels;
  for (int i = 0; i < snap.roles.rows(); ++i) {
    tokens << QString::fromStdString(snap.role_tokens[i]);
    contexts << QString::fromStdString(snap.role_contexts[i]);
    labels << QString::fromStdString(snap.role_labels[i]);
  }
  v_.roles->setPoints(p.xs, p.ys, tokens, contexts, labels);
  v_.roles->setClusters(p.clusters);
  v_.roles->setAxisTitles(QString("PC1 (%1%)").arg(100 * p.explainedPc1, 0, 'f', 1),
                          QString("PC2 (%1%)").arg(100 * p.explainedPc2, 0, 'f', 1));
}

}  // namespace tensorscope::app
