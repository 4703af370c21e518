// Issue 13: what the views promise, checked in the window (written by a helper session).
// "Right click exports" on every plot (C and its factors included) and on the diagram; factor
// panels labelled as rows and columns of the factor; the Design and Train layouts at laptop size;
// the diagram fitted at start and saying why a design is invalid; role clusters of a reopened TP
// run. Each test builds its own window (window_test_util.h).
#include <gtest/gtest.h>

#include <QAction>
#include <QDialog>
#include <QDockWidget>
#include <QElapsedTimer>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QKeyEvent>
#include <QLineEdit>
#include <QMessageBox>
#include <QMenu>
#include <QRegularExpression>
#include <QSignalSpy>
#include <QStatusBar>
#include <QTemporaryDir>
#include <QTest>
#include <QTimer>
#include <QToolBar>
#include <QUndoStack>
#include <memory>

#include "diagram_view/diagram_view.h"
#include "gui/design/core_editor.h"
#include "gui/figures/figure_dialog.h"
#include "gui/training/training_controller.h"
#include "model_core/snapshots.h"
#include "spec/attention_spec.h"
#include "spec/core_spec.h"
#include "viz/attention_map_grid.h"
#include "viz/curves_plot.h"
#include "viz/matrix_heatmap.h"
#include "viz/plot_widget.h"
#include "viz/role_cluster_plot.h"
#include "viz/spectrum_plot.h"
#include "viz/stable_rank_plot.h"
#include "window_test_util.h"

using namespace tensorscope;
using namespace tensorscope::test;

namespace {

/// Answers what a context-menu export opens, as a user would: the popup menu (its entries are
/// recorded; the entry named `choose` is activated with the keyboard, none: the menu is closed),
/// the explorer's figure dialog (accepted as it stands) and the save dialog (`savePath` typed and
/// accepted). It polls from the event loops the menu and dialogs run, so nothing it does blocks.
/// After 20 s it closes whatever is open, so that a broken flow fails instead of hanging.
class ExportDriver : public QObject {
 public:
  ExportDriver(QString choose, QString savePath) : choose_(std::move(choose)), savePath_(std::move(savePath)) {
    clock_.start();
    timer_.setInterval(15);
    connect(&timer_, &QTimer::timeout, this, [this] { poll(); });
    timer_.start();
  }
  QStringList menuEntries, questions;
  bool sawMenu = false, sawFigureDialog = false, sawFileDialog = false, gaveUp = false;

 private:
  void poll() {
    if (auto* menu = qobject_cast<QMenu*>(QApplication::activePopupWidget()); menu && !sawMenu) {
      sawMenu = true;
      QAction* target = nullptr;
      for (QAction* a : menu->actions()) {
        if (a->isSeparator()) continue;
        menuEntries << a->text();
        if (a->text() == choose_) target = a;
      }
      if (!target) {
        menu->close();
        return;
      }
      menu->setActiveAction(target);
      QCoreApplication::postEvent(menu, new QKeyEvent(QEvent::KeyPress, Qt::Key_Return, Qt::NoModifier));
      return;
    }
    QWidget* modal = QApplication::activeModalWidget();
    if (auto* files = qobject_cast<QFileDialog*>(modal)) {
      sawFileDialog = true;
      // Typed into the name field as a user would (a full path is taken as it is).
      auto* name = files->findChild<QLineEdit*>("fileNameEdit");
      if (!name) return;
      name->setText(savePath_);
      QMetaObject::invokeMethod(files, "accept");  // QDialog::accept is a public slot
      return;
    }
    if (auto* box = qobject_cast<QMessageBox*>(modal)) {  // not expected: said, and closed
      questions << box->text();
      box->reject();
      return;
    }
    if (auto* figure = qobject_cast<app::FigureDialog*>(modal)) {
      sawFigureDialog = true;
      figure->accept();
      return;
    }
    if (clock_.elapsed() > 20000) {
      gaveUp = true;
      if (QWidget* popup = QApplication::activePopupWidget()) popup->close();
      if (auto* dialog = qobject_cast<QDialog*>(modal)) dialog->reject();
    }
  }

  QString choose_, savePath_;
  QTimer timer_;
  QElapsedTimer clock_;
};

/// The axis titles of a plot, read from its QCustomPlot's axes (QCPAxis objects, "label" property).
QStringList axisTitles(viz::PlotWidget* plot) {
  QStringList titles;
  for (QObject* o : plot->plotArea()->findChildren<QObject*>())
    if (QString::fromLatin1(o->metaObject()->className()) == QLatin1String("QCPAxis")) {
      const QString label = o->property("label").toString();
      if (!label.isEmpty()) titles << label;
    }
  return titles;
}

bool anyStartsWith(const QStringList& list, const QString& prefix) {
  for (const auto& s : list)
    if (s.startsWith(prefix)) return true;
  return false;
}

QDockWidget* dockNamed(app::MainWindow& w, const QString& name) { return w.findChild<QDockWidget*>(name); }

/// A View > Layout entry ("&Design", "&Train", …).
QAction* layoutAction(app::MainWindow& w, const QString& text) {
  for (QMenu* m : w.findChildren<QMenu*>())
    if (m->title() == "&Layout")
      for (QAction* a : m->actions())
        if (a->text() == text) return a;
  return nullptr;
}

/// The current run's design with the core preset `preset` (R = H·D), as one Design-dock edit.
void useCorePreset(app::MainWindow& w, const char* preset) {
  auto s = w.model().currentSpec();
  s.sizes.R = s.sizes.H * s.sizes.D;
  s.core = spec::makeCorePreset(preset, s.sizes.H, s.sizes.D);
  w.model().editDesign(s, QString("core preset ") + preset);
}

/// Run `index` trains with batch 4, `layers` layers and 8 evaluation examples (the Training dock's
/// settings; the default 128 evaluation examples made a stop take seconds on a busy machine).
void useLightRun(app::MainWindow& w, int index, int layers) {
  w.model().select(index);
  auto c = w.model().session().runs[size_t(index)].config;
  c.train.batch = 4;
  c.train.eval_examples = 8;
  c.model.layers = layers;
  w.trainingPanel()->setConfig(c);
}

// Finding N10: the core editor's banner named the run whose learned C it showed before, above a
// run without a core ("Showing the learned C of THSA at step 600" over "mhsa has no core matrix C").
TEST(DailyToolViews, TheCoreBannerNeverNamesARunItNoLongerShows) {
  app::CoreEditor editor;
  auto thsa = spec::makeSpecPreset("thsa");
  thsa.sizes.H = 2;
  thsa.sizes.D = 4;
  thsa.sizes.R = 8;
  thsa.core = spec::makeCorePreset("thsa", 2, 4);
  editor.setSpec(thsa);
  editor.showLearnedCore(std::vector<float>(64, 0.5f), 8, 600, "Showing the learned C of THSA at step 600 (read-only)");
  ASSERT_TRUE(editor.bannerText().contains("learned C of THSA"));
  // Another run, training, without a core: read-only, and nothing of THSA's.
  editor.setSpec(spec::makeSpecPreset("mhsa"));
  editor.setEditable(false);
  EXPECT_FALSE(editor.bannerText().contains("THSA")) << editor.bannerText().toStdString();
  EXPECT_EQ(editor.bannerText(), "This run is training: its design is read-only.");
  EXPECT_EQ(editor.learnedStep(), -1);
  // Another run with a core, training, before its first inspection: says so, names no other run.
  editor.setSpec(thsa);
  editor.setEditable(false);
  EXPECT_TRUE(editor.bannerText().startsWith("This run is training: C is read-only.")) << editor.bannerText().toStdString();
  editor.setEditable(true);
  EXPECT_FALSE(editor.bannerText().contains("training")) << editor.bannerText().toStdString();
}

// Finding N22: the read-out listed rounding noise ("8.04e-16") as singular values and compared the
// parameters with an MHSA of another head size without saying which.
TEST(DailyToolViews, TheCoreReadoutShowsExactZerosAndNamesItsMhsa) {
  app::CoreEditor editor;
  auto s = spec::makeSpecPreset("thsa");
  s.sizes.F = 32;
  s.sizes.H = 2;
  s.sizes.D = 4;
  s.sizes.R = 8;
  s.core = spec::makeCorePreset("skip_left", 2, 4);  // I_2 ⊗ c₂c₃ᵀ, c = H^¼·1: rank 2, six exact zeros
  editor.setSpec(s);
  const QString text = editor.readoutText();
  EXPECT_TRUE(text.contains("spectrum 5.66, 5.66, 0, 0, 0, 0, 0, 0")) << text.toStdString();  // √H·D twice
  EXPECT_FALSE(text.contains("e-1")) << text.toStdString();
  EXPECT_TRUE(text.contains("vs MHSA with H=2, D=F/H=16")) << text.toStdString();
}

// Finding N15: painting all of C took 16 slow strokes; Shift+drag fills a rectangle as one edit.
TEST(DailyToolViews, ARectangleOfCIsOneEdit) {
  app::CoreEditor editor;
  auto s = spec::makeSpecPreset("thsa");
  s.sizes.H = 2;
  s.sizes.D = 4;
  s.sizes.R = 8;
  s.core = spec::makeCorePreset("thsa", 2, 4);
  editor.setSpec(s);
  std::vector<std::pair<spec::AttentionSpec, QString>> edits;
  QObject::connect(&editor, &app::CoreEditor::coreEdited,
                   [&](const spec::AttentionSpec&, const spec::AttentionSpec& after, const QString& what, int) {
                     edits.emplace_back(after, what);
                   });
  editor.setTool(app::CoreEditor::Tool::SetValue);
  editor.setPaintValue(0.25);
  editor.editRectangle(1, 2, 3, 5);
  ASSERT_EQ(edits.size(), 1u);
  EXPECT_EQ(edits[0].second, "set C[1..3, 2..5] = 0.25");
  const auto& v = edits[0].first.core->dense_values;
  for (int r = 0; r < 8; ++r)
    for (int c = 0; c < 8; ++c)
      EXPECT_EQ(v[size_t(r * 8 + c)] == 0.25, r >= 1 && r <= 3 && c >= 2 && c <= 5) << r << "," << c;
  editor.setSpec(edits[0].first);
  editor.setTool(app::CoreEditor::Tool::PaintFrozen);
  editor.editRectangle(0, 0, 7, 7);  // all of C at once
  ASSERT_EQ(edits.size(), 2u);
  EXPECT_EQ(edits[1].second, "paint C[0..7, 0..7] frozen");
  const auto& mask = edits[1].first.core->trainable_mask;
  EXPECT_TRUE(std::all_of(mask.begin(), mask.end(), [](unsigned char m) { return m == 0; }));
  editor.setSpec(edits[1].first);
  editor.editRectangle(0, 0, 7, 7);
  EXPECT_EQ(edits.size(), 2u) << "nothing changed: no edit";
}

}  // namespace

// 1. "Right click exports": every plot of the window that has something to show (the core matrix
// C and its factor panels included) offers PNG, SVG, PDF and CSV in its context menu, the figure
// entries ask with the explorer's figure dialog, and the SVG entry writes the file chosen. The
// diagram's menu offers SVG, PDF, PNG and TikZ, and its SVG entry writes the file too.
TEST(DailyToolViews, EveryPlotAndTheDiagramExportFromTheirContextMenu) {
  QTemporaryDir dir;
  ASSERT_TRUE(dir.isValid());
  app::MainWindow w(testOptions());
  w.resize(1280, 800);
  w.show();
  settle();
  w.model().select(1);  // THSA
  w.coreEditor()->setStructure("kronecker");  // C = s·(A ⊗ B): the factor panels have matrices
  ASSERT_EQ(w.model().currentSpec().core->structure, spec::CoreStructure::Kronecker);
  w.model().setTrainingRun(w.model().currentRun().id);  // the views show the selected run's inspections
  Q_EMIT w.controller()->inspected(fullSnapshot());
  // Curve points as training draws them (after the lock: a new training run starts without curves).
  const QString run = w.model().currentRun().name;
  for (int step = 1; step <= 5; ++step) w.curves()->appendPoint("train loss", step, 2.0 / step, run);
  settle();

  // The views that must have data now, so that the loop below covers them.
  const std::vector<std::pair<viz::PlotWidget*, const char*>> expected = {
      {w.curves(), "curves"},
      {w.stableRankPlot(), "stable rank"},
      {w.spectrumPlot(), "spectrum"},
      {w.attentionMaps(), "attention maps"},
      {w.roleClusters(), "role clusters"},
      {w.coreEditor()->heatmap(), "core matrix C"},
      {w.coreEditor()->factorA(), "factor A"},
      {w.coreEditor()->factorB(), "factor B"}};
  for (const auto& [plot, name] : expected)
    EXPECT_TRUE(plot->hasFigure()) << name << " has nothing to export: " << plot->emptyReason().toStdString();

  int exported = 0;
  const auto plots = w.findChildren<viz::PlotWidget*>();
  for (viz::PlotWidget* plot : plots) {
    if (!plot->hasFigure()) continue;
    const QString label = plot->exportName() + " (" + plot->metaObject()->className() + ")";
    SCOPED_TRACE(label.toStdString());
    const QString path = dir.filePath(QString("plot%1.svg").arg(exported));
    ExportDriver driver("Export SVG…", path);
    // What a right click on the plot does (the plot's customContextMenuRequested).
    Q_EMIT plot->plotArea()->customContextMenuRequested(QPoint(20, 20));
    settle(2);
    ASSERT_FALSE(driver.gaveUp) << "the export did not finish";
    ASSERT_TRUE(driver.sawMenu) << "no context menu";
    for (const char* entry : {"Export PNG…", "Export SVG…", "Export PDF…", "Export data (CSV)…"})
      EXPECT_TRUE(driver.menuEntries.contains(entry)) << entry << " missing from " << driver.menuEntries.join(" | ").toStdString();
    EXPECT_TRUE(driver.sawFigureDialog) << "the figure entry did not ask with the explorer's figure dialog";
    EXPECT_TRUE(driver.sawFileDialog) << "the figure entry asked for no file";
    EXPECT_TRUE(driver.questions.isEmpty()) << driver.questions.join(" | ").toStdString();
    EXPECT_TRUE(QFileInfo::exists(path)) << "nothing written at " << path.toStdString() << ": " << plot->exportError().toStdString();
    EXPECT_GT(QFileInfo(path).size(), 200) << path.toStdString();
    QFile svg(path);
    if (svg.open(QIODevice::ReadOnly)) {
      EXPECT_TRUE(svg.readAll().contains("<svg")) << "not an SVG";
    }
    ++exported;
  }
  EXPECT_GE(exported, int(expected.size()));

  // The diagram's context menu (what its contextMenuEvent pops up).
  auto* diagram = w.findChild<diagram_view::DiagramView*>();
  ASSERT_TRUE(diagram);
  std::unique_ptr<QMenu> menu(diagram->createContextMenu());
  QStringList texts;
  QAction* svgEntry = nullptr;
  for (QAction* a : menu->actions()) {
    texts << a->text();
    if (a->data().toString() == ".svg") svgEntry = a;
  }
  for (const char* format : {"SVG", "PDF", "PNG", "TikZ"}) {
    bool offered = false;
    for (QAction* a : menu->actions())
      if (a->text().contains(format) && a->isEnabled()) offered = true;
    EXPECT_TRUE(offered) << format << " missing or disabled in " << texts.join(" | ").toStdString();
  }
  ASSERT_TRUE(svgEntry);
  const QString diagramPath = dir.filePath("diagram.svg");
  {
    ExportDriver driver({}, diagramPath);
    svgEntry->trigger();
    EXPECT_TRUE(driver.sawFileDialog);
    EXPECT_FALSE(driver.gaveUp);
  }
  EXPECT_GT(QFileInfo(diagramPath).size(), 200) << "the diagram's SVG entry wrote nothing";
  w.model().setTrainingRun(0);
}

// 2. The factor panels are labelled as rows and columns of the factor (A and B of a Kronecker C,
// U and V of a low-rank one), never with C's channel titles.
TEST(DailyToolViews, FactorPanelsNameTheRowsAndColumnsOfTheirFactor) {
  app::MainWindow w(testOptions());
  w.model().select(1);
  auto* core = w.coreEditor();
  const QStringList cTitles = axisTitles(core->heatmap());
  ASSERT_FALSE(cTitles.isEmpty()) << "C's heatmap has no axis titles to compare with";
  // logits_r = Σ_s C[r,s]·Q_s·K_sᵀ: the columns s are the channel Q and K share, the rows r the map
  // and V's channel (finding N9: they were titled "query channel" and "key channel").
  EXPECT_TRUE(cTitles.contains("s (channel Q and K share)")) << cTitles.join(" | ").toStdString();
  EXPECT_TRUE(cTitles.contains("r (map Ω_r, channel of V)")) << cTitles.join(" | ").toStdString();

  const auto expectFactorTitles = [&](const char* what, const QString& a, const QString& b) {
    SCOPED_TRACE(what);
    EXPECT_EQ(core->factorName(0), a);
    EXPECT_EQ(core->factorName(1), b);
    for (auto [panel, name] : {std::pair{core->factorA(), a}, std::pair{core->factorB(), b}}) {
      EXPECT_FALSE(panel->isHidden()) << "the panel of " << name.toStdString() << " is hidden";
      EXPECT_TRUE(panel->hasFigure()) << name.toStdString() << ": " << panel->emptyReason().toStdString();
      const QStringList titles = axisTitles(panel);
      EXPECT_TRUE(anyStartsWith(titles, "row of " + name)) << titles.join(" | ").toStdString();
      EXPECT_TRUE(anyStartsWith(titles, "column of " + name)) << titles.join(" | ").toStdString();
      for (const auto& t : cTitles) EXPECT_FALSE(titles.contains(t)) << "C's title \"" << t.toStdString() << "\" on " << name.toStdString();
    }
  };

  useCorePreset(w, "skip_right");
  ASSERT_EQ(w.model().currentSpec().core->structure, spec::CoreStructure::Kronecker);
  expectFactorTitles("preset skip_right", "A", "B");

  useCorePreset(w, "low_rank");
  ASSERT_EQ(w.model().currentSpec().core->structure, spec::CoreStructure::LowRank);
  expectFactorTitles("preset low_rank", "U", "V");

  // A custom Kronecker C chosen in the core editor itself.
  useCorePreset(w, "thsa");
  core->setStructure("kronecker");
  ASSERT_EQ(w.model().currentSpec().core->structure, spec::CoreStructure::Kronecker);
  expectFactorTitles("kronecker chosen in the core editor", "A", "B");
}

// 3. View > Layout > Design and Train (Present and Reset: DailyTool.LayoutPresets…). Design: "design,
// diagram and C large; the plots a strip" (dock_layouts.cpp). Train: "the live plots large; the
// training settings in front". At a laptop's 1280 x 800 no visible dock is squeezed below its
// minimum and the status bar stays inside the window.
TEST(DailyToolViews, DesignAndTrainLayoutsKeepTheirPromiseAtLaptopSize) {
  app::MainWindow w(testOptions());
  w.resize(1280, 800);
  w.show();
  ASSERT_TRUE(QTest::qWaitForWindowExposed(&w));
  settle();
  const auto find = [&](const char* name) {
    QDockWidget* d = dockNamed(w, name);
    EXPECT_TRUE(d) << name;
    return d;
  };
  const auto checkFits = [&](const char* layout) {
    SCOPED_TRACE(layout);
    for (QDockWidget* d : w.docks()) {
      if (!onScreen(d) || d->isFloating()) continue;
      const QSize min = d->minimumSizeHint().expandedTo(d->minimumSize());
      EXPECT_GE(d->width(), min.width()) << d->objectName().toStdString() << " narrower than its minimum";
      EXPECT_GE(d->height(), min.height()) << d->objectName().toStdString() << " lower than its minimum";
      EXPECT_TRUE(w.rect().contains(d->geometry())) << d->objectName().toStdString() << " reaches out of the window";
    }
    QStatusBar* bar = w.statusBar();
    EXPECT_TRUE(bar->isVisible());
    EXPECT_TRUE(w.rect().contains(bar->geometry())) << "the status bar is outside the window";
    EXPECT_GT(bar->height(), 0);
  };

  QAction* design = layoutAction(w, "&Design");
  QAction* train = layoutAction(w, "&Train");
  ASSERT_TRUE(design && train);

  // A dock the user closed comes back with the preset.
  find("Core matrix C")->close();
  design->trigger();
  settle();
  EXPECT_EQ(w.size(), QSize(1280, 800));
  for (const char* name : {"Design", "Diagram", "Core matrix C"}) EXPECT_TRUE(onScreen(find(name))) << name << " not shown in Design";
  EXPECT_FALSE(onScreen(find("Training"))) << "the Design form is in front of its tab group";
  EXPECT_TRUE(onScreen(find("Curves")));
  // The plots a strip: at 800 px it cannot be lower than the Experiments dock's minimum (228 px,
  // tabbed behind the curves), so the diagram and C get about twice its height, not 0.78 : 0.22.
  const int strip = find("Curves")->height();
  EXPECT_GT(find("Diagram")->height(), 3 * strip / 2) << "Design: the diagram is not large against the plots' strip";
  EXPECT_GT(find("Core matrix C")->height(), 3 * strip / 2) << "Design: C is not large against the plots' strip";
  for (const char* plot : {"Stable rank", "Attention maps"}) EXPECT_EQ(find(plot)->height(), strip) << plot << " is not in the strip";
  checkFits("Design");
  const int curvesInDesign = find("Curves")->height();

  train->trigger();
  settle();
  EXPECT_TRUE(onScreen(find("Training"))) << "Train: the training settings are not in front";
  EXPECT_FALSE(onScreen(find("Design")));
  for (const char* name : {"Curves", "Stable rank", "Attention maps", "Diagram"}) EXPECT_TRUE(onScreen(find(name))) << name;
  auto* toolbar = w.findChild<QToolBar*>("TrainingToolbar");
  ASSERT_TRUE(toolbar);
  EXPECT_TRUE(toolbar->isVisible()) << "the training controls are hidden";
  EXPECT_GT(find("Curves")->height(), find("Diagram")->height()) << "Train: the curves do not get the larger share";
  EXPECT_GT(find("Curves")->height(), curvesInDesign);
  EXPECT_GT(find("Attention maps")->height(), find("Diagram")->height()) << "Train: the live plots are not large";
  checkFits("Train");
}

// View > Layout > Design promises "the design docks large" (dock_layouts.h): the Design form gets
// the larger share of the left column (it had 184 px against the Runs list's 244 px at 1280 x 800).
TEST(DailyToolViews, TheDesignLayoutGivesTheDesignFormTheLargerShare) {
  app::MainWindow w(testOptions());
  w.resize(1280, 800);
  w.show();
  ASSERT_TRUE(QTest::qWaitForWindowExposed(&w));
  settle();
  QAction* design = layoutAction(w, "&Design");
  ASSERT_TRUE(design);
  design->trigger();
  settle();
  QDockWidget* form = dockNamed(w, "Design");
  ASSERT_TRUE(onScreen(form));
  EXPECT_GT(form->height(), dockNamed(w, "Runs")->height()) << "the Runs list is larger than the design form";
  EXPECT_GT(form->height(), dockNamed(w, "Curves")->height()) << "the plots' strip is higher than the design form";
}

// 4. The diagram in the window is fitted once the window is shown (not drawn at a fraction of the
// viewport), and an invalid design puts a notice naming the problem on it, gone once it is valid.
TEST(DailyToolViews, TheDiagramIsFittedAtStartAndSaysWhenTheDesignIsInvalid) {
  app::MainWindow w(testOptions());
  w.resize(1280, 800);
  w.show();
  ASSERT_TRUE(QTest::qWaitForWindowExposed(&w));
  settle(20);
  auto* diagram = w.findChild<diagram_view::DiagramView*>();
  ASSERT_TRUE(diagram);
  ASSERT_TRUE(diagram->isVisible());
  const double shown = diagram->zoom();
  const QRectF items = diagram->diagramScene()->itemsBoundingRect();
  ASSERT_FALSE(items.isEmpty());
  const QRectF onScreen = diagram->mapFromScene(items).boundingRect();
  const QSize viewport = diagram->viewport()->size();
  const double fill = std::max(onScreen.width() / viewport.width(), onScreen.height() / viewport.height());
  diagram->fitToView();
  EXPECT_NEAR(diagram->zoom(), shown, 0.02 * diagram->zoom()) << "the diagram shown at start is not the fitted one";
  if (shown < 1.49) {  // fitToView never scales above 1.5x
    EXPECT_GT(fill, 0.75) << "the diagram fills " << fill * 100 << "% of its view at zoom " << shown;
  }

  // An invalid design: a Kronecker C needs R = H·D (the same edit the Design dock makes).
  w.model().select(1);
  w.coreEditor()->setStructure("kronecker");
  settle();
  ASSERT_TRUE(diagram->notice().isEmpty()) << diagram->notice().toStdString();
  auto s = w.model().currentSpec();
  s.sizes.R += 1;
  w.model().editDesign(s, "R");
  EXPECT_FALSE(diagram->notice().isEmpty()) << "an invalid design shows no notice";
  EXPECT_TRUE(diagram->notice().contains("R = H*D") || diagram->notice().contains("R = H·D")) << diagram->notice().toStdString();
  EXPECT_TRUE(diagram->notice().contains("invalid")) << diagram->notice().toStdString();
  // Valid again (undo, and an edit that puts R back): the notice goes.
  w.model().undoStack()->undo();
  EXPECT_TRUE(diagram->notice().isEmpty()) << "undo: " << diagram->notice().toStdString();
  w.model().undoStack()->redo();
  ASSERT_FALSE(diagram->notice().isEmpty());
  s.sizes.R -= 1;
  w.model().editDesign(s, "R back");
  EXPECT_TRUE(diagram->notice().isEmpty()) << "edit: " << diagram->notice().toStdString();
}

// 5. A reopened session: the role clusters of its TP run come back from the run directory with a
// caption naming the layer and head; an MHSA run (trained: it has an inspection) says it has no
// role vectors.
TEST(DailyToolViews, RoleClustersComeBackForAReopenedTpRun) {
  QTemporaryDir dir;
  const QString sessionPath = dir.filePath("tp.tensorscope.json");
  {
    app::MainWindow w(testOptions());
    useLightTpRun(w, 8);
    trainStopped(w, 2);
    ASSERT_FALSE(w.roleClusters()->isShowingMessage()) << "no roles before the reopen: " << w.roleClusters()->emptyReason().toStdString();
    useLightRun(w, 0, 1);  // MHSA
    trainStopped(w, 2);
    ASSERT_FALSE(w.model().run(0).runDir.isEmpty());
    ASSERT_TRUE(w.files().save(sessionPath));
  }
  app::MainWindow w(testOptions());
  ASSERT_TRUE(w.files().open(sessionPath));
  ASSERT_EQ(w.model().run(1).config.model.attention.front().variant, spec::Variant::Tp);
  w.model().select(1);
  auto* roles = w.roleClusters();
  EXPECT_FALSE(roles->isShowingMessage()) << roles->emptyReason().toStdString();
  EXPECT_GT(roles->pointCount(), 2);
  EXPECT_TRUE(roles->caption().contains(QRegularExpression("layer \\d+, head \\d+"))) << roles->caption().toStdString();
  EXPECT_TRUE(roles->caption().startsWith("Role vectors of layer 1, head 0")) << roles->caption().toStdString();

  w.model().select(0);
  EXPECT_TRUE(roles->isShowingMessage());
  EXPECT_TRUE(roles->emptyReason().contains("has no role vectors")) << roles->emptyReason().toStdString();
  EXPECT_TRUE(roles->emptyReason().contains(w.model().run(0).name)) << roles->emptyReason().toStdString();

  // And back: the TP run's points again.
  w.model().select(1);
  EXPECT_FALSE(roles->isShowingMessage());
  EXPECT_GT(roles->pointCount(), 2);
}

// Finding N14: the fork question promised "with your edit applied" for a click on a Kronecker C,
// which cannot be replayed on the fork; and it did not say that the fork's warm-up starts again.
TEST(DailyToolViews, TheForkQuestionSaysWhatHappensToTheEdit) {
  app::CoreEditor editor;
  auto s = spec::makeSpecPreset("thsa");
  s.sizes.H = 2;
  s.sizes.D = 4;
  s.sizes.R = 8;
  s.core = spec::makeCorePreset("skip_left", 2, 4);
  ASSERT_EQ(s.core->structure, spec::CoreStructure::Kronecker);
  editor.setSpec(s);
  editor.setEditable(false);
  QSignalSpy asked(&editor, &app::CoreEditor::forkRequested);
  editor.editCell(1, 2);
  ASSERT_EQ(asked.count(), 1);
  QString text = editor.forkEditText();
  EXPECT_FALSE(text.contains("with your edit applied")) << text.toStdString();
  EXPECT_TRUE(text.contains("repeat your edit on the fork")) << text.toStdString();
  EXPECT_TRUE(text.contains("kronecker C")) << text.toStdString();
  EXPECT_TRUE(text.contains("warm-up")) << text.toStdString();
  EXPECT_FALSE(editor.replayPendingEdit()) << "nothing to replay";
  // A dense C: the click is replayed on the fork, and the question says so.
  spec::CoreSpec dense;
  dense.preset = "custom";
  dense.structure = spec::CoreStructure::Dense;
  dense.dense_values = spec::materializeCore(*s.core, 2, 4, 8);
  dense.trainable_mask = spec::coreTrainableEntries(*s.core, 2, 4, 8);
  s.core = dense;
  editor.setSpec(s);
  editor.setEditable(false);
  editor.editCell(1, 2);
  text = editor.forkEditText();
  EXPECT_TRUE(text.contains("with your edit applied")) << text.toStdString();
  EXPECT_TRUE(text.contains("warm-up")) << text.toStdString();
}

// Finding N30: "No stable rank yet" for a run that never has one (no core C) said the wrong thing.
TEST(DailyToolViews, TheStableRankViewSaysWhyARunWithoutCoreHasNone) {
  app::MainWindow w(testOptions());
  int withoutCore = -1, withCore = -1;
  for (int i = 0; i < w.model().count(); ++i) {
    w.model().select(i);
    if (!w.model().currentSpec().core && withoutCore < 0) withoutCore = i;
    if (w.model().currentSpec().core && withCore < 0 && w.model().currentRun().runDir.isEmpty()) withCore = i;
  }
  ASSERT_GE(withoutCore, 0);
  ASSERT_GE(withCore, 0);
  w.model().select(withoutCore);
  QApplication::processEvents();
  const QString none = w.stableRankPlot()->emptyReason();
  EXPECT_TRUE(none.contains("has no core matrix C, so no stable rank")) << none.toStdString();
  EXPECT_FALSE(none.contains("yet")) << none.toStdString();
  // A design edit that gives this run a core (a lesson step's variant) changes what it says.
  auto withC = w.model().currentSpec();
  withC.variant = spec::Variant::Thsa;
  withC.sizes.R = withC.sizes.H * withC.sizes.D;
  withC.core = spec::makeCorePreset("thsa", withC.sizes.H, withC.sizes.D);
  w.model().editDesign(withC, "variant thsa");
  QApplication::processEvents();
  EXPECT_TRUE(w.stableRankPlot()->emptyReason().contains("No stable rank yet"))
      << w.stableRankPlot()->emptyReason().toStdString();
  w.model().select(withCore);
  QApplication::processEvents();
  EXPECT_TRUE(w.stableRankPlot()->emptyReason().contains("No stable rank yet"))
      << w.stableRankPlot()->emptyReason().toStdString();
}
