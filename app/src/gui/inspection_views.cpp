#include "gui/inspection_views.h"

#include <algorithm>

#include "gui/session_model.h"
#include "gui/training_controller.h"
#include "viz/attention_map_grid.h"
#include "viz/role_cluster_plot.h"
#include "viz/spectrum_plot.h"
#include "viz/stable_rank_plot.h"

namespace tensorscope::app {

InspectionViews::InspectionViews(SessionModel* model, TrainingController* controller,
                                 const InspectionViewWidgets& views, QObject* parent)
    : QObject(parent), model_(model), v_(views) {
  connect(controller, &TrainingController::inspected, this, &InspectionViews::onInspection);
  connect(v_.roles, &viz::RoleClusterPlot::kChanged, this, &InspectionViews::reclusterRoles);
  // Nothing of the previous session stays on show.
  connect(model_, &SessionModel::sessionReset, this, &InspectionViews::clearInspectionViews);
  connect(model_, &SessionModel::trainingChanged, this, [this](quint64 runId) {
    if (runId == 0 || model_->trainingResumed()) return;
    clearInspectionViews();  // a new run of this entry: the views wait for its inspections
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

void InspectionViews::clearInspectionViews() {
  last_.reset();
  lastRoles_ = {};
  v_.stableRank->clear();
  v_.stableRank->setHeadsReference(0);
  v_.spectrum->setSpectra({});
  v_.maps->clear("No attention maps yet: they are drawn while a model trains");
  reclusterRoles(v_.roles->k());  // with no inspection: the message
}

void InspectionViews::onInspection(std::shared_ptr<const model_core::InspectionSnapshot> snap) {
  if (!snap) return;
  last_ = snap;
  const double step = double(snap->step);
  const auto& trained = model_->trainingSpec();  // the trained design's H and D, not the selected run's
  if (!snap->stable_ranks.empty()) {
    v_.stableRank->appendSnapshot(step, snap->core_layers, snap->stable_ranks);
    std::vector<viz::CoreSpectrum> spectra;
    for (size_t i = 0; i < snap->core_layers.size(); ++i)
      spectra.push_back({snap->core_layers[i], snap->spectra[i], snap->stable_ranks[i]});
    v_.spectrum->setSpectra(spectra, step);
    v_.spectrum->setCurrentLayer(model_->currentLayer());
    // "H heads" is a reference only for a design with a core C (the stable rank's meaning).
    v_.stableRank->setHeadsReference(trained.core ? trained.sizes.H : 0);
    v_.spectrum->setHeads(trained.core ? trained.sizes.H : 0);
  }
  std::vector<std::vector<viz::MatrixData>> maps;
  std::vector<int> layers;
  for (size_t l = 0; l < snap->maps.size(); ++l) {
    std::vector<viz::MatrixData> row;
    for (const auto& m : snap->maps[l]) row.push_back({m.rows(), m.cols(), m.values});
    maps.push_back(std::move(row));
    layers.push_back(static_cast<int>(l));
  }
  QStringList tokens;
  for (const auto& t : snap->probe_tokens) tokens << QString::fromStdString(t);
  v_.maps->setGroupSize(trained.core ? std::max(1, trained.sizes.D) : 1);
  v_.maps->setMaps(maps, tokens, layers, step);
  if (snap->roles.rows() > 0) reclusterRoles(v_.roles->k());
  Q_EMIT inspected(snap);
}

void InspectionViews::reclusterRoles(int k) {
  if (!last_ || last_->roles.rows() < 3) {
    v_.roles->showMessage("Role vectors appear here while a TP-attention model trains (variant tp).");
    return;
  }
  const auto& snap = *last_;
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
