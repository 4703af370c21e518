#include "gui/main_window.h"

#include <algorithm>

#include <QAction>
#include <QApplication>
#include <QCloseEvent>
#include <QDateTime>
#include <QDir>
#include <QDockWidget>
#include <QFileDialog>
#include <QFileInfo>
#include <QFontDatabase>
#include <QMenuBar>
#include <QMessageBox>
#include <QPlainTextEdit>
#include <QSettings>
#include <QStandardPaths>
#include <QStatusBar>
#include <QStyle>
#include <QStyleFactory>
#include <QTimer>

#include "cli/cli.h"
#include "diagram_view/diagram_view.h"
#include "gui/core_editor.h"
#include "gui/design_panel.h"
#include "gui/runs_panel.h"
#include "gui/spec_command.h"
#include "gui/training_controller.h"
#include "gui/training_panel.h"
#include "model_core/run_directory.h"
#include "model_core/runtime.h"
#include "spec/spec_json.h"
#include "spec/tensor_network.h"
#include "spec/validation.h"
#include "viz/attention_map_grid.h"
#include "viz/curves_plot.h"
#include "viz/role_cluster_plot.h"
#include "viz/spectrum_plot.h"
#include "viz/stable_rank_plot.h"

namespace tensorscope::app {
namespace {

QString autosavePath() {
  return QStandardPaths::writableLocation(QStandardPaths::AppDataLocation) + "/autosave.session.json";
}

}  // namespace

MainWindow::MainWindow(const Options& options, QWidget* parent) : QMainWindow(parent), options_(options) {
  setWindowTitle("Tensorscope");
  setObjectName("MainWindow");
  setDockNestingEnabled(true);
  controller_ = new TrainingController(this);
  buildDocks();
  buildMenus();
  connectTraining();
  const auto info = model_core::runtimeInfo();
  statusBar()->showMessage(QString("LibTorch %1 · %2 · %3 threads · %4")
                               .arg(QString::fromStdString(info.torch_version), QString::fromStdString(info.default_device))
                               .arg(info.intra_op_threads)
                               .arg(info.blas_is_openblas ? "OpenBLAS" : "reference BLAS (slow: install libopenblas0-openmp)"));
  resize(1600, 1000);

  Session start = defaultSession();
  if (options_.offerRecovery && QFileInfo::exists(autosavePath())) {
    QSettings settings;
    const auto ask = [this] {
      if (options_.askToRecover) return options_.askToRecover();
      return QMessageBox::question(this, "Restore session?",
                                   "Tensorscope did not close cleanly last time. Restore the autosaved session?") ==
             QMessageBox::Yes;
    };
    if (!settings.value("cleanExit", true).toBool() && ask()) {
      try {
        start = Session::load(autosavePath());
      } catch (const std::exception& e) {
        showError("Cannot restore the autosave", e.what());
      }
    }
  }
  QSettings().setValue("cleanExit", false);
  loadSession(std::move(start));
  if (options_.restoreLayout) restoreState(QSettings().value("windowState").toByteArray());

  autosaveTimer_ = new QTimer(this);
  autosaveTimer_->setInterval(60'000);
  connect(autosaveTimer_, &QTimer::timeout, this, &MainWindow::autosave);
  autosaveTimer_->start();
}

MainWindow::~MainWindow() = default;

QDockWidget* MainWindow::addDock(const QString& title, QWidget* content, Qt::DockWidgetArea area) {
  auto* dock = new QDockWidget(title, this);
  dock->setObjectName(title);
  dock->setWidget(content);
  addDockWidget(area, dock);
  return dock;
}

QList<QDockWidget*> MainWindow::docks() const { return findChildren<QDockWidget*>(); }

void MainWindow::buildDocks() {
  design_ = new DesignPanel;
  core_ = new CoreEditor;
  diagram_ = new diagram_view::DiagramView;
  specText_ = new QPlainTextEdit;
  specText_->setReadOnly(true);
  specText_->setLineWrapMode(QPlainTextEdit::NoWrap);
  specText_->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
  training_ = new TrainingPanel;
  runs_ = new RunsPanel;
  curves_ = new viz::CurvesPlot;
  curves_->setRightAxisSeries({"lr"});
  curves_->setExportName("curves");
  stableRank_ = new viz::StableRankPlot;
  stableRank_->setExportName("stable_rank");
  spectrum_ = new viz::SpectrumPlot;
  spectrum_->setExportName("spectrum");
  maps_ = new viz::AttentionMapGrid;
  maps_->setExportName("attention_maps");
  roles_ = new viz::RoleClusterPlot;
  roles_->setExportName("role_clusters");
  roles_->setK(4);

  auto* designDock = addDock("Design", design_, Qt::LeftDockWidgetArea);
  auto* runsDock = addDock("Runs", runs_, Qt::LeftDockWidgetArea);
  auto* trainingDock = addDock("Training", training_, Qt::LeftDockWidgetArea);
  tabifyDockWidget(designDock, trainingDock);
  designDock->raise();
  auto* diagramDock = addDock("Diagram", diagram_, Qt::RightDockWidgetArea);
  auto* coreDock = addDock("Core matrix C", core_, Qt::RightDockWidgetArea);
  splitDockWidget(diagramDock, coreDock, Qt::Horizontal);
  auto* specDock = addDock("Spec (JSON)", specText_, Qt::RightDockWidgetArea);
  tabifyDockWidget(diagramDock, specDock);
  QTimer::singleShot(0, diagramDock, &QDockWidget::raise);
  auto* curvesDock = addDock("Curves", curves_, Qt::BottomDockWidgetArea);
  auto* rankDock = addDock("Stable rank", stableRank_, Qt::BottomDockWidgetArea);
  auto* spectrumDock = addDock("Spectrum of C", spectrum_, Qt::BottomDockWidgetArea);
  tabifyDockWidget(rankDock, spectrumDock);
  rankDock->raise();
  auto* mapsDock = addDock("Attention maps", maps_, Qt::BottomDockWidgetArea);
  auto* rolesDock = addDock("Role clusters", roles_, Qt::BottomDockWidgetArea);
  tabifyDockWidget(mapsDock, rolesDock);
  mapsDock->raise();
  (void)runsDock;
  (void)curvesDock;
  // Sizes apply once the window has its geometry.
  QTimer::singleShot(0, this, [this, designDock, diagramDock, coreDock, curvesDock] {
    resizeDocks({designDock, diagramDock, coreDock}, {330, 560, 520}, Qt::Horizontal);
    resizeDocks({curvesDock}, {320}, Qt::Vertical);
    diagram_->fitToView();
  });

  connect(design_, &DesignPanel::specChanged, this, &MainWindow::onDesignEdited);
  connect(core_, &CoreEditor::coreEdited, this,
          [this](const spec::AttentionSpec& /*before*/, const spec::AttentionSpec& after, const QString& what, int stroke) {
            // A C shared by every layer stays shared; a layer with its own C (a fork of a trained
            // run) is edited alone.
            const auto& config = session_.runs[session_.current].config;
            if (config.model.attention.size() == 1) return pushDesign({after}, what, stroke);
            auto layers = layerDesigns(config);
            layers[static_cast<size_t>(currentLayer())] = after;
            pushDesign(std::move(layers), what, stroke);
          });
  connect(core_, &CoreEditor::layerChosen, this, [this](int layer) {
    coreLayer_ = layer;
    refreshDesignViews();
    if (session_.current == trainingRun_ && lastInspection_) showLearnedCoreOfLayer(*lastInspection_);
  });
  connect(core_, &CoreEditor::forkRequested, this, [this] {
    if (QMessageBox::question(this, "Edit C of a training run?",
                              "This run's C is being trained. Fork a new run from its latest checkpoint?\n\n"
                              "The fork starts with the learned C, which you can then edit, and with every other "
                              "learned weight. The original keeps training; start the fork when it is done "
                              "(one run trains at a time).") != QMessageBox::Yes)
      return;
    forkTrainingRun();
  });
  connect(diagram_, &diagram_view::DiagramView::coreSelected, this, [coreDock](const QString&) {
    coreDock->show();
    coreDock->raise();
  });
  connect(runs_, &RunsPanel::currentChanged, this, &MainWindow::selectRun);
  connect(runs_, &RunsPanel::overlayChanged, this, [this](int i, bool shown) {
    overlay_[i] = shown;
    if (!shown) curves_->removeRun(session_.runs[i].name);
    else if (!session_.runs[i].runDir.isEmpty()) loadMetricsFile(session_.runs[i].name, session_.runs[i].runDir);
  });
  connect(runs_, &RunsPanel::newRunRequested, this, [this] {
    addRun({QString("Run %1").arg(session_.runs.size() + 1), defaultRunConfig(spec::makeSpecPreset("mhsa")), {}, {}},
           "not trained");
  });
  connect(runs_, &RunsPanel::duplicateRequested, this, [this] {
    RunEntry copy = session_.runs[session_.current];
    copy.name += " copy";
    copy.runDir.clear();
    addRun(std::move(copy), "not trained");
  });
  connect(runs_, &RunsPanel::removeRequested, this, [this](int i) {
    if (session_.runs.size() <= 1 || i < 0 || i == trainingRun_) {
      showError("Cannot remove this run", i == trainingRun_ ? "It is training; stop it first." : "A session keeps at least one run.");
      return;
    }
    curves_->removeRun(session_.runs[i].name);
    session_.runs.erase(session_.runs.begin() + i);
    statuses_.removeAt(i);
    overlay_.removeAt(i);
    if (trainingRun_ > i) --trainingRun_;
    selectRun(std::min<int>(i, static_cast<int>(session_.runs.size()) - 1));
  });
  connect(runs_, &RunsPanel::openRunDirectoryRequested, this, [this] {
    const QString dir = QFileDialog::getExistingDirectory(this, "Open a run directory");
    if (!dir.isEmpty()) openRunDirectory(dir);
  });
  connect(training_, &TrainingPanel::settingsChanged, this, [this] {
    training_->applyTo(session_.runs[session_.current].config);
    refreshDesignViews();
  });
  connect(roles_, &viz::RoleClusterPlot::kChanged, this, &MainWindow::reclusterRoles);
}

void MainWindow::buildMenus() {
  QMenu* file = menuBar()->addMenu("&File");
  auto* open = file->addAction("&Open session…", this, [this] {
    const QString p = QFileDialog::getOpenFileName(this, "Open session", {}, "Tensorscope session (*.json);;All files (*)");
    if (!p.isEmpty()) openSession(p);
  });
  open->setShortcut(QKeySequence::Open);
  QMenu* recent = file->addMenu("Open &recent");
  connect(recent, &QMenu::aboutToShow, this, [this, recent] {
    recent->clear();
    const auto list = QSettings().value("recentSessions").toStringList();
    if (list.isEmpty()) recent->addAction("(none yet)")->setEnabled(false);
    for (const auto& p : list) recent->addAction(p, this, [this, p] { openSession(p); });
  });
  QMenu* examples = file->addMenu("Open &example session");
  for (const auto& p : exampleSessionPaths())
    examples->addAction(QFileInfo(p).baseName(), this, [this, p] { openSession(p); });
  auto* save = file->addAction("&Save session", this, [this] {
    QString p = sessionPath_;
    if (p.isEmpty()) p = QFileDialog::getSaveFileName(this, "Save session", "session.json", "Tensorscope session (*.json)");
    if (!p.isEmpty()) saveSession(p);
  });
  save->setShortcut(QKeySequence::Save);
  auto* saveAs = file->addAction("Save session &as…", this, [this] {
    const QString p = QFileDialog::getSaveFileName(this, "Save session as", "session.json", "Tensorscope session (*.json)");
    if (!p.isEmpty()) saveSession(p);
  });
  saveAs->setShortcut(QKeySequence::SaveAs);
  file->addAction("Open &run directory…", this, [this] {
    const QString dir = QFileDialog::getExistingDirectory(this, "Open a run directory");
    if (!dir.isEmpty()) openRunDirectory(dir);
  });
  file->addSeparator();
  auto* figures = file->addAction("Export &figures…", this, [this] {
    const QString dir = QFileDialog::getExistingDirectory(this, "Export every view to a folder");
    if (!dir.isEmpty()) exportFigures(dir);
  });
  figures->setShortcut(QKeySequence("Ctrl+E"));
  file->addAction("Export &data (CSV)…", this, [this] {
    const QString dir = QFileDialog::getExistingDirectory(this, "Export the data behind the plots");
    if (dir.isEmpty()) return;
    QStringList failures;
    const std::pair<viz::PlotWidget*, const char*> csvs[] = {
        {curves_, "curves.csv"}, {stableRank_, "stable_rank.csv"}, {spectrum_, "spectrum.csv"}};
    for (const auto& [w, name] : csvs)
      if (!w->exportCsv(dir + "/" + name)) failures << QString(name) + ": " + w->exportError();
    if (!failures.isEmpty()) showError("Export data", "Could not write into " + dir + ":\n" + failures.join('\n'));
    else statusBar()->showMessage("Wrote curves.csv, stable_rank.csv, spectrum.csv to " + dir, 5000);
  });
  file->addAction("Export &model (PyTorch)…", this, [this] {
    const auto& run = session_.runs[session_.current];
    if (run.runDir.isEmpty()) {
      showError("Export model", "Train this run first: it has no checkpoint yet.");
      return;
    }
    const QString dir = QFileDialog::getExistingDirectory(this, "Export model.py, model.safetensors and config.json to");
    if (dir.isEmpty()) return;
    try {
      model_core::exportPyTorch(run.runDir.toStdString(), dir.toStdString());
      statusBar()->showMessage("Exported the model to " + dir, 5000);
    } catch (const std::exception& e) {
      showError("Export model", e.what());
    }
  });
  file->addSeparator();
  file->addAction("&Quit", QKeySequence::Quit, this, &QWidget::close);

  QMenu* edit = menuBar()->addMenu("&Edit");
  auto* undo = undo_.createUndoAction(this, "&Undo");
  undo->setShortcut(QKeySequence::Undo);
  auto* redo = undo_.createRedoAction(this, "&Redo");
  redo->setShortcuts({QKeySequence("Ctrl+Shift+Z"), QKeySequence::Redo});
  edit->addAction(undo);
  edit->addAction(redo);

  QMenu* train = menuBar()->addMenu("&Training");
  train->addAction("&Train current run", QKeySequence(Qt::Key_F5), this, [this] { startTraining(); });
  train->addAction("&Pause / resume", QKeySequence(Qt::Key_F6), this, [this] {
    if (controller_->paused()) controller_->resume();
    else controller_->pause();
    training_->setState(controller_->running(), controller_->paused());
  });
  train->addAction("&Single step", QKeySequence(Qt::Key_F7), controller_, &TrainingController::step);
  train->addAction("&Stop", QKeySequence("Shift+F5"), controller_, &TrainingController::stop);
  connect(training_, &TrainingPanel::startRequested, this, [this] { startTraining(); });
  connect(training_, &TrainingPanel::pauseRequested, this, [this] {
    controller_->pause();
    training_->setState(true, true);
  });
  connect(training_, &TrainingPanel::resumeRequested, this, [this] {
    controller_->resume();
    training_->setState(true, false);
  });
  connect(training_, &TrainingPanel::stepRequested, controller_, &TrainingController::step);
  connect(training_, &TrainingPanel::stopRequested, controller_, &TrainingController::stop);

  QMenu* view = menuBar()->addMenu("&View");
  for (QDockWidget* d : docks()) view->addAction(d->toggleViewAction());
  view->addSeparator();
  auto* dark = view->addAction("&Dark theme");
  dark->setCheckable(true);
  dark->setShortcut(QKeySequence("Ctrl+Shift+D"));
  connect(dark, &QAction::toggled, this, &MainWindow::setDarkTheme);

  QMenu* help = menuBar()->addMenu("&Help");
  help->addAction("&Keyboard shortcuts", QKeySequence::HelpContents, this, [this] {
    QMessageBox::information(this, "Keyboard shortcuts",
                             "<table>"
                             "<tr><td><b>F5</b></td><td>train the current run</td></tr>"
                             "<tr><td><b>F6</b></td><td>pause / resume</td></tr>"
                             "<tr><td><b>F7</b></td><td>one step while paused</td></tr>"
                             "<tr><td><b>Shift+F5</b></td><td>stop (keeps the checkpoint)</td></tr>"
                             "<tr><td><b>Ctrl+Z / Ctrl+Shift+Z</b></td><td>undo / redo a design edit</td></tr>"
                             "<tr><td><b>Ctrl+O / Ctrl+S / Ctrl+Shift+S</b></td><td>open / save / save session as</td></tr>"
                             "<tr><td><b>Ctrl+E</b></td><td>export every view as figures</td></tr>"
                             "<tr><td><b>Ctrl+Shift+D</b></td><td>dark theme</td></tr>"
                             "<tr><td><b>Ctrl + wheel, drag</b></td><td>zoom and pan the diagram</td></tr>"
                             "<tr><td><b>Right click</b></td><td>export a plot (PNG, SVG, PDF, CSV)</td></tr>"
                             "</table>");
  });
  help->addAction("&About Tensorscope", this, [this] {
    QMessageBox::about(this, "About Tensorscope",
                       "<b>Tensorscope</b> explores attention mechanisms as tensor networks.<pre>" +
                           QString::fromStdString(versionText()).toHtmlEscaped() + "</pre>");
  });
}

void MainWindow::loadSession(Session s) {
  if (controller_->running()) controller_->stop(), controller_->waitForFinished();
  curves_->clear();
  stableRank_->clear();
  session_ = std::move(s);
  statuses_.clear();
  overlay_.clear();
  for (auto& r : session_.runs) {
    r.id = nextRunId_++;
    statuses_ << (r.runDir.isEmpty() ? "not trained" : "trained: " + r.runDir);
    overlay_ << true;
    if (!r.runDir.isEmpty()) loadMetricsFile(r.name, r.runDir);
  }
  undo_.clear();
  selectRun(session_.current);
  setDarkTheme(session_.theme == "dark");
}

void MainWindow::selectRun(int index) {
  if (index < 0 || index >= static_cast<int>(session_.runs.size())) return;
  session_.current = index;
  training_->setConfig(session_.runs[index].config);
  refreshRuns();
  refreshDesignViews();
  core_->setEditable(index != trainingRun_);
  design_->setEditable(index != trainingRun_);
}

void MainWindow::addRun(RunEntry entry, const QString& status) {
  entry.id = nextRunId_++;
  session_.runs.push_back(std::move(entry));
  statuses_ << status;
  overlay_ << true;
  selectRun(static_cast<int>(session_.runs.size()) - 1);
}

void MainWindow::refreshRuns() {
  QStringList names;
  for (const auto& r : session_.runs) names << r.name;
  runs_->setRuns(names, statuses_, overlay_, session_.current);
}

std::vector<spec::AttentionSpec> MainWindow::layerDesigns(const model_core::RunConfig& config) {
  std::vector<spec::AttentionSpec> out;
  const int n = std::max(1, config.model.layers);
  if (config.model.attention.size() != 1 && static_cast<int>(config.model.attention.size()) != n)
    return config.model.attention;  // inconsistent (validation names it): shown as it is
  for (int l = 0; l < n; ++l) out.push_back(model_core::layerSpec(config.model, l));
  return out;
}

int MainWindow::currentLayer() const {
  const auto& attention = session_.runs[session_.current].config.model.attention;
  const int layers = std::max(1, session_.runs[session_.current].config.model.layers);
  const int count = attention.size() == 1 ? layers : static_cast<int>(attention.size());
  return std::clamp(coreLayer_, 0, std::max(0, count - 1));
}

spec::AttentionSpec MainWindow::currentSpec() const {
  const auto& attention = session_.runs[session_.current].config.model.attention;
  return attention.size() == 1 ? attention.front() : attention.at(static_cast<size_t>(currentLayer()));
}

void MainWindow::onDesignEdited(const spec::AttentionSpec& s) { editDesign(s, "edit design"); }

void MainWindow::editDesign(const spec::AttentionSpec& after, const QString& what) {
  // A Design-dock edit applies to every layer. A layer keeps its own C unless the edit changed the
  // C on show (a preset chosen, or re-expanded at new sizes): then every layer takes the new one.
  const auto shown = currentSpec();
  auto layers = layerDesigns(session_.runs[session_.current].config);
  for (auto& layer : layers) {
    auto core = layer.core;
    layer = after;
    if (after.core == shown.core && spec::hasCore(after.variant)) layer.core = core;
  }
  pushDesign(std::move(layers), what);
}

void MainWindow::pushDesign(std::vector<spec::AttentionSpec> after, const QString& what, int stroke) {
  // One shared spec when every layer has the same design (what presets and plain edits give).
  if (std::all_of(after.begin(), after.end(), [&](const spec::AttentionSpec& l) { return l == after.front(); }))
    after.resize(1);
  const auto& run = session_.runs[session_.current];
  if (after == run.config.model.attention) return;
  undo_.push(new SpecCommand(this, run.id, run.config.model.attention, std::move(after), what, stroke));
}

bool MainWindow::applySpecToRun(quint64 runId, const std::vector<spec::AttentionSpec>& attention) {
  const auto it = std::find_if(session_.runs.begin(), session_.runs.end(), [&](const RunEntry& r) { return r.id == runId; });
  if (it == session_.runs.end()) {
    statusBar()->showMessage("The run this edit belonged to was removed: nothing changed.", 8000);
    return false;
  }
  const int index = static_cast<int>(it - session_.runs.begin());
  if (index == trainingRun_) {
    statusBar()->showMessage(it->name + " trains with this design: the edit stays (edit C to fork the run).", 8000);
    return false;
  }
  if (index != session_.current) selectRun(index);
  auto& config = session_.runs[session_.current].config;
  config.model.attention = attention;
  config.model.d_model = attention.front().sizes.F;
  refreshDesignViews();
  return true;
}

void MainWindow::refreshDesignViews() {
  const auto s = currentSpec();
  const auto& run = session_.runs[session_.current];
  core_->setLayers(run.config.model.attention.size() == 1 ? std::max(1, run.config.model.layers)
                                                          : static_cast<int>(run.config.model.attention.size()),
                   currentLayer(), run.config.model.attention.size() > 1);
  design_->setSpec(s);
  if (session_.current != trainingRun_) core_->setSpec(s);
  specText_->setPlainText(QString::fromStdString(spec::toJson(s)));
  if (spec::validate(s).empty()) {
    try {
      diagram_->setNetwork(spec::buildTensorNetwork(s, std::min(s.sizes.seq_len, 64)));
    } catch (const std::exception& e) {
      statusBar()->showMessage(QString("diagram: ") + e.what(), 5000);
    }
  }
  setWindowTitle(QString("Tensorscope — %1%2").arg(sessionPath_.isEmpty() ? "unsaved session" : QFileInfo(sessionPath_).fileName(),
                                                   undo_.isClean() ? "" : " *"));
}

bool MainWindow::openSession(const QString& path) {
  try {
    auto s = Session::load(path);
    sessionPath_ = path;
    loadSession(std::move(s));
    auto recent = QSettings().value("recentSessions").toStringList();
    recent.removeAll(path);
    recent.prepend(path);
    QSettings().setValue("recentSessions", recent.mid(0, 8));
    statusBar()->showMessage("Opened " + path, 5000);
    return true;
  } catch (const std::exception& e) {
    showError("Cannot open session", QString::fromUtf8(e.what()));
    return false;
  }
}

bool MainWindow::saveSession(const QString& path) {
  try {
    session_.windowState = saveState();
    session_.theme = dark_ ? "dark" : "light";
    session_.save(path);
    sessionPath_ = path;
    undo_.setClean();
    refreshDesignViews();
    statusBar()->showMessage("Saved " + path, 5000);
    return true;
  } catch (const std::exception& e) {
    showError("Cannot save session", QString::fromUtf8(e.what()));
    return false;
  }
}

void MainWindow::autosave() {
  try {
    QDir().mkpath(QFileInfo(autosavePath()).path());
    session_.save(autosavePath());
  } catch (const std::exception& e) {
    statusBar()->showMessage(QString("autosave failed: ") + e.what(), 10000);
  }
}

void MainWindow::closeEvent(QCloseEvent* event) {
  if (controller_->running()) {
    controller_->stop();
    controller_->waitForFinished();  // the run checkpoints before the window goes
  }
  QSettings settings;
  settings.setValue("windowState", saveState());
  settings.setValue("cleanExit", true);
  autosave();
  event->accept();
}

void MainWindow::showError(const QString& title, const QString& text) {
  statusBar()->showMessage(title + ": " + text, 10000);
  if (QApplication::platformName() != "offscreen") QMessageBox::warning(this, title, text);
}

void MainWindow::setDarkTheme(bool dark) {
  dark_ = dark;
  // One Fusion style for the application (setStyle owns it); creating one per call leaked a style
  // each time (the palette's source was never deleted).
  if (QApplication::style()->name().compare("fusion", Qt::CaseInsensitive) != 0)
    QApplication::setStyle(QStyleFactory::create("Fusion"));
  QPalette p = QApplication::style()->standardPalette();
  if (dark) {
    p.setColor(QPalette::Window, QColor(45, 45, 48));
    p.setColor(QPalette::WindowText, QColor(230, 230, 230));
    p.setColor(QPalette::Base, QColor(30, 30, 32));
    p.setColor(QPalette::AlternateBase, QColor(45, 45, 48));
    p.setColor(QPalette::Text, QColor(230, 230, 230));
    p.setColor(QPalette::Button, QColor(55, 55, 58));
    p.setColor(QPalette::ButtonText, QColor(230, 230, 230));
    p.setColor(QPalette::Highlight, QColor(66, 133, 244));
  }
  QApplication::setPalette(p);
  for (viz::PlotWidget* w : std::initializer_list<viz::PlotWidget*>{curves_, stableRank_, spectrum_, maps_, roles_})
    w->setDarkTheme(dark);
  diagram_->setTheme(dark ? diagram_view::Theme::Dark : diagram_view::Theme::Light);
}

}  // namespace tensorscope::app
