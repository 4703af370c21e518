// MainWindow: training runs and the live views fed by the training controller; figure export.
#include <algorithm>

#include <QDateTime>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QStatusBar>
#include <QTextStream>
#include <nlohmann/json.hpp>

#include "diagram_view/diagram_export.h"
#include "diagram_view/diagram_view.h"
#include "gui/image_file.h"
#include "gui/core_editor.h"
#include "gui/design_panel.h"
#include "gui/main_window.h"
#include "gui/run_features.h"
#include "gui/training_controller.h"
#include "gui/training_panel.h"
#include "model_core/analysis.h"
#include "model_core/run_directory.h"
#include "model_core/run_files.h"
#include "spec/tensor_network.h"
#include "viz/attention_map_grid.h"
#include "viz/curves_plot.h"
#include "viz/role_cluster_plot.h"
#include "viz/spectrum_plot.h"
#include "viz/stable_rank_plot.h"

namespace tensorscope::app {

bool MainWindow::startTraining(qint64 steps) {
  if (controller_->running()) {
    showError("Training", "A run is already training; stop it first.");
    return false;
  }
  auto& run = session_.runs[session_.current];
  training_->applyTo(run.config);
  const auto problems = model_core::validateRunConfig(run.config);
  if (!problems.empty()) {
    showError("Cannot train this design", QString::fromStdString(problems.front()));
    return false;
  }
  const QString dir = makeRunDirectory(runsFolderFor(sessionPath_), run.name, QDateTime::currentDateTime());
  if (dir.isEmpty()) {
    showError("Training", "Cannot create a run directory for " + run.name + " (check that the session's folder is writable)");
    return false;
  }
  curves_->removeRun(run.name);
  stableRank_->clear();
  trainingRun_ = session_.current;
  trainingSpec_ = run.config.model.attention.front();
  run.runDir = dir;
  statuses_[trainingRun_] = "training…";
  refreshRuns();
  core_->setEditable(false);
  design_->setEditable(false);
  training_->setState(true, false);
  model_core::WarmStart warm;
  if (!run.initFrom.isEmpty()) warm.checkpoint_dir = run.initFrom.toStdString();  // a fork: cores from its design
  return controller_->start(run.config, dir, false, steps, warm);
}

bool MainWindow::forkTrainingRun() {
  if (trainingRun_ < 0 || !controller_->running()) {
    showError("Fork", "No run is training; edit the design directly.");
    return false;
  }
  // Fork from the state shown now: the trainer writes a checkpoint at its next step boundary
  // (also while paused) and the fork is made when it lands (forkFromCheckpoint).
  forkParent_ = trainingRun_;
  controller_->requestCheckpoint();
  statusBar()->showMessage("Writing a checkpoint of " + session_.runs[forkParent_].name + " to fork from…", 10000);
  return true;
}

bool MainWindow::forkFromCheckpoint() {
  const int parentIndex = forkParent_;
  forkParent_ = -1;
  if (parentIndex < 0 || parentIndex >= static_cast<int>(session_.runs.size())) return false;
  const RunEntry& parent = session_.runs[parentIndex];
  const QString snapshot = makeRunDirectory(runsFolderFor(sessionPath_), parent.name + "-fork-start", QDateTime::currentDateTime());
  if (snapshot.isEmpty()) {
    showError("Cannot fork the run", "cannot create a directory for the fork's starting checkpoint");
    return false;
  }
  try {
    // One consistent copy of the latest checkpoint: the parent keeps training and overwriting it.
    const auto step = model_core::snapshotCheckpoint(parent.runDir.toStdString(), snapshot.toStdString());
    QStringList taken;
    for (const auto& r : session_.runs) taken << r.name;
    RunEntry fork = forkEntry(parent, snapshot, step, taken);
    const QString parentName = parent.name;
    addRun(std::move(fork), QString("fork of %1 at step %2: not trained").arg(parentName).arg(step));
    statusBar()->showMessage(QString("Forked %1 at step %2: edit C of the fork; its other weights start from that "
                                     "checkpoint when it trains.").arg(parentName).arg(step), 10000);
    return true;
  } catch (const std::exception& e) {
    showError("Cannot fork the run", e.what());
    return false;
  }
}

void MainWindow::connectTraining() {
  connect(controller_, &TrainingController::started, training_, &TrainingPanel::onStarted);
  connect(controller_, &TrainingController::metrics, this, [this](const QVector<model_core::MetricsSnapshot>& batch) {
    if (trainingRun_ < 0 || batch.isEmpty()) return;
    const QString run = session_.runs[trainingRun_].name;
    std::vector<double> steps, loss, lr;
    for (const auto& m : batch) {
      steps.push_back(double(m.step));
      loss.push_back(m.loss);
      lr.push_back(m.lr);
    }
    curves_->appendPoints("train loss", steps, loss, run);
    curves_->appendPoints("lr", steps, lr, run);
    training_->onMetrics(batch.back());
  });
  connect(controller_, &TrainingController::evaluated, this, [this](const model_core::EvalSnapshot& e) {
    if (trainingRun_ < 0) return;
    const QString run = session_.runs[trainingRun_].name;
    const QString split = QString::fromStdString(e.split);
    curves_->appendPoint("eval loss (" + split + ")", double(e.step), e.loss, run);
    if (e.exact_match >= 0) curves_->appendPoint("exact match (" + split + ")", double(e.step), e.exact_match, run);
    else curves_->appendPoint("accuracy (" + split + ")", double(e.step), e.accuracy, run);
  });
  connect(controller_, &TrainingController::inspected, this, &MainWindow::onInspection);
  connect(controller_, &TrainingController::message, this, [this](const QString& m) { statusBar()->showMessage(m, 15000); });
  connect(controller_, &TrainingController::checkpointed, this, [this](qint64) {
    if (forkParent_ >= 0) forkFromCheckpoint();
  });
  connect(controller_, &TrainingController::finished, this, [this](const model_core::TrainResult& r) {
    if (forkParent_ >= 0) forkFromCheckpoint();  // e.g. a diverged run: its last good checkpoint
    if (trainingRun_ >= 0) statuses_[trainingRun_] = QString::fromStdString(r.message);
    training_->onFinished(QString::fromStdString(r.message));
    if (r.diverged) showError("Training diverged", QString::fromStdString(r.message));
    trainingRun_ = -1;
    training_->setState(false, false);
    core_->setEditable(true);
    design_->setEditable(true);
    refreshRuns();
    refreshDesignViews();
  });
  connect(controller_, &TrainingController::failed, this, [this](const QString& reason) {
    if (trainingRun_ >= 0) statuses_[trainingRun_] = "failed: " + reason;
    trainingRun_ = -1;
    training_->setState(false, false);
    training_->onFinished("Failed: " + reason);
    core_->setEditable(true);
    design_->setEditable(true);
    refreshRuns();
    showError("Training failed", reason);
  });
}

void MainWindow::showLearnedCoreOfLayer(const model_core::InspectionSnapshot& snap) {
  // cores[i] belongs to layer core_layers[i] (layers without a core have none).
  for (size_t i = 0; i < snap.cores.size() && i < snap.core_layers.size(); ++i)
    if (snap.core_layers[i] == currentLayer()) {
      core_->showLearnedCore(snap.cores[i].values, snap.cores[i].rows(), snap.step);
      return;
    }
}

void MainWindow::onInspection(std::shared_ptr<const model_core::InspectionSnapshot> snap) {
  if (!snap) return;
  lastInspection_ = snap;
  const double step = double(snap->step);
  if (!snap->stable_ranks.empty()) {
    stableRank_->appendSnapshot(step, snap->core_layers, snap->stable_ranks);
    std::vector<viz::CoreSpectrum> spectra;
    for (size_t i = 0; i < snap->core_layers.size(); ++i)
      spectra.push_back({snap->core_layers[i], snap->spectra[i], snap->stable_ranks[i]});
    spectrum_->setSpectra(spectra, step);
    stableRank_->setHeadsReference(trainingSpec_.sizes.H);  // the trained design's H, not the selected run's
    spectrum_->setHeads(trainingSpec_.sizes.H);
    if (trainingRun_ == session_.current) showLearnedCoreOfLayer(*snap);
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
  maps_->setGroupSize(trainingSpec_.core ? std::max(1, trainingSpec_.sizes.D) : 1);
  maps_->setMaps(maps, tokens, layers, step);
  if (snap->roles.rows() > 0) reclusterRoles(roles_->k());
}

void MainWindow::reclusterRoles(int k) {
  if (!lastInspection_ || lastInspection_->roles.rows() < 3) {
    roles_->showMessage("Role vectors appear here while a TP-attention model trains (variant tp).");
    return;
  }
  const auto& snap = *lastInspection_;
  const auto p = projectRoles(snap.roles, k);
  QStringList tokens, contexts, labels;
  for (int i = 0; i < snap.roles.rows(); ++i) {
    tokens << QString::fromStdString(snap.role_tokens[i]);
    contexts << QString::fromStdString(snap.role_contexts[i]);
    labels << QString::fromStdString(snap.role_labels[i]);
  }
  roles_->setPoints(p.xs, p.ys, tokens, contexts, labels);
  roles_->setClusters(p.clusters);
  roles_->setAxisTitles(QString("PC1 (%1%)").arg(100 * p.explainedPc1, 0, 'f', 1),
                        QString("PC2 (%1%)").arg(100 * p.explainedPc2, 0, 'f', 1));
}

void MainWindow::loadMetricsFile(const QString& runName, const QString& dir) {
  const auto curves = readMetricsCurves(dir.toStdString());
  if (curves.damaged > 0)
    statusBar()->showMessage(QString("skipped %1 damaged line(s) of %2/metrics.jsonl (line %3: %4)")
                                 .arg(curves.damaged)
                                 .arg(dir)
                                 .arg(curves.firstDamaged)
                                 .arg(QString::fromStdString(curves.firstReason)),
                             8000);
  for (const auto& [name, s] : curves.series) curves_->setSeries(QString::fromStdString(name), s.steps, s.values, runName);
}

bool MainWindow::openRunDirectory(const QString& dir) {
  try {
    auto entry = runEntryFromDirectory(dir);
    entry.id = nextRunId_++;
    session_.runs.push_back(entry);
    statuses_ << "opened: " + entry.runDir;
    overlay_ << true;
    loadMetricsFile(entry.name, entry.runDir);
    selectRun(static_cast<int>(session_.runs.size()) - 1);
    return true;
  } catch (const std::exception& e) {
    showError("Cannot open run directory", dir + ": " + QString::fromUtf8(e.what()));
    return false;
  }
}

bool MainWindow::exportFigures(const QString& dir) {
  if (!QDir().mkpath(dir)) {
    showError("Export figures", "Cannot create " + dir);
    return false;
  }
  // Every file is written atomically: one that fails leaves no empty or truncated file (and a
  // previous export of it intact); the reasons are listed together at the end.
  QStringList failures;
  const auto note = [&](bool ok, const QString& file, const QString& why) {
    if (!ok) failures << file + ": " + why;
  };
  const std::pair<viz::PlotWidget*, const char*> views[] = {
      {curves_, "curves"}, {stableRank_, "stable_rank"}, {spectrum_, "spectrum"}, {maps_, "attention_maps"}, {roles_, "role_clusters"}};
  for (const auto& [w, name] : views) {
    const QString stem = dir + "/" + name;
    note(w->exportPng(stem + ".png", 300), stem + ".png", w->exportError());
    note(w->exportSvg(stem + ".svg"), stem + ".svg", w->exportError());
    note(w->exportPdf(stem + ".pdf"), stem + ".pdf", w->exportError());
  }
  try {
    savePngAtomically(core_->grab().toImage(), dir + "/core_matrix.png");
  } catch (const std::exception& e) {
    note(false, dir + "/core_matrix.png", QString::fromUtf8(e.what()));
  }
  try {
    const auto net = spec::buildTensorNetwork(currentSpec(), std::min(currentSpec().sizes.seq_len, 64));
    diagram_view::ExportOptions opt;
    opt.diagram.theme = dark_ ? diagram_view::Theme::Dark : diagram_view::Theme::Light;
    for (auto f : {diagram_view::ExportFormat::Svg, diagram_view::ExportFormat::Pdf, diagram_view::ExportFormat::Png,
                   diagram_view::ExportFormat::Tikz, diagram_view::ExportFormat::Dot}) {
      const QString path = dir + "/diagram" + diagram_view::exportExtension(f);
      try {
        diagram_view::exportDiagram(net, f, path, opt);
      } catch (const std::exception& e) {
        note(false, path, QString::fromUtf8(e.what()));
      }
    }
  } catch (const std::exception& e) {
    note(false, dir + "/diagram.*", QString::fromUtf8(e.what()));
  }
  if (!failures.isEmpty()) {
    showError("Export figures", QString("%1 of 21 files could not be written (the others were):\n%2")
                                    .arg(failures.size())
                                    .arg(failures.join('\n')));
    statusBar()->showMessage("Some figures could not be written to " + dir, 8000);
    return false;
  }
  statusBar()->showMessage("Exported every view to " + dir, 8000);
  return true;
}

}  // namespace tensorscope::app
