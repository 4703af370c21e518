#include "gui/shell/main_menus.h"

#include <QAction>
#include <QApplication>
#include <QDockWidget>
#include <QFileDialog>
#include <QFileInfo>
#include <QMenuBar>
#include <QMessageBox>
#include <QStatusBar>
#include <QStyle>
#include <QToolBar>

#include "common/version.h"
#include "gui/design/core_editor.h"
#include "gui/shell/app_theme.h"
#include "gui/shell/dock_layouts.h"
#include "gui/teaching/lesson_panel.h"
#include "gui/teaching/presenter_mode.h"
#include "gui/teaching/inspector_docks.h"
#include "gui/figures/figure_dialog.h"
#include "gui/figures/figure_export.h"
#include "gui/shell/main_window.h"
#include "gui/training/runs_panel.h"
#include "gui/document/app_paths.h"
#include "gui/document/session_history.h"
#include "gui/shell/session_files.h"
#include "gui/document/session_model.h"
#include "gui/training/training_controller.h"
#include "gui/training/training_driver.h"
#include "model_core/run_directory.h"
#include "gui/experiments/experiments_panel.h"
#include "viz/attention_map_grid.h"
#include "viz/curves_plot.h"
#include "viz/difference_plot.h"
#include "viz/matrix_heatmap.h"
#include "viz/role_cluster_plot.h"
#include "viz/spectrum_plot.h"
#include "viz/stable_rank_plot.h"

namespace tensorscope::app {

namespace {

std::vector<viz::PlotWidget*> windowPlots(const MainWindow& w) {
  return {w.curves(), w.stableRankPlot(), w.spectrumPlot(), w.attentionMaps(), w.roleClusters(),
          w.experiments()->differencePlot()};
}

// File > Export figures: the dialog (size, DPI, type, legend, formats, views, runs and metrics),
// then a folder; the status bar says what was written and which views were skipped and why.
void exportFiguresInteractively(MainWindow& w, SessionModel& model) {
  FigureDialog dialog(FigureDialog::Mode::AllViews, &w);
  const std::pair<viz::PlotWidget*, const char*> labels[] = {
      {w.curves(), "Curves"}, {w.stableRankPlot(), "Stable rank"}, {w.spectrumPlot(), "Spectrum of C"},
      {w.attentionMaps(), "Attention maps"}, {w.roleClusters(), "Role clusters"},
      {w.experiments()->differencePlot(), "Sweep verdicts: differences from the baseline (95% CI)"}};
  std::vector<FigureDialog::View> views;
  for (const auto& [plot, label] : labels) views.push_back({plot->exportName(), label, plot->emptyReason()});
  CoreEditor* core = w.coreEditor();
  views.push_back({"core", core->learnedStep() >= 0 ? QString("Core matrix C (learned, step %1) and its factors").arg(core->learnedStep())
                                                    : QString("Core matrix C (design) and its factors"),
                   core->heatmap()->emptyReason()});
  views.push_back({"diagram", "Diagram (SVG, PDF, PNG, TikZ, DOT)", {}});
  dialog.setViews(views);
  dialog.setRunsAndMetrics(w.curves()->runs(), w.curves()->seriesNames());
  if (dialog.exec() != QDialog::Accepted) return;
  const FigureExportOptions options = dialog.options();
  FigureDialog::remember(options);
  const QString dir = QFileDialog::getExistingDirectory(&w, "Export the figures to");
  if (dir.isEmpty()) return;
  const auto report = exportFigures(dir, {windowPlots(w), core, model.currentSpec(), w.darkTheme(), model.currentRun().name}, options);
  const QString skipped = report.skipped.isEmpty() ? QString() : "\nSkipped (nothing to show):\n" + report.skipped.join('\n');
  if (!report.ok()) {
    w.showError("Export figures", QString("%1 of %2 files could not be written (the others were):\n%3%4")
                                      .arg(report.failures.size()).arg(report.files).arg(report.failures.join('\n'), skipped));
    return;
  }
  w.statusBar()->showMessage(QString("Wrote %1 files to %2.%3").arg(report.files).arg(dir).arg(QString(skipped).replace('\n', ' ')), 10000);
}

void addShortcutRows(const QList<QAction*>& actions, QString& rows) {
  for (QAction* a : actions) {
    if (a->menu()) addShortcutRows(a->menu()->actions(), rows);
    if (a->isSeparator() || a->shortcuts().isEmpty()) continue;
    QStringList keys;
    for (const QKeySequence& k : a->shortcuts()) keys << k.toString(QKeySequence::NativeText);
    QString what = a->text().remove('&');
    what.remove(QChar(0x2026));
    rows += QString("<tr><td><b>%1</b></td><td>%2</td></tr>").arg(keys.join(" / ").toHtmlEscaped(), what.toHtmlEscaped());
  }
}

}  // namespace

QString shortcutSheet(const MainWindow& w) {
  QString rows;
  addShortcutRows(w.menuBar()->actions(), rows);  // the keys of the menus' actions, as they are bound
  for (const auto& [keys, what] : std::initializer_list<std::pair<const char*, const char*>>{
           {"Ctrl + wheel, drag", "zoom and pan the diagram"},
           {"Click on the diagram", "show that tensor, leg or softmax box in the Inspector"},
           {"Tab / arrows, Return (diagram focused)", "select the next or previous tensor; Return shows it as a click does"},
           {"Right / Left, Space, Esc (presenter mode)", "step the plan, play it, leave presenter mode"},
           {"Right click", "export a plot, C or a factor of C (PNG, SVG, PDF at a size in mm; CSV); on the diagram: SVG, PDF, PNG, TikZ, DOT"}})
    rows += QString("<tr><td><b>%1</b></td><td>%2</td></tr>").arg(keys, what);
  // A focused text field takes its platform's editing keys first (Qt's shortcut override): where
  // Ctrl+E moves to the end of the line (Linux), Export figures waits until the field lets go.
  const bool fieldTakesCtrlE = QKeySequence::keyBindings(QKeySequence::MoveToEndOfLine).contains(QKeySequence("Ctrl+E"));
  rows += QString("<tr><td><b>In a text field</b></td><td>the field's own editing keys win%1</td></tr>")
              .arg(fieldTakesCtrlE ? " (there Ctrl+E moves to the end of the line: click the diagram first, or use File &gt; Export figures)" : "");
  return "<table>" + rows + "</table>";
}

void buildMainMenus(MainWindow& w) {
  // Every plot's context-menu export (C and its factors included) asks with the same dialog.
  viz::PlotWidget::setFigureOptionsProvider([](viz::PlotWidget& plot, const QString&) -> std::optional<viz::FigureOptions> {
    FigureDialog dialog(FigureDialog::Mode::OnePlot, plot.window());
    if (auto* curves = qobject_cast<viz::CurvesPlot*>(&plot)) dialog.setRunsAndMetrics(curves->runs(), curves->seriesNames());
    if (dialog.exec() != QDialog::Accepted) return std::nullopt;
    auto remembered = FigureDialog::remembered();
    remembered.figure = dialog.options().figure;
    FigureDialog::remember(remembered);
    return remembered.figure;
  });
  MainWindow* const window = &w;  // captured by the actions' lambdas
  SessionModel* const model = &w.model();
  TrainingDriver* const driver = &w.training();
  QMenu* file = w.menuBar()->addMenu("&File");
  const QString filter = kSessionFileFilter;
  file->addAction("&Open session…", QKeySequence::Open, window, [window, filter] {
    const QString p = QFileDialog::getOpenFileName(window, "Open session", {}, filter);
    if (!p.isEmpty()) window->files().open(p);
  });
  QMenu* recent = file->addMenu("Open &recent");
  QObject::connect(recent, &QMenu::aboutToShow, window, [window, recent] {
    recent->clear();
    const auto list = recentSessions();
    if (list.isEmpty()) recent->addAction("(none yet)")->setEnabled(false);
    for (const auto& p : list) recent->addAction(p, window, [window, p] { window->files().open(p); });
  });
  QMenu* examples = file->addMenu("Open &example session");
  for (const auto& p : exampleSessionPaths())
    examples->addAction(QFileInfo(p).baseName(), window, [window, p] { window->files().openExample(p); });
  const auto saveAs = [window, filter] {
    const QString p = withSessionSuffix(
        QFileDialog::getSaveFileName(window, "Save session as", QStringLiteral("session") + kSessionSuffix, filter));
    if (!p.isEmpty()) window->files().save(p);
  };
  file->addAction("&Save session", QKeySequence::Save, window, [window] { window->files().saveInteractively(); });
  // QKeySequence::SaveAs is empty on some platforms (KDE, Windows): Ctrl+Shift+S everywhere.
  auto saveAsKeys = QKeySequence::keyBindings(QKeySequence::SaveAs);
  if (!saveAsKeys.contains(QKeySequence("Ctrl+Shift+S"))) saveAsKeys.prepend(QKeySequence("Ctrl+Shift+S"));
  file->addAction("Save session &as…", window, saveAs)->setShortcuts(saveAsKeys);
  file->addAction("Open &run directory…", window->runsPanel(), &RunsPanel::openRunDirectoryRequested);
  file->addSeparator();
  file->addAction("Export &figures…", QKeySequence("Ctrl+E"), window, [window, model] { exportFiguresInteractively(*window, *model); });
  file->addAction("Export &data (CSV)…", window, [window] {
    const QString dir = QFileDialog::getExistingDirectory(window, "Export the data behind the plots");
    if (dir.isEmpty()) return;
    auto report = exportPlotData(dir, {window->curves(), window->stableRankPlot(), window->spectrumPlot(),
                                       window->attentionMaps(), window->roleClusters()});
    exportCoreData(dir, *window->coreEditor(), window->model().currentRun().name, report);
    if (!report.ok()) window->showError("Export data", "Could not write into " + dir + ":\n" + report.failures.join('\n'));
    else window->statusBar()->showMessage(QString("Wrote the data of %1 files to %2%3").arg(report.files).arg(dir)
                                              .arg(report.skipped.isEmpty() ? "" : " (skipped: " + report.skipped.join("; ") + ")"), 8000);
  });
  file->addAction("Export &model (PyTorch)…", window, [window, model] {
    const auto& run = model->currentRun();
    if (run.runDir.isEmpty()) return window->showError("Export model", "Train this run first: it has no checkpoint yet.");
    const QString dir = QFileDialog::getExistingDirectory(window, "Export model.py, model.safetensors and config.json to");
    if (dir.isEmpty()) return;
    try {
      model_core::exportPyTorch(run.runDir.toStdString(), dir.toStdString());
      window->statusBar()->showMessage("Exported the model to " + dir, 5000);
    } catch (const std::exception& e) {
      window->showError("Export model", e.what());
    }
  });
  file->addSeparator();
  file->addAction("&Quit", QKeySequence::Quit, window, &QWidget::close);

  QMenu* edit = w.menuBar()->addMenu("&Edit");
  auto* undo = model->undoStack()->createUndoAction(window, "&Undo");
  undo->setShortcut(QKeySequence::Undo);
  auto* redo = model->undoStack()->createRedoAction(window, "&Redo");
  // The platform's redo keys plus Ctrl+Shift+Z, each once (a key bound twice is ambiguous and dead).
  auto redoKeys = QKeySequence::keyBindings(QKeySequence::Redo);
  if (!redoKeys.contains(QKeySequence("Ctrl+Shift+Z"))) redoKeys.prepend(QKeySequence("Ctrl+Shift+Z"));
  redo->setShortcuts(redoKeys);
  edit->addActions({undo, redo});

  // Training: in the menu and on a toolbar that is always visible, whichever dock is raised.
  QMenu* train = w.menuBar()->addMenu("&Training");
  QToolBar* bar = w.addToolBar("Training");
  bar->setObjectName("TrainingToolbar");
  bar->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
  const auto add = [&](const QString& text, QStyle::StandardPixmap icon, const QKeySequence& keys, auto receiver, auto slot) {
    QAction* a = train->addAction(paletteIcon(icon, QApplication::palette()), text, keys, receiver, slot);
    // Drawn in the palette's button text colour, again after every theme switch (queued: the
    // signal comes before the new palette is applied).
    QObject::connect(window, &MainWindow::themeChanged, a, [a, icon] { a->setIcon(paletteIcon(icon, QApplication::palette())); },
                     Qt::QueuedConnection);
    a->setToolTip(QString(text).remove('&') + " (" + keys.toString(QKeySequence::NativeText) + ")");
    bar->addAction(a);
    return a;
  };
  add("&Train", QStyle::SP_MediaPlay, QKeySequence(Qt::Key_F5), driver, [driver] { driver->start(); });
  add("&Pause / resume", QStyle::SP_MediaPause, QKeySequence(Qt::Key_F6), driver, [driver] { driver->togglePause(); });
  add("&Step", QStyle::SP_MediaSeekForward, QKeySequence(Qt::Key_F7), window->controller(), [window] { window->controller()->step(); });
  add("St&op", QStyle::SP_MediaStop, QKeySequence("Shift+F5"), window->controller(), [window] { window->controller()->stop(); });
  bar->addSeparator();
  bar->addAction(undo);
  bar->addAction(redo);

  QMenu* experiments = w.menuBar()->addMenu("E&xperiments");
  experiments->addAction("&Open sweep…", window, [window] {
    const QString dir = QFileDialog::getExistingDirectory(window, "Open a sweep directory (made by tensorscope sweep plan)");
    if (!dir.isEmpty()) window->openSweepDirectory(dir);
  });
  experiments->addAction("&Sweep this design…", window, [window] { window->sweepCurrentDesign(); })
      ->setToolTip("Compare the current design with Tuformer's designs over seeds, at equal parameters");

  QMenu* view = w.menuBar()->addMenu("&View");
  // By the docks' short fixed names (their object names): a dock's title may name its run and step.
  for (QDockWidget* d : window->docks()) {
    QAction* toggle = d->toggleViewAction();
    QAction* a = view->addAction(d->objectName());
    a->setCheckable(true);
    a->setChecked(toggle->isChecked());
    QObject::connect(toggle, &QAction::toggled, a, &QAction::setChecked);
    QObject::connect(a, &QAction::triggered, toggle, [toggle, a](bool on) {
      if (toggle->isChecked() != on) toggle->trigger();
      a->setChecked(toggle->isChecked());
    });
  }
  view->addSeparator();
  view->addAction(window->presenter()->toggleAction());
  QMenu* layouts = view->addMenu("&Layout");
  for (auto layout : {DockLayout::Default, DockLayout::Design, DockLayout::Train, DockLayout::Present, DockLayout::Experiments,
                      DockLayout::Teach})
    layouts->addAction(layout == DockLayout::Default ? QString("&Reset to default") : "&" + dockLayoutName(layout), window,
                       [window, layout] { applyDockLayout(*window, layout, window->defaultLayout()); });
  auto* dark = view->addAction("&Dark theme");
  dark->setCheckable(true);
  dark->setChecked(window->darkTheme());
  dark->setShortcut(QKeySequence("Ctrl+Shift+D"));
  QObject::connect(dark, &QAction::triggered, window, &MainWindow::setDarkTheme);  // the user's choice
  QObject::connect(window, &MainWindow::themeChanged, dark, &QAction::setChecked);  // a session's

  QMenu* lessons = w.menuBar()->addMenu("&Lessons");
  // Listed again when Add lessons… adds some (the new ones at once).
  const auto fillLessons = [window, lessons] {
    lessons->clear();
    for (const auto& l : window->lessonPanel()->lessons()) {
      QAction* a = lessons->addAction(QString::fromStdString(l.title), window,
                                      [window, id = QString::fromStdString(l.id)] { window->startLesson(id); });
      a->setToolTip(QString::fromStdString(l.summary));
    }
    lessons->addSeparator();
    QAction* add = lessons->addAction("&Add lessons…", window, [window] {
      if (QDockWidget* d = window->dock("Lesson")) {
        d->show();
        d->raise();
      }
      window->lessonPanel()->chooseLessonFiles();
    });
    add->setToolTip("Add lesson files of your own: checked, copied to your lessons folder and offered from now on");
    add->setObjectName("addLessons");
    lessons->addSeparator();
    lessons->addAction("&Low-rank bottleneck lab", window, [window] { window->openLab("Bottleneck lab"); });
    lessons->addAction("&Stable-rank lab", window, [window] { window->openLab("Stable-rank lab"); });
  };
  fillLessons();
  QObject::connect(window->lessonPanel(), &LessonPanel::lessonsChanged, lessons, fillLessons);

  QMenu* help = w.menuBar()->addMenu("&Help");
  help->addAction("&Keyboard shortcuts", QKeySequence::HelpContents, window, [window] {
    QMessageBox::information(window, "Keyboard shortcuts", shortcutSheet(*window));
  });
  help->addAction("&About Tensorscope", window, [window] {
    QMessageBox::about(window, "About Tensorscope",
                       "<b>Tensorscope</b> explores attention mechanisms as tensor networks.<pre>" +
                           QString::fromStdString(versionText()).toHtmlEscaped() + "</pre>");
  });
}

}  // namespace tensorscope::app
