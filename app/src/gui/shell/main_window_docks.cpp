// The window's docks, built once: which widget each dock holds, where it sits, which it is tabbed
// with, and the signals of those widgets that the window itself answers (open a sweep or a trial's
// run, sweep the design, export the diagram, fork for an edit of a learned C). Part of MainWindow
// (main_window.h); main_window.cpp holds the wiring of the binders.
#include "gui/shell/main_window.h"
#include "gui/shell/demo_runner.h"

#include <QDockWidget>
#include <QFileDialog>
#include <QFontDatabase>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QScrollArea>
#include <QSettings>
#include <QStatusBar>
#include <QTimer>
#include <QVBoxLayout>
#include <algorithm>

#include "diagram_view/diagram_view.h"
#include "gui/design/core_editor.h"
#include "gui/design/design_panel.h"
#include "gui/design/head_mixing_view.h"
#include "gui/document/session_model.h"
#include "gui/experiments/experiments_panel.h"
#include "gui/teaching/bottleneck_lab.h"
#include "gui/teaching/lesson_panel.h"
#include "gui/teaching/presenter_mode.h"
#include "gui/teaching/stable_rank_lab.h"
#include "gui/teaching/tensor_inspector.h"
#include "gui/training/runs_panel.h"
#include "gui/training/training_driver.h"
#include "gui/training/training_panel.h"
#include "viz/attention_map_grid.h"
#include "viz/curves_plot.h"
#include "viz/role_cluster_plot.h"
#include "viz/spectrum_plot.h"
#include "viz/stable_rank_plot.h"

namespace tensorscope::app {

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

void MainWindow::buildDocks() {
  design_ = new DesignPanel;
  core_ = new CoreEditor;
  diagram_ = new diagram_view::DiagramView;
  specText_ = new QPlainTextEdit;
  specText_->setObjectName("specText");
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

  // The Design dock scrolls its form itself, under a name line that stays (DesignPanel).
  auto* designDock = addDock("Design", design_, Qt::LeftDockWidgetArea, false);
  addDock("Runs", runs_, Qt::LeftDockWidgetArea);
  tabifyDockWidget(designDock, addDock("Training", trainingPanel_, Qt::LeftDockWidgetArea, true));
  designDock->raise();
  auto* diagramDock = addDock("Diagram", diagram_, Qt::RightDockWidgetArea);
  auto* coreDock = addDock("Core matrix C", core_, Qt::RightDockWidgetArea, true);
  splitDockWidget(diagramDock, coreDock, Qt::Horizontal);
  // The diagram's inspector beside C: what any tensor of the diagram holds, and the plan step by step.
  inspector_ = new TensorInspector;
  tabifyDockWidget(coreDock, addDock("Inspector", inspector_, Qt::RightDockWidgetArea, true));
  // The layer's cost and the budget matcher beside C: in front where the design has no C
  // (MainWindow::followDesignCore), so that column is never an empty core editor.
  auto* costDock = addDock("Cost", design_->costPanel(), Qt::RightDockWidgetArea, true);
  design_->costPanel()->show();
  tabifyDockWidget(coreDock, costDock);
  connect(coreDock, &QDockWidget::visibilityChanged, this, [this](bool shown) { coreOnTop_ = shown; });
  connect(costDock, &QDockWidget::visibilityChanged, this, [this](bool shown) { costOnTop_ = shown; });
  coreDock->raise();
  tabifyDockWidget(diagramDock, addDock("Spec (JSON)", specText_, Qt::RightDockWidgetArea));
  QTimer::singleShot(0, diagramDock, &QDockWidget::raise);
  auto* curvesDock = addDock("Curves", curves_, Qt::BottomDockWidgetArea);
  auto* rankDock = addDock("Stable rank", stableRank_, Qt::BottomDockWidgetArea);
  tabifyDockWidget(rankDock, addDock("Spectrum of C", spectrum_, Qt::BottomDockWidgetArea));
  rankDock->raise();
  // The maps dock: a probe the user types above the maps (SnapshotDocks runs it).
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
                                          "This run's C is being trained. Fork a new run from its latest checkpoint?\n\n" +
                                              core_->forkEditText() +
                                              " The original keeps training; start the fork when it is done (one run "
                                              "trains at a time).")
                                : confirm("Edit the learned C of a trained run?",
                                          "This run's C is what it learned. Fork a new run from its latest checkpoint?\n\n" +
                                              core_->forkEditText() +
                                              " The trained run stays as it is. (To change the design it started from, "
                                              "duplicate the run instead.)");
    if (asked && driver_->fork()) return;
    core_->clearPendingEdit();
  });
  HeadMixingView* mixing = design_->headMixing();
  connect(mixing, &HeadMixingView::forkRequested, this, [this, mixing] {
    const bool training = model_->isTraining(model_->current());
    const QString weight = mixing->shownWeight() == "mix_post" ? "C′" : mixing->shownWeight() == "mix_pre" ? "C^pre" : "the MTA kernel";
    const bool asked =
        training ? confirm("Edit " + weight + " of a training run?",
                           "This run's " + weight + " is being trained. Fork a new run from its latest checkpoint?\n\n"
                           "The fork starts from the values of that checkpoint, with your edit applied. The original "
                           "keeps training; start the fork when it is done (one run trains at a time).")
                 : confirm("Edit the trained " + weight + " of a run?",
                           "This run's " + weight + " is what it learned. Fork a new run from its latest checkpoint?\n\n"
                           "The fork starts from the trained values, with your edit applied; the trained run stays as "
                           "it is. (To change the design it started from, duplicate the run instead.)");
    if (asked && driver_->fork()) return;
    mixing->clearPendingEdit();
  });
}

DemoParts MainWindow::demoParts() {
  DemoParts p;
  p.window = this;
  p.design = design_;
  p.defaultLayout = defaultLayout_;
  p.model = model_;
  p.training = driver_;
  p.controller = driver_->controller();
  p.files = files_;
  p.experiments = experiments_;
  p.inspector = inspector_;
  p.inspectorDocks = teaching();
  p.lessonPanel = lessonPanel_;
  p.lessons = lessons();
  p.bottleneckLab = bottleneckLab_;
  p.stableRankLab = stableRankLab_;
  p.snapshots = inspection_;
  p.probeNote = probeNote_;
  p.openSweepDirectory = [this](const QString& dir) { return openSweepDirectory(dir); };
  p.startLesson = [this](const QString& id) { return startLesson(id); };
  p.openLab = [this](const QString& title) { openLab(title); };
  p.setDarkTheme = [this](bool dark) { setDarkTheme(dark); };
  p.setPresenter = [this](bool on) { presenter_->setActive(on); };
  p.exportFigures = [this](const QString& dir) { return exportFigures(dir); };
  return p;
}

}  // namespace tensorscope::app
