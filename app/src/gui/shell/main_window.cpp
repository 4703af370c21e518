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
#include "gui/document/session_history.h"
#include "gui/shell/status_progress.h"
#include "gui/design/core_editor.h"
#include "gui/design/design_docks.h"
#include "gui/design/design_panel.h"
#include "gui/shell/dock_layouts.h"
#include "gui/experiments/experiments_panel.h"
#include "gui/figures/figure_dialog.h"
#include "gui/figures/figure_export.h"
#include "gui/training/snapshot_docks.h"
#include "gui/training/live_docks.h"
#include "gui/shell/main_menus.h"
#include "gui/training/run_features.h"
#include "gui/training/runs_docks.h"
#include "gui/training/runs_panel.h"
#include "gui/shell/session_files.h"
#include "gui/document/session_model.h"
#include "gui/teaching/bottleneck_lab.h"
#include "gui/teaching/stable_rank_lab.h"
#include "gui/teaching/lesson_panel.h"
#include "gui/teaching/teaching_docks.h"
#include "gui/experiments/sweep_dialog.h"
#include "gui/teaching/presenter_mode.h"
#include "gui/teaching/inspector_docks.h"
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
#include "viz/difference_plot.h"
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
  // A Training dock setting that changes a trained run's weight set forks it, as a design edit does.
  driver_->setForkQuestion([this](const QString& run, const QString& changed) {
    return confirm("Change the model settings of a trained run?",
                   QString("%1 has trained with these settings: its checkpoint holds the weights of them (%2). Fork a "
                           "new run from that checkpoint with the new settings?\n\nThe fork starts from every learned "
                           "weight that still fits and its learning rate starts again from the warm-up; %1 and its run "
                           "folder stay as they are, and it can still be resumed.")
                       .arg(run, changed));
  });
  designDocks_ = new DesignDocks(model_, design_, core_, specText_, diagram_, this);
  files_ = new SessionFiles(this, model_, driver_, {options_.askToRecover, options_.askToSave}, [this] { return dark_; }, this);
  live_ = new LiveDocks(model_, driver_->controller(), curves_, this);
  // A view's header is its dock's title: "Attention maps · Run 2 · step 400" (the object name
  // keeps the bare title, which layouts and demo scripts find docks by).
  const auto setHeader = [](QWidget* view, const QString& header) {
    QWidget* w = view;
    while (w && !qobject_cast<QDockWidget*>(w)) w = w->parentWidget();
    auto* dock = qobject_cast<QDockWidget*>(w);
    if (dock) dock->setWindowTitle(header.isEmpty() ? dock->objectName() : dock->objectName() + " · " + header);
  };
  inspection_ = new SnapshotDocks(model_, driver_->controller(),
                                    {stableRank_, spectrum_, maps_, roles_, probeEdit_, probeNote_}, setHeader, this);
  connect(inspection_, &SnapshotDocks::inspected, designDocks_, &DesignDocks::showInspection);
  LessonParts parts{model_, driver_, driver_->controller(), core_, diagram_, inspector_,
                    [this](const QString& title) { return dock(title); },
                    [this](const QString& title, const QString& text) { showError(title, text); }};
  teachingDocks_ = new TeachingDocks(parts, inspection_, {lessonPanel_, bottleneckLab_, stableRankLab_},
                                     [this](const QString& title) { openLab(title); }, this);
  presenter_ = new PresenterMode(this, inspector_, diagram_, this);
  presenter_->setLessonPanel(lessonPanel_);
  const auto status = [this](const QString& text, int ms) { statusBar()->showMessage(text, ms); };
  connect(live_, &LiveDocks::message, this, status);
  connect(inspection_, &SnapshotDocks::message, this, status);
  connect(driver_, &TrainingDriver::message, this, status);
  connect(files_, &SessionFiles::message, this, status);
  connect(files_, &SessionFiles::error, this, &MainWindow::showError);
  connect(model_, &SessionModel::sessionReset, this, &MainWindow::updateTitle);
  connect(designDocks_, &DesignDocks::message, this, [status](const QString& text) { status(text, 5000); });
  connect(model_, &SessionModel::refused, this, [status](const QString& text) { status(text, 8000); });
  connect(driver_, &TrainingDriver::error, this, &MainWindow::showError);
  connect(driver_, &TrainingDriver::forked, core_, &CoreEditor::replayPendingEdit);  // the edit that asked for it
  connect(driver_, &TrainingDriver::forked, design_->headMixing(), &HeadMixingView::replayPendingEdit);
  connect(files_, &SessionFiles::warning, this, &MainWindow::showError);
  connect(model_, &SessionModel::forkNeeded, this, &MainWindow::forkForDesignEdit);
  connect(model_, &SessionModel::settingsForkNeeded, this, [this](quint64 runId, const model_core::RunConfig& config) {
    const int index = model_->indexOf(runId);
    if (index < 0) return;
    const auto& run = model_->run(index);
    const QString changed = TrainingDriver::weightSetChanges(run.config, config);
    if (!confirm("Change the model settings of a trained run?",
                 QString("%1 has trained with these settings: its checkpoint holds the weights of them (%2). Fork a "
                         "new run from that checkpoint with the new settings?\n\n%1 and its run folder stay as they "
                         "are, and it can still be resumed.")
                     .arg(run.name, changed))) {
      statusBar()->showMessage("The setting was not applied: " + run.name + " stays as it trained.", 8000);
      return;
    }
    driver_->forkWithSettings(runId, config);
  });
  connect(model_, &SessionModel::currentChanged, this, &MainWindow::followDesignCore);
  connect(model_, &SessionModel::designChanged, this, &MainWindow::followDesignCore);
  connect(model_, &SessionModel::sessionReset, this, &MainWindow::followDesignCore);
  connect(model_, &SessionModel::modifiedChanged, this, &MainWindow::updateTitle);
  connect(model_, &SessionModel::pathChanged, this, &MainWindow::updateTitle);
  runsDocks_ = new RunsDocks(model_, runs_, [this](const QString& title, const QString& text) { showError(title, text); }, this);
  buildMainMenus(*this);
  const auto info = model_core::runtimeInfo();
  statusBar()->showMessage(QString("LibTorch %1 · %2 · %3 threads · %4")
                               .arg(QString::fromStdString(info.torch_version), QString::fromStdString(info.default_device))
                               .arg(info.intra_op_threads)
                               .arg(info.blas_is_openblas ? "OpenBLAS" : "reference BLAS (slow: install libopenblas0-openmp)"));
  addStatusProgress(*this, *trainingPanel_);
  applyFirstStartGeometry(*this);  // 1600 x 1000 with its frame on the screen, else maximised
  qApp->installEventFilter(this);
  files_->openAtStart(options_.offerRecovery, options_.reopenLastSession);
  // The theme is the user's preference, not the document's (a session file records the one it was
  // saved with, for information).
  setDarkTheme(options_.rememberedTheme && QSettings().value("darkTheme", false).toBool());
}

MainWindow::~MainWindow() = default;

TrainingController* MainWindow::controller() const { return driver_->controller(); }
InspectorDocks* MainWindow::teaching() const { return teachingDocks_->views(); }
LessonRunner* MainWindow::lessons() const { return teachingDocks_->runner(); }

QList<QDockWidget*> MainWindow::docks() const { return findChildren<QDockWidget*>(); }

bool MainWindow::startLesson(const QString& id) {
  QDockWidget* d = dock("Lesson");
  if (!d || !lessonPanel_->start(id)) return false;
  d->show();
  d->raise();
  // A lesson tabbed behind the Design form or squeezed over the Runs list (the default layout: at
  // 1280 x 800 its text had no room at all) is read in the Teach layout: the lesson over the Design
  // form it asks for, beside the diagram and its inspector.
  if (!presenter_->active() && !lessonHasRoom(*this)) {
    applyDockLayout(*this, DockLayout::Teach, defaultLayout_);
    statusBar()->showMessage("The lesson is in the Teach layout (View > Layout > Default brings the other docks back)", 8000);
  }
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

std::vector<viz::PlotWidget*> MainWindow::plots() const {
  return {curves_, stableRank_, spectrum_, maps_, roles_, experiments_->differencePlot()};
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

void MainWindow::followDesignCore() {
  const bool has = spec::hasCore(model_->currentSpec().variant);
  setProperty("designHasCore", has);
  if (int(has) == hadCore_) return;
  const bool first = hadCore_ < 0;
  hadCore_ = int(has);
  QDockWidget *core = dock("Core matrix C"), *cost = dock("Cost");
  if (!core || !cost || core->isFloating() || cost->isFloating()) return;
  if (!has && (coreOnTop_ || first)) cost->raise();
  else if (has && costOnTop_) core->raise();
}

void MainWindow::updateTitle() {
  const QString path = model_->path();
  setWindowTitle(QString("Tensorscope — %1%2").arg(path.isEmpty() ? "unsaved session" : QFileInfo(path).fileName(),
                                                   model_->isModified() ? " *" : ""));
}

bool MainWindow::openRunDirectory(const QString& dir) { return runsDocks_->openRunDirectory(dir); }

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
