#include "gui/training/snapshot_docks.h"

#include <QFileInfo>
#include <QFutureWatcher>
#include <QLabel>
#include <QLineEdit>
#include <QtConcurrent/QtConcurrentRun>
#include <algorithm>

#include "gui/document/session_model.h"
#include "model_core/inspection_files.h"
#include "model_core/run_directory.h"
#include "spec/attention_spec.h"
#include "gui/training/training_controller.h"
#include "viz/attention_map_grid.h"
#include "viz/role_cluster_plot.h"
#include "viz/spectrum_plot.h"
#include "viz/stable_rank_plot.h"

namespace tensorscope::app {

namespace {
QString stepHeader(const QString& run, std::int64_t step) { return QString("%1 · step %2").arg(run).arg(step); }

/// What the probe field asks for, by task.
QString probeHint(const std::string& task) {
  if (task == "fashion_mnist") return "a validation image number, e.g. 7 (Enter)";
  if (task == "char_lm") return "a text, e.g. In the beginning (Enter)";
  if (task == "arithmetic") return "a question, e.g. What is 12 plus 7? (Enter)";
  return "a question, e.g. 3142 (Enter)";
}

/// What the stable-rank plot says while it is empty: a design without a core C never has a stable rank.
QString noStableRankText(const spec::AttentionSpec& design) {
  if (design.core) return {};
  // Named by the design it is ("MLA", "GQA-2"), not by its variant: an mhsa layer with slots is
  // not MHSA.
  QString variant = SessionModel::designRunName(design);
  if (variant.isEmpty()) variant = QString::fromStdString(std::string(spec::toString(design.variant)));
  if (variant == "mhsa") variant = "MHSA";
  return QString("%1 has no core matrix C, so no stable rank: it is drawn for thsa and thsa_linear runs").arg(variant);
}

/// A stopped run's probe, computed on a worker thread.
struct ProbeResult {
  std::shared_ptr<const model_core::InspectionSnapshot> snapshot;
  QString error;
};
}  // namespace

SnapshotDocks::SnapshotDocks(SessionModel* model, TrainingController* controller,
                                 const SnapshotWidgets& views, ViewHeaderSetter setHeader, QObject* parent)
    : QObject(parent), setHeader_(std::move(setHeader)), model_(model), v_(views), controller_(controller) {
  connect(controller, &TrainingController::inspected, this, &SnapshotDocks::onInspection);
  connect(controller, &TrainingController::message, this, [this](const QString& text) {
    if (text.startsWith("probe ")) {  // the training run could not read the probe
      trainerProbe_.clear();
      note(text, true);
    }
  });
  connect(v_.roles, &viz::RoleClusterPlot::kChanged, this, &SnapshotDocks::reclusterRoles);
  connect(v_.roles, &viz::RoleClusterPlot::sourceChanged, this, [this](int index) {
    if (last_ && index >= 0 && index < static_cast<int>(last_->roles.size()))
      setRoleSource(last_->roles[index].layer, last_->roles[index].head);
  });
  if (v_.probe) connect(v_.probe, &QLineEdit::returnPressed, this, [this] { setProbe(v_.probe->text()); });
  // The views show the selected run: a new session, another run, a run that starts training or
  // gets a run directory (Open run…) shows it again.
  connect(model_, &SessionModel::sessionReset, this, [this] {
    live_.reset();
    liveRun_ = 0;
    showSelectedRun();
  });
  connect(model_, &SessionModel::currentChanged, this, &SnapshotDocks::showSelectedRun);
  connect(model_, &SessionModel::designChanged, this, [this](quint64) {  // e.g. a lesson step's variant
    if (model_->count() > 0) v_.stableRank->setEmptyText(noStableRankText(model_->currentSpec()));
  });
  connect(model_, &SessionModel::runsChanged, this, [this] {
    // Also a rename (a run named by its design follows it): the views' texts name the run.
    if (model_->currentRun().id != shownRun_ || (!last_ && !model_->currentRun().runDir.isEmpty()) ||
        model_->currentRun().name != shownName_)
      showSelectedRun();
  });
  connect(model_, &SessionModel::trainingChanged, this, [this](quint64 runId) {
    if (runId != 0 && !model_->trainingResumed()) {  // a new run of this entry: nothing of the old one
      live_.reset();
      liveRun_ = runId;
    }
    trainerProbe_.clear();  // a trainer starts with the default probe
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

void SnapshotDocks::clearInspectionViews(const QString& why) {
  last_.reset();
  rankHistory_ = false;
  lastRoles_ = {};
  v_.stableRank->clear();
  v_.stableRank->setHeadsReference(0);
  v_.spectrum->setSpectra({});
  explain(why);
}

void SnapshotDocks::explain(const QString& why) {
  v_.maps->clear(why);
  v_.roles->showMessage(why);
}

void SnapshotDocks::showSelectedRun() {
  const int index = model_->current();
  if (index < 0 || index >= model_->count()) return;
  const RunEntry& run = model_->run(index);
  shownRun_ = run.id;
  shownName_ = run.name;
  if (v_.probe) v_.probe->setPlaceholderText(probeHint(run.config.task.name));
  v_.stableRank->setEmptyText(noStableRankText(model_->currentSpec()));
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
        else if (!QFileInfo::exists(run.runDir))
          explain(QString("The run folder of %1 is gone: %2 (deleted or moved), and its inspections with it")
                      .arg(run.name, run.runDir));
        else
          explain(QString("%1 kept no inspection (trained before Tensorscope kept them, or stopped "
                                       "before its first checkpoint)").arg(run.name));
      } catch (const std::exception& e) {
        explain(QString("The inspection of %1 is damaged: %2").arg(run.name, e.what()));
      }
    }
  }
  show(snap);
  applyProbe();
}

void SnapshotDocks::show(std::shared_ptr<const model_core::InspectionSnapshot> snap) {
  if (snap) drawSnapshot(*snap);
  last_ = snap;
  setHeaders();
  Q_EMIT inspected(shownRun_, snap);
}

void SnapshotDocks::note(const QString& text, bool error) {
  noteIsError_ = error && !text.isEmpty();
  if (!v_.probeNote) return;
  v_.probeNote->setText(text);
  v_.probeNote->setToolTip(text);
  v_.probeNote->setStyleSheet(noteIsError_ ? "color: #d0342c;" : "");
}

void SnapshotDocks::setProbe(const QString& probe) {
  probe_ = probe;
  if (v_.probe && v_.probe->text() != probe) v_.probe->setText(probe);
  note({});
  const int index = model_->current();
  // Back to the default on a stopped run: its kept inspection is the default probe's.
  if (probe_.isEmpty() && index >= 0 && index < model_->count() && !model_->isTraining(index)) showSelectedRun();
  else applyProbe();
}

void SnapshotDocks::applyProbe() {
  const int index = model_->current();
  if (index < 0 || index >= model_->count()) return;
  const RunEntry& run = model_->run(index);
  const quint64 ticket = ++probeTicket_;
  probeRunning_ = false;
  if (model_->isTraining(index)) {
    if (probe_ != trainerProbe_) {
      controller_->requestInspection(probe_);
      trainerProbe_ = probe_;
      note(QString("%1 computes the maps at its next step").arg(run.name));
    }
    return;
  }
  if (probe_.isEmpty()) return;  // the kept inspection (the default probe) is on show
  if (run.runDir.isEmpty()) {
    note(QString("%1 has no trained weights to probe: train it first").arg(run.name), true);
    return;
  }
  probeRunning_ = true;
  note(QString("probing %1 at its checkpoint…").arg(run.name));
  auto* watcher = new QFutureWatcher<ProbeResult>(this);
  connect(watcher, &QFutureWatcherBase::finished, this, [this, watcher, ticket, runId = run.id] {
    watcher->deleteLater();
    if (ticket != probeTicket_ || runId != model_->currentRun().id) return;  // another probe or run since
    probeRunning_ = false;
    const ProbeResult r = watcher->result();
    if (r.snapshot) {
      note({});
      show(r.snapshot);
    } else {
      note(r.error, true);
    }
    Q_EMIT probeFinished();
  });
  watcher->setFuture(QtConcurrent::run([dir = run.runDir.toStdString(), probe = probe_.toStdString()] {
    ProbeResult r;
    try {
      r.snapshot = std::make_shared<const model_core::InspectionSnapshot>(model_core::probeRun(dir, probe));
    } catch (const std::exception& e) {
      r.error = QString::fromStdString(e.what());
    }
    return r;
  }));
}

void SnapshotDocks::setHeaders() {
  const QString step = last_ ? stepHeader(shownName_, last_->step) : QString();
  setHeader_(v_.stableRank, rankHistory_ || (last_ && !last_->stable_ranks.empty()) ? shownName_ : QString());
  setHeader_(v_.spectrum, step);
  setHeader_(v_.maps, step);
  setHeader_(v_.roles, last_ && !last_->roles.empty() ? step : QString());
}

void SnapshotDocks::onInspection(std::shared_ptr<const model_core::InspectionSnapshot> snap) {
  if (!snap) return;
  live_ = snap;
  liveRun_ = model_->trainingRunId();
  if (liveRun_ != model_->currentRun().id) return;  // another run is on show
  if (!snap->stable_ranks.empty()) v_.stableRank->appendSnapshot(double(snap->step), snap->core_layers, snap->stable_ranks);
  if (!noteIsError_) note({});
  drawSnapshot(*snap);
  last_ = snap;
  setHeaders();
  Q_EMIT inspected(liveRun_, snap);
}

void SnapshotDocks::drawSnapshot(const model_core::InspectionSnapshot& snap) {
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
  v_.maps->setProbeName(QString::fromStdString(snap.probe));
  v_.maps->setMaps(maps, tokens, layers, step);
  drawRoles(&snap, v_.roles->k());
}

void SnapshotDocks::reclusterRoles(int k) { drawRoles(last_.get(), k); }

void SnapshotDocks::setRoleSource(int layer, int head) {
  if (roleChoice_ == std::make_pair(layer, head)) return;
  roleChoice_ = {layer, head};
  lastRoles_ = {};  // another head's picture: nothing to align with
  drawRoles(last_.get(), v_.roles->k());
}

void SnapshotDocks::drawRoles(const model_core::InspectionSnapshot* shown, int k) {
  if (!shown) return;  // the views say why they are empty
  if (shown->roles.empty() || shown->roles.front().vectors.rows() < 3) {
    v_.roles->setSources({}, -1);
    v_.roles->setCaption({});
    v_.roles->showMessage(QString("%1 has no role vectors: they appear for TP-attention models (variant tp).").arg(shownName_));
    return;
  }
  const auto& snap = *shown;
  // The chosen layer and head when this inspection has them, else head 0 of the last TP layer.
  QStringList names;
  int current = -1, fallback = 0;
  for (size_t i = 0; i < snap.roles.size(); ++i) {
    const auto& r = snap.roles[i];
    names << QString("layer %1 · head %2").arg(r.layer).arg(r.head);
    if (std::make_pair(r.layer, r.head) == roleChoice_) current = static_cast<int>(i);
    if (r.head == 0) fallback = static_cast<int>(i);
  }
  if (current < 0) {
    current = fallback;
    roleChoice_ = {snap.roles[current].layer, snap.roles[current].head};
    lastRoles_ = {};
  }
  v_.roles->setSources(names, current);
  const auto& roles = snap.roles[current].vectors;
  auto p = projectRoles(roles, k);
  alignRoleProjection(p, lastRoles_);  // the same probe: the picture turns and relabels smoothly
  lastRoles_ = p;
  QStringList tokens, contexts, labels;
  for (int i = 0; i < roles.rows(); ++i) {
    tokens << QString::fromStdString(snap.role_tokens[i]);
    contexts << QString::fromStdString(snap.role_contexts[i]);
    labels << QString::fromStdString(snap.role_labels[i]);
  }
  v_.roles->setPoints(p.xs, p.ys, tokens, contexts, labels);
  v_.roles->setClusters(p.clusters);
  v_.roles->setAxisTitles(QString("PC1 (%1%)").arg(100 * p.explainedPc1, 0, 'f', 1),
                          QString("PC2 (%1%)").arg(100 * p.explainedPc2, 0, 'f', 1));
  const QString probe = snap.role_probe.empty() ? QString("the probe examples") : QString::fromStdString(snap.role_probe);
  v_.roles->setCaption(QString("Role vectors of layer %1, head %2 · %3 tokens of %4")
                           .arg(roleChoice_.first)
                           .arg(roleChoice_.second)
                           .arg(roles.rows())
                           .arg(probe));
}

}  // namespace tensorscope::app
