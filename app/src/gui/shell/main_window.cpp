#include "gui/shell/main_window.h"

#include <QApplication>
#include <QCloseEvent>
#include <QDir>
#include <QDockWidget>
#include <QFileDialog>
#include <QFileInfo>
#include <QFontDatabase>
#include <QHBoxLayout>
#include <QKeyEvent>
#include <QLabel>
#include <QLineEdit>
#include <QRegularExpression>
#include <QStandardPaths>
#include <QAbstractSpinBox>
#include <QMenuBar>
#include <QMessageBox>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QScreen>
#include <QScrollArea>
#include <algorithm>
#include <QSettings>
#include <QStatusBar>
#include <QTimer>
#include <QVBoxLayout>

#include "diagram_view/diagram_view.h"
#include "gui/shell/app_theme.h"
#include "gui/design/core_editor.h"
#include "gui/design/design_docks.h"
#include "gui/design/design_panel.h"
#include "gui/shell/dock_layouts.h"
#include "gui/experiments/experiments_panel.h"
#include "gui/figures/figure_dialog.h"
#include "gui/figures/figure_export.h"
#include "gui/training/inspection_views.h"
#include "gui/training/live_views.h"
#include "gui/shell/main_menus.h"
#include "gui/training/run_features.h"
#include "gui/training/runs_panel.h"
#include "gui/shell/session_files.h"
#include "gui/document/session_model.h"
#include "gui/teaching/bottleneck_lab.h"
#include "gui/teaching/stable_rank_lab.h"
#include "gui/teaching/lesson_panel.h"
#include "gui/experiments/sweep_dialog.h"
#include "gui/teaching/teaching_views.h"
#include "gui/teaching/tensor_inspector.h"
#include "gui/training/training_controller.h"
#include "gui/training/training_driver.h"
#include "gui/training/training_panel.h"
#include "model_core/runtime.h"
#include "model_core/snapshots.h"
#include "spec/core_spec.h"
#include "spec/validation.h"
#include "viz/attention_map_grid.h"
#include "viz/curves_plot.h"
#include "viz/role_cluster_plot.h"
#include "viz/spectrum_plot.h"
#include "viz/stable_rank_plot.h"

namespace tensorscope::app {

MainWindow::MainWindow(const Options& options, QWidget* parent) : QMainWindow(parent), options_(options) {
  setWindowTitle("Tensorscope");
  setObjectName("MainWindow");
  setDockNestingEnabled(true);
  model_ = new SessionModel(this);
  buildDocks();
  driver_ = new TrainingDriver(model_, trainingPanel_, this);
  driver_->setHistoryQuestion(options_.askHistory ? options_.askHistory : [this](const QString& run, qint64 step) {
    if (QApplication::platformName() == "offscreen") return TrainingDriver::History::Resume;
    QMessageBox box(QMessageBox::Question, "Train " + run + " again?",
                    QString("%1 has trained to step %2. Resume from there, or train it again from step 0 in a new "
                            "run directory (the old one and its curves stay on disk)?").arg(run).arg(step),
                    QMessageBox::Cancel, this);
    auto* resume = box.addButton(QString("Resume from step %1").arg(step), QMessageBox::AcceptRole);
    auto* again = box.addButton("Train again from step 0", QMessageBox::DestructiveRole);
    box.setDefaultButton(resume);
    box.exec();
    const QAbstractButton* clicked = box.clickedButton();
    return clicked == resume ? TrainingDriver::History::Resume
           : clicked == again ? TrainingDriver::History::Restart
                      : TrainingDriver::History::Cancel;
  });
  designDocks_ = new DesignDocks(model_, design_, core_, specText_, diagram_, this);
  files_ = new SessionFiles(this, model_, driver_, {options_.askToRecover, options_.askToSave}, [this] { return dark_; }, this);
  live_ = new LiveViews(model_, driver_->controller(), curves_, this);
  // A view's header is its dock's title: "Attention maps · Run 2 · step 400" (the object name
  // keeps the bare title, which layouts and demo scripts find docks by).
  const auto setHeader = [](QWidget* view, const QString& header) {
    QWidget* w = view;
    while (w && !qobject_cast<QDockWidget*>(w)) w = w->parentWidget();
    auto* dock = qobject_cast<QDockWidget*>(w);
    if (dock) dock->setWindowTitle(header.isEmpty() ? dock->objectName() : dock->objectName() + " · " + header);
  };
  inspection_ = new InspectionViews(model_, driver_->controller(),
                                    {stableRank_, spectrum_, maps_, roles_, probeEdit_, probeNote_}, setHeader, this);
  connect(inspection_, &InspectionViews::inspected, designDocks_, &DesignDocks::showInspection);
  teaching_ = new TeachingViews(model_, driver_->controller(), inspection_, diagram_, inspector_, this);
  presenter_ = new PresenterMode(this, inspector_, diagram_, this);
  presenter_->setKeepLesson([this] { return lessonPanel_->step() != nullptr; });
  // Lessons and labs.
  QString lessonProblems;
  lessonPanel_->setLessons(shippedLessons(&lessonProblems), lessonProblems);
  lessonRunner_ = new LessonRunner(this, lessonPanel_, this);
  lessonRunner_->setLabOpener([this](spec::LessonLab lab) {
    openLab(lab == spec::LessonLab::Bottleneck ? "Bottleneck lab" : "Stable-rank lab");
  });
  lessonRunner_->setLabRunner([this](spec::LessonLab lab) {
    return lab == spec::LessonLab::Bottleneck ? bottleneckLab_->fit() : stableRankLab_->useDesignCore() || stableRankLab_->generate();
  });
  connect(bottleneckLab_, &BottleneckLab::labDone, lessonRunner_, [this] { lessonRunner_->labDone(spec::LessonLab::Bottleneck); });
  connect(stableRankLab_, &StableRankLab::labDone, lessonRunner_, [this] { lessonRunner_->labDone(spec::LessonLab::StableRank); });
  // The bottleneck lab can fit a trained run's maps; the stable-rank lab can take the design's C.
  connect(inspection_, &InspectionViews::inspected, this,
          [this](quint64, std::shared_ptr<const model_core::InspectionSnapshot> snap) {
            QStringList names;
            std::vector<model_core::HostTensor> maps;
            if (snap)
              for (size_t l = 0; l < snap->maps.size(); ++l)
                for (size_t h = 0; h < snap->maps[l].size(); ++h)
                  if (snap->maps[l][h].rows() > 0 && snap->maps[l][h].rows() == snap->maps[l][h].cols()) {
                    names << QString("%1 · layer %2 · map %3").arg(model_->currentRun().name).arg(l).arg(h);
                    maps.push_back(snap->maps[l][h]);
                  }
            bottleneckLab_->setRunMaps(names, std::move(maps));
          });
  const auto coreToLab = [this] {
    if (model_->count() == 0) return;
    const auto s = model_->currentSpec();
    const auto& z = s.sizes;
    if (!s.core || !spec::validate(s).empty() || z.R > CoreEditor::kMaxDrawnCoreWidth) {
      stableRankLab_->setCore({}, 0, 0);
      return;
    }
    const auto C = spec::materializeCore(*s.core, z.H, z.D, z.R);
    stableRankLab_->setCore({{z.R, z.R}, std::vector<float>(C.begin(), C.end())}, z.H, z.D);
  };
  connect(model_, &SessionModel::designChanged, this, coreToLab);
  connect(model_, &SessionModel::currentChanged, this, coreToLab);
  connect(model_, &SessionModel::sessionReset, this, coreToLab);
  coreToLab();
  if (QDockWidget* inspectorDock = dock("Inspector")) {
    // Only a visible inspector costs anything; a click on a tensor (not C: the core editor) shows it.
    connect(inspectorDock, &QDockWidget::visibilityChanged, teaching_, &TeachingViews::setActive);
    connect(diagram_, &diagram_view::DiagramView::elementClicked, this,
            [this, inspectorDock](diagram_view::DiagramScene::Element kind, const QString& id) {
              const auto& nodes = diagram_->network().nodes;
              const bool core = kind == diagram_view::DiagramScene::Element::Tensor &&
                                std::any_of(nodes.begin(), nodes.end(), [&](const auto& n) {
                                  return n.kind == spec::NodeKind::Core && QString::fromStdString(n.id) == id;
                                });
              if (core) return;
              inspectorDock->show();
              inspectorDock->raise();
            });
  }
  const auto status = [this](const QString& text, int ms) { statusBar()->showMessage(text, ms); };
  connect(live_, &LiveViews::message, this, status);
  connect(inspection_, &InspectionViews::message, this, status);
  connect(driver_, &TrainingDriver::message, this, status);
  connect(files_, &SessionFiles::message, this, status);
  connect(files_, &SessionFiles::error, this, &MainWindow::showError);
  connect(model_, &SessionModel::sessionReset, this, &MainWindow::updateTitle);
  connect(designDocks_, &DesignDocks::message, this, [status](const QString& text) { status(text, 5000); });
  connect(model_, &SessionModel::refused, this, [status](const QString& text) { status(text, 8000); });
  connect(driver_, &TrainingDriver::error, this, &MainWindow::showError);
  connect(driver_, &TrainingDriver::forked, core_, &CoreEditor::replayPendingEdit);  // the edit that asked for it
  connect(files_, &SessionFiles::warning, this, &MainWindow::showError);
  connect(model_, &SessionModel::runsChanged, this, &MainWindow::showRuns);
  connect(model_, &SessionModel::designChanged, this, &MainWindow::showRuns);  // a design made valid or invalid
  connect(model_, &SessionModel::forkNeeded, this, &MainWindow::forkForDesignEdit);
  connect(model_, &SessionModel::modifiedChanged, this, &MainWindow::updateTitle);
  connect(model_, &SessionModel::pathChanged, this, &MainWindow::updateTitle);
  connectRunsPanel();
  buildMainMenus(*this);
  const auto info = model_core::runtimeInfo();
  statusBar()->showMessage(QString("LibTorch %1 · %2 · %3 threads · %4")
                               .arg(QString::fromStdString(info.torch_version), QString::fromStdString(info.default_device))
                               .arg(info.intra_op_threads)
                               .arg(info.blas_is_openblas ? "OpenBLAS" : "reference BLAS (slow: install libopenblas0-openmp)"));
  // 1600 x 1000, or what the screen has (a laptop's 1280 x 800): never larger than the screen.
  resize(QSize(1600, 1000).boundedTo(screen()->availableGeometry().size()));
  qApp->installEventFilter(this);
  files_->openAtStart(options_.offerRecovery, options_.reopenLastSession);
  // The theme is the user's preference, not the document's (a session file records the one it was
  // saved with, for information).
  setDarkTheme(options_.rememberedTheme && QSettings().value("darkTheme", false).toBool());
}

MainWindow::~MainWindow() = default;

TrainingController* MainWindow::controller() const { return driver_->controller(); }

QDockWidget* MainWindow::addDock(const QString& title, QWidget* content, Qt::DockWidgetArea area, bool scroll) {
  auto* dock = new QDockWidget(title, this);
  dock->setObjectName(title);
  if (scroll) {  // a form taller or wider than a laptop's share of the screen scrolls instead
    auto* area = new QScrollArea;
    area->setWidgetResizable(true);
    area->setFrameShape(QFrame::NoFrame);
    area->setWidget(content);
    content = area;
  }
  dock->setWidget(content);
  addDockWidget(area, dock);
  return dock;
}

QList<QDockWidget*> MainWindow::docks() const { return findChildren<QDockWidget*>(); }

bool MainWindow::startLesson(const QString& id) {
  QDockWidget* d = dock("Lesson");
  if (!d || !lessonPanel_->start(id)) return false;
  d->show();
  d->raise();
  return true;
}

void MainWindow::openLab(const QString& title) {
  enlargeBottomDock(*this, title, 0.62);  // a lab's plots and matrices want the room
}

QDockWidget* MainWindow::dock(const QString& title) const {
  for (QDockWidget* d : docks())
    if (d->objectName() == title) return d;
  return nullptr;
}

std::vector<viz::PlotWidget*> MainWindow::plots() const { return {curves_, stableRank_, spectrum_, maps_, roles_}; }

void MainWindow::buildDocks() {
  design_ = new DesignPanel;
  core_ = new CoreEditor;
  diagram_ = new diagram_view::DiagramView;
  specText_ = new QPlainTextEdit;
  specText_->setReadOnly(true);
  specText_->setLineWrapMode(QPlainTextEdit::NoWrap);
  specText_->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
  trainingPanel_ = new TrainingPanel;
  runs_ = new RunsPanel;
  curves_ = new viz::CurvesPlot;
  curves_->setRightAxisSeries({"lr"});
  stableRank_ = new viz::StableRankPlot;
  spectrum_ = new viz::SpectrumPlot;
  maps_ = new viz::AttentionMapGrid;
  roles_ = new viz::RoleClusterPlot;
  roles_->setK(4);
  const std::pair<viz::PlotWidget*, const char*> names[] = {
      {curves_, "curves"}, {stableRank_, "stable_rank"}, {spectrum_, "spectrum"}, {maps_, "attention_maps"}, {roles_, "role_clusters"}};
  for (const auto& [plot, name] : names) plot->setExportName(name);

  auto* designDock = addDock("Design", design_, Qt::LeftDockWidgetArea, true);
  addDock("Runs", runs_, Qt::LeftDockWidgetArea);
  tabifyDockWidget(designDock, addDock("Training", trainingPanel_, Qt::LeftDockWidgetArea, true));
  designDock->raise();
  auto* diagramDock = addDock("Diagram", diagram_, Qt::RightDockWidgetArea);
  auto* coreDock = addDock("Core matrix C", core_, Qt::RightDockWidgetArea, true);
  splitDockWidget(diagramDock, coreDock, Qt::Horizontal);
  // The diagram's inspector beside C: what any tensor of the diagram holds, and the plan step by step.
  inspector_ = new TensorInspector;
  tabifyDockWidget(coreDock, addDock("Inspector", inspector_, Qt::RightDockWidgetArea, true));
  coreDock->raise();
  tabifyDockWidget(diagramDock, addDock("Spec (JSON)", specText_, Qt::RightDockWidgetArea));
  QTimer::singleShot(0, diagramDock, &QDockWidget::raise);
  auto* curvesDock = addDock("Curves", curves_, Qt::BottomDockWidgetArea);
  auto* rankDock = addDock("Stable rank", stableRank_, Qt::BottomDockWidgetArea);
  tabifyDockWidget(rankDock, addDock("Spectrum of C", spectrum_, Qt::BottomDockWidgetArea));
  rankDock->raise();
  // The maps dock: a probe the user types above the maps (InspectionViews runs it).
  auto* mapsPane = new QWidget;
  auto* mapsColumn = new QVBoxLayout(mapsPane);
  mapsColumn->setContentsMargins(4, 2, 0, 0);
  mapsColumn->setSpacing(2);
  auto* probeRow = new QHBoxLayout;
  auto* probeLabel = new QLabel("Probe");
  probeEdit_ = new QLineEdit;
  probeEdit_->setObjectName("probe");
  probeEdit_->setClearButtonEnabled(true);
  probeEdit_->setToolTip("The input the attention maps are computed on. Enter runs it on the run shown "
                         "(at its next step while it trains); an empty probe is the task's first "
                         "validation example");
  probeLabel->setBuddy(probeEdit_);
  probeNote_ = new QLabel;
  probeNote_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);  // never widens the dock
  probeRow->addWidget(probeLabel);
  probeRow->addWidget(probeEdit_, 2);
  probeRow->addWidget(probeNote_, 3);
  mapsColumn->addLayout(probeRow);
  mapsColumn->addWidget(maps_, 1);
  auto* mapsDock = addDock("Attention maps", mapsPane, Qt::BottomDockWidgetArea);
  tabifyDockWidget(mapsDock, addDock("Role clusters", roles_, Qt::BottomDockWidgetArea));
  mapsDock->raise();
  experiments_ = new ExperimentsPanel;
  auto* experimentsDock = addDock("Experiments", experiments_, Qt::BottomDockWidgetArea);
  tabifyDockWidget(curvesDock, experimentsDock);
  // Teaching: the labs beside the experiments, the lessons beside the design forms.
  bottleneckLab_ = new BottleneckLab;
  stableRankLab_ = new StableRankLab;
  tabifyDockWidget(experimentsDock, addDock("Bottleneck lab", bottleneckLab_, Qt::BottomDockWidgetArea, true));
  tabifyDockWidget(experimentsDock, addDock("Stable-rank lab", stableRankLab_, Qt::BottomDockWidgetArea, true));
  curvesDock->raise();
  lessonPanel_ = new LessonPanel;
  tabifyDockWidget(designDock, addDock("Lesson", lessonPanel_, Qt::LeftDockWidgetArea, true));
  designDock->raise();
  connect(experiments_, &ExperimentsPanel::openRunRequested, this, &MainWindow::openRunDirectory);
  connect(design_, &DesignPanel::sweepRequested, this, &MainWindow::sweepCurrentDesign);
  connect(experiments_, &ExperimentsPanel::openSweepRequested, this, [this] {
    const QString dir = QFileDialog::getExistingDirectory(this, "Open a sweep directory (made by tensorscope sweep plan)");
    if (!dir.isEmpty()) openSweepDirectory(dir);
  });
  connect(experiments_, &ExperimentsPanel::message, this, [this](const QString& text) { statusBar()->showMessage(text, 8000); });
  // Sizes apply once the window has its geometry.
  QTimer::singleShot(0, this, [this, designDock, diagramDock, coreDock, curvesDock] {
    resizeDocks({designDock, diagramDock, coreDock}, {330, 560, 520}, Qt::Horizontal);
    resizeDocks({curvesDock}, {std::min(320, height() / 3)}, Qt::Vertical);
    defaultLayout_ = saveState();  // the first-start arrangement, before the user's comes back
    if (options_.restoreLayout) restoreState(QSettings().value("windowState").toByteArray());
    diagram_->fitToView();
  });
  connect(diagram_, &diagram_view::DiagramView::coreSelected, this, [coreDock](const QString&) {
    coreDock->show();
    coreDock->raise();
  });
  connect(diagram_, &diagram_view::DiagramView::exported, this, [this](const QString& path, const QString& error) {
    if (error.isEmpty()) statusBar()->showMessage("Exported the diagram to " + path, 5000);
    else showError("Export the diagram", "Could not write " + path + ":\n" + error);
  });
  connect(core_, &CoreEditor::forkRequested, this, [this] {
    const bool training = model_->isTraining(model_->current());
    const bool asked = training ? confirm("Edit C of a training run?",
                                          "This run's C is being trained. Fork a new run from its latest checkpoint?\n\n"
                                          "The fork starts with every layer's learned C, with your edit applied, and with "
                                          "every other learned weight. The original keeps training; start the fork when it "
                                          "is done (one run trains at a time).")
                                : confirm("Edit the learned C of a trained run?",
                                          "This run's C is what it learned. Fork a new run from its latest checkpoint?\n\n"
                                          "The fork starts with every layer's learned C, with your edit applied, and with "
                                          "every other learned weight; the trained run stays as it is. (To change the "
                                          "design it started from, duplicate the run instead.)");
    if (asked && driver_->fork()) return;
    core_->clearPendingEdit();
  });
}

void MainWindow::forkForDesignEdit(quint64 runId, const std::vector<spec::AttentionSpec>& after, const QString& what) {
  const int index = model_->indexOf(runId);
  if (index < 0) return;
  const QString name = model_->run(index).name;
  if (!confirm("Edit the design of a trained run?",
               QString("%1 has trained with this design: its checkpoint holds the weights of it. Fork a new run from "
                       "that checkpoint with your edit?\n\nThe fork starts from every learned weight that still fits the "
                       "edited design; %1 and its run folder stay as they are, and it can still be resumed.")
                   .arg(name))) {
    statusBar()->showMessage("The edit was not applied: " + name + " stays as it trained.", 8000);
    return;
  }
  driver_->forkWithDesign(runId, after, what);
}

void MainWindow::connectRunsPanel() {
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
    if (!model_->removeRun(i, &why)) showError("Cannot remove this run", why);
  });
  connect(runs_, &RunsPanel::openRunDirectoryRequested, this, [this] {
    const QString dir = QFileDialog::getExistingDirectory(this, "Open a run directory");
    if (!dir.isEmpty()) openRunDirectory(dir);
  });
}

void MainWindow::showRuns() {
  QStringList names, statuses, problems;
  QList<bool> overlaid;
  for (int i = 0; i < model_->count(); ++i) {
    names << model_->run(i).name;
    statuses << model_->statusLine(i);
    // An invalid design (opened from a file, or edited so) is marked until it is fixed.
    problems << runProblems(model_->run(i)).join('\n');
    overlaid << model_->overlaid(i);
  }
  runs_->setRuns(names, statuses, overlaid, model_->current(), problems);
}

void MainWindow::updateTitle() {
  const QString path = model_->path();
  setWindowTitle(QString("Tensorscope — %1%2").arg(path.isEmpty() ? "unsaved session" : QFileInfo(path).fileName(),
                                                   model_->isModified() ? " *" : ""));
}

bool MainWindow::openRunDirectory(const QString& dir) {
  try {
    auto entry = runEntryFromDirectory(dir);
    const QString status = "opened: " + entry.runDir;
    model_->addRun(std::move(entry), status);
    return true;
  } catch (const std::exception& e) {
    showError("Cannot open run directory", dir + ": " + QString::fromUtf8(e.what()));
    return false;
  }
}

bool MainWindow::openSweepDirectory(const QString& dir) {
  QString error;
  if (!experiments_->openSweep(dir, &error)) {
    showError("Cannot open the sweep", error);
    return false;
  }
  enlargeExperimentsDock(*this);  // room for the tables and the figure
  return true;
}

void MainWindow::sweepCurrentDesign() {
  const auto& run = model_->currentRun();
  const QString base = QStandardPaths::writableLocation(QStandardPaths::AppDataLocation) + "/sweeps/";
  QString name = run.name;
  name.replace(QRegularExpression("[^A-Za-z0-9._-]+"), "_");
  QString dir = base + name;
  for (int i = 2; QFileInfo::exists(dir); ++i) dir = base + name + "-" + QString::number(i);
  SweepDialog dialog(run.name, run.config, dir, this);
  if (dialog.exec() != QDialog::Accepted || dialog.planned().isEmpty()) return;
  if (openSweepDirectory(dialog.planned()))
    statusBar()->showMessage("Planned the sweep in " + dialog.planned() + "; Run pending trials starts it", 10000);
}

bool MainWindow::exportFigures(const QString& dir) {
  // The options the export dialog last took (the same figures as File > Export figures).
  const auto report = app::exportFigures(dir, {plots(), core_, model_->currentSpec(), dark_, model_->currentRun().name},
                                         FigureDialog::remembered());
  const QString skipped = report.skipped.isEmpty() ? QString() : " Skipped (nothing to show): " + report.skipped.join("; ");
  if (!report.ok()) {
    showError("Export figures", QString("%1 of %2 files could not be written (the others were):\n%3%4")
                                    .arg(report.failures.size())
                                    .arg(report.files)
                                    .arg(report.failures.join('\n'), skipped));
    return false;
  }
  statusBar()->showMessage(QString("Wrote %1 files to %2.%3").arg(report.files).arg(dir, skipped), 10000);
  return true;
}

void MainWindow::closeEvent(QCloseEvent* event) {
  if (!files_->confirmDiscardChanges()) return event->ignore();
  driver_->stopAndWait();  // the run checkpoints before the window goes
  QSettings().setValue("windowState", saveState());
  setCleanExit(true);
  files_->autosave();
  event->accept();
}

bool MainWindow::confirm(const QString& title, const QString& text) {
  if (options_.confirm) return options_.confirm(title);
  return QApplication::platformName() != "offscreen" && QMessageBox::question(this, title, text) == QMessageBox::Yes;
}

void MainWindow::showError(const QString& title, const QString& text) {
  statusBar()->showMessage(title + ": " + text, 10000);
  if (QApplication::platformName() != "offscreen") QMessageBox::warning(this, title, text);
}

bool MainWindow::eventFilter(QObject* watched, QEvent* event) {
  // Undo and redo are the document's, also while a field has focus: line edits and spin boxes
  // claim Ctrl+Z for their own text otherwise, and the design edit would not be undone.
  if (event->type() == QEvent::ShortcutOverride && (qobject_cast<QLineEdit*>(watched) || qobject_cast<QAbstractSpinBox*>(watched)) &&
      isAncestorOf(static_cast<QWidget*>(watched))) {
    auto* key = static_cast<QKeyEvent*>(event);
    if (key->matches(QKeySequence::Undo) || key->matches(QKeySequence::Redo)) {
      event->ignore();
      return true;  // not the field's: the window's Undo / Redo actions take it
    }
  }
  return QMainWindow::eventFilter(watched, event);
}

void MainWindow::setDarkTheme(bool dark) {
  dark_ = dark;
  QSettings().setValue("darkTheme", dark);
  Q_EMIT themeChanged(dark);
  applyApplicationTheme(dark);
  for (viz::PlotWidget* w : findChildren<viz::PlotWidget*>()) w->setDarkTheme(dark);  // the C heatmaps too
  bottleneckLab_->setDarkTheme(dark);
  stableRankLab_->setDarkTheme(dark);
  diagram_->setTheme(dark ? diagram_view::Theme::Dark : diagram_view::Theme::Light);
}

}  // namespace tensorscope::app
