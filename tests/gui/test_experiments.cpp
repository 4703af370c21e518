// The Experiments dock and Experiments > Sweep this design (issue 14), offscreen: a planned sweep is
// shown with its trials and comparison, a real `tensorscope sweep run` started from the dock trains
// it while the tables update, a trial opens as a run, and the dialog plans a sweep of the current
// design or says why it cannot.
#include <QCheckBox>
#include <QDockWidget>
#include <QDoubleSpinBox>
#include <QSpinBox>
#include <QSplitter>
#include <QFile>
#include <QFileInfo>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QComboBox>
#include <QSignalSpy>
#include <QTabWidget>
#include <QTableWidget>
#include <QTemporaryDir>
#include <gtest/gtest.h>

#include "gui/design/design_panel.h"
#include "gui/document/app_paths.h"
#include "gui/experiments/experiments_panel.h"
#include "gui/experiments/sweep_dialog.h"
#include "gui/shell/dock_layouts.h"
#include "model_core/sweep.h"
#include "model_core/sweep_report_text.h"
#include "viz/difference_plot.h"
#include "spec/attention_spec.h"
#include "window_test_util.h"
#include "test_paths.h"

namespace tensorscope::test {
namespace {

QString planTiny(const QString& dir, int steps, int seeds) {
  app::DesignSweepChoice c;
  c.name = "tiny";
  c.designs = {"thsa"};
  c.seeds = seeds;
  c.steps = steps;
  c.metric = "accuracy";
  c.tolerance = 0.5;
  const auto sweep = model_core::sweepFromJson(app::designSweepJson(tinyCopy(steps), c).dump());
  model_core::writeSweepDirectory(dir.toStdString(), sweep, model_core::expandSweep(sweep));
  return dir;
}

TEST(ExperimentsDock, ARealSweepRunStartedFromTheDockTrainsAndShowsItsComparison) {
  QTemporaryDir tmp;
  app::MainWindow w(testOptions());
  w.resize(1500, 950);
  w.show();
  const QString dir = planTiny(tmp.filePath("sweep"), 30, 2);
  ASSERT_TRUE(w.openSweepDirectory(dir));
  auto* panel = w.experiments();
  EXPECT_TRUE(w.findChild<QDockWidget*>("Experiments")->isVisible());
  panel->refresh(true);
  ASSERT_EQ(panel->trialsTable()->rowCount(), 4);
  EXPECT_EQ(panel->trialsTable()->item(0, 0)->text(), "000-this_design-s1");
  EXPECT_EQ(panel->trialsTable()->item(3, 1)->text(), "pending");
  EXPECT_EQ(panel->designsTable()->rowCount(), 2);
  EXPECT_EQ(panel->summary()->text(), "4 pending");

  panel->setProgram(QString::fromStdString(ts_test::tensorscopeBinary()));
  ASSERT_TRUE(panel->startRun());
  EXPECT_TRUE(panel->running());
  ASSERT_TRUE(waitFor([&] { return !panel->running(); }, 240000));
  panel->refresh(true);
  EXPECT_EQ(panel->summary()->text(), "4 finished");
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(panel->trialsTable()->item(i, 1)->text(), "finished");
    EXPECT_EQ(panel->trialsTable()->item(i, 2)->text(), "30/30");
    EXPECT_TRUE(panel->trialsTable()->item(i, 5)->text().startsWith("local"));
  }
  // The comparison row says what `sweep report` says.
  const auto report = model_core::buildReport(model_core::readSweepPlan(dir.toStdString()));
  EXPECT_EQ(panel->designsTable()->item(1, 0)->text(), "thsa");
  EXPECT_EQ(panel->designsTable()->item(1, 2)->text(), "2/2");
  EXPECT_EQ(panel->designsTable()->item(1, 3)->text(),
            QString::number(report.designs[1].mean, 'f', 3) + " ± " + QString::number(report.designs[1].std, 'f', 3));
  EXPECT_FALSE(panel->snapshot().svg.isEmpty());
  screenshotIfAsked(w, "experiments_dock");
  // Double-clicking a trial opens its run in the explorer.
  const int runs = w.model().count();
  Q_EMIT panel->trialsTable()->cellDoubleClicked(2, 0);
  ASSERT_EQ(w.model().count(), runs + 1);
  EXPECT_TRUE(w.model().currentRun().runDir.endsWith("002-thsa-s1/run"));
  // Named by its trial, so that two opened trials are not both "run" (finding N21).
  EXPECT_EQ(w.model().currentRun().name, "trial 002-thsa-s1");
  Q_EMIT panel->trialsTable()->cellDoubleClicked(0, 0);
  EXPECT_EQ(w.model().currentRun().name, "trial 000-this_design-s1");
}

/// Writes a finished result with this final metric (the report reads nothing else of it).
void finish(const model_core::SweepPlan& plan, const model_core::Trial& t, double metric) {
  model_core::TrialResult r;
  r.status = "finished";
  r.steps = t.config.train.steps;
  r.final_metric = metric;
  r.best_metric = metric;
  r.best_step = r.steps;
  r.tokens_per_second = 1000;
  r.where = "local";
  QFile f(QString::fromStdString(plan.trialDir(t) + "/result.json"));
  ASSERT_TRUE(f.open(QIODevice::WriteOnly | QIODevice::Truncate));
  f.write(QByteArray::fromStdString(model_core::trialResultToJson(r)));
}

/// Every cell of the verdict view is the report's text of it (model_core::reportRowTexts, which
/// the md report prints), and every bar of the figure is the report's comparison.
void expectTheReportsVerdicts(app::ExperimentsPanel& panel, const model_core::SweepReport& report) {
  using V = app::ExperimentsPanel;
  const auto rows = model_core::reportRowTexts(report);
  const auto* t = panel.verdictTable();
  ASSERT_EQ(t->rowCount(), static_cast<int>(rows.size()));
  const auto md = model_core::formatReport(report, "md");
  std::size_t compared = 0;
  for (int i = 0; i < t->rowCount(); ++i) {
    const auto& row = rows[static_cast<std::size_t>(i)];
    SCOPED_TRACE(row.design);
    const auto at = [&](int column) { return t->item(i, column)->text().toStdString(); };
    EXPECT_EQ(at(V::VDesign), row.design);
    EXPECT_EQ(at(V::VSeeds), row.seeds);
    EXPECT_EQ(at(V::VMean), row.mean_std);
    EXPECT_NE(md.find(row.mean_std), std::string::npos) << md;
    if (!row.compared) {
      EXPECT_EQ(at(V::VBaseline), "(the baseline)");
      EXPECT_EQ(at(V::VVerdict), "");
      continue;
    }
    ++compared;
    EXPECT_EQ(at(V::VBaseline), row.baseline);
    EXPECT_EQ(at(V::VCompared), row.compared_seeds);
    EXPECT_EQ(at(V::VDifference), row.difference);
    EXPECT_EQ(at(V::VWelch), row.welch_p);
    EXPECT_EQ(at(V::VSignFlip), row.sign_flip_p);
    EXPECT_EQ(at(V::VDecidedBy), row.decided_by);
    EXPECT_EQ(at(V::VHolm), row.p_holm);
    EXPECT_EQ(at(V::VVerdict), row.verdict);
    // The md report's row of "Against the baseline", cell for cell.
    const std::string mdRow = "| " + at(V::VDesign) + " | " + at(V::VBaseline) + " | " + at(V::VCompared) + " | " +
                              at(V::VDifference) + " | " + at(V::VWelch) + " | " + at(V::VSignFlip) + " | " +
                              at(V::VDecidedBy) + " | " + at(V::VHolm) + " | " + at(V::VVerdict) + " |";
    EXPECT_NE(md.find(mdRow), std::string::npos) << mdRow << "\n" << md;
  }
  const auto& bars = panel.differencePlot()->rows();
  ASSERT_EQ(bars.size(), compared);
  std::size_t k = 0;
  for (const auto& d : report.designs) {
    if (!d.comparison) continue;
    const auto& c = *d.comparison;
    const auto& b = bars[k++];
    EXPECT_EQ(b.design.toStdString(), d.design);
    EXPECT_EQ(b.tested, c.tested);
    EXPECT_EQ(b.direction, c.direction);
    EXPECT_EQ(b.verdict.toStdString(), c.verdict);
    if (c.tested) {  // the very doubles of the report
      EXPECT_EQ(b.difference, c.difference);
      EXPECT_EQ(b.low, c.ci_low);
      EXPECT_EQ(b.high, c.ci_high);
    }
  }
}

/// "this design" (tiny MHSA), dense THSA and MQA over three seeds, compared on the accuracy.
QString planDuel(const QString& dir, int steps) {
  app::DesignSweepChoice c;
  c.name = "duel";
  c.designs = {"thsa", "mqa"};
  c.seeds = 3;
  c.steps = steps;
  c.metric = "accuracy";
  c.matchOn = "";
  const auto sweep = model_core::sweepFromJson(app::designSweepJson(tinyCopy(steps), c).dump());
  model_core::writeSweepDirectory(dir.toStdString(), sweep, model_core::expandSweep(sweep));
  return dir;
}

// The duel (issue 37): results written into a planned sweep, as the trials would write them. The
// verdict view shows the report's numbers, and a result that lands changes them at the next read.
// The accuracies: this design (0.50, 0.52, 0.54); thsa (0.60, 0.63, 0.61), three pairs all higher:
// Welch decides (fewer than 6 pairs); mqa first one seed (not tested), then three.
TEST(ExperimentsDock, TheVerdictViewShowsTheReportsNumbersAndFollowsLandingResults) {
  QTemporaryDir tmp;
  const QString dir = planDuel(tmp.filePath("duel"), 10);
  const auto plan = model_core::readSweepPlan(dir.toStdString());
  ASSERT_EQ(plan.trials.size(), 9u);
  ASSERT_EQ(plan.trials[3].design, "thsa");
  ASSERT_EQ(plan.trials[6].design, "mqa");
  const double base[] = {0.50, 0.52, 0.54}, thsa[] = {0.60, 0.63, 0.61};
  for (int i = 0; i < 3; ++i) {
    finish(plan, plan.trials[std::size_t(i)], base[i]);
    finish(plan, plan.trials[std::size_t(3 + i)], thsa[i]);
  }
  finish(plan, plan.trials[6], 0.51);
  app::ExperimentsPanel panel;
  QSignalSpy messages(&panel, &app::ExperimentsPanel::message);
  QString error;
  ASSERT_TRUE(panel.openSweep(dir, &error)) << error.toStdString();
  panel.refresh(true);
  EXPECT_EQ(panel.views()->currentIndex(), 0) << "the verdicts are the first view";
  const auto first = model_core::buildReport(plan);
  expectTheReportsVerdicts(panel, first);
  // thsa: higher, Welch's p; mqa: one seed, not tested, no bar.
  EXPECT_EQ(first.designs[1].comparison->verdict.rfind("higher accuracy than this design, p = ", 0), 0u)
      << first.designs[1].comparison->verdict;
  EXPECT_EQ(panel.verdictTable()->item(2, app::ExperimentsPanel::VVerdict)->text(),
            "not tested at n = 1 and 3 (two finished seeds of each design are needed)");
  EXPECT_EQ(panel.differencePlot()->barCount(), 1);
  EXPECT_TRUE(panel.verdictHeading()->text().contains("design = this design")) << panel.verdictHeading()->text().toStdString();
  EXPECT_TRUE(panel.verdictHeading()->text().contains("Holm over 1 tested comparison ·"))
      << panel.verdictHeading()->text().toStdString();
  EXPECT_TRUE(panel.verdictHeading()->toolTip().toStdString() == model_core::reportDecisionRule(first));

  // Two more mqa seeds land: the next read shows the new report.
  finish(plan, plan.trials[7], 0.49);
  finish(plan, plan.trials[8], 0.53);
  panel.refresh(true);
  const auto second = model_core::buildReport(plan);
  ASSERT_TRUE(second.designs[2].comparison->tested);
  expectTheReportsVerdicts(panel, second);
  EXPECT_EQ(panel.verdictTable()->item(2, app::ExperimentsPanel::VSeeds)->text(), "3/3");
  EXPECT_EQ(panel.verdictTable()->item(2, app::ExperimentsPanel::VCompared)->text(), "3 vs 3 (3 paired)");
  EXPECT_EQ(panel.differencePlot()->barCount(), 2);
  EXPECT_TRUE(panel.verdictHeading()->text().contains("Holm over 2 tested comparisons")) << panel.verdictHeading()->text().toStdString();
  bool said = false;  // the change is said in the status bar (thsa's too: Holm now corrects over two)
  for (const auto& m : messages) {
    const auto text = m.at(0).toString();
    said = said || (text.startsWith("Verdicts changed: ") && text.contains("mqa: " + QString::fromStdString(second.designs[2].comparison->verdict)));
  }
  EXPECT_TRUE(said);

  // The figure exports like every figure (PNG, SVG, PDF and its data), with the bars drawn.
  panel.resize(1200, 700);
  panel.QWidget::show();
  for (int i = 0; i < 8; ++i) QApplication::processEvents();
  auto* fig = panel.differencePlot();
  fig->replotNow();
  const QRectF bar = fig->barRect(0);  // thsa's interval: above zero (higher accuracy), all of it
  ASSERT_FALSE(bar.isEmpty());
  EXPECT_GT(bar.left(), fig->zeroPixelX());
  viz::FigureOptions options;
  for (const char* ext : {"png", "svg", "pdf"}) {
    const QString path = tmp.filePath(QString("differences.") + ext);
    EXPECT_TRUE(fig->exportFigure(path, options)) << fig->exportError().toStdString();
    EXPECT_GT(QFileInfo(path).size(), 0) << ext;
  }
  const QString csv = fig->csvText();
  const auto& c = *second.designs[1].comparison;
  EXPECT_TRUE(csv.startsWith("design,tested,difference,ci95_low,ci95_high,verdict\n")) << csv.toStdString();
  EXPECT_TRUE(csv.contains("thsa,true," + QString::number(c.difference, 'g', 10) + "," + QString::number(c.ci_low, 'g', 10)))
      << csv.toStdString();
}

// A sweep of one design has nothing to compare: the view says so and the figure is skipped by
// File > Export figures with that reason.
TEST(ExperimentsDock, OneDesignHasNoDuel) {
  QTemporaryDir tmp;
  app::DesignSweepChoice c;
  c.name = "alone";
  c.designs = {"thsa"};
  c.seeds = 1;
  c.steps = 10;
  c.matchOn = "";
  auto sweep = app::designSweepJson(tinyCopy(10), c);
  sweep["axes"][0]["values"].erase(1);  // only "this design"
  const auto file = model_core::sweepFromJson(sweep.dump());
  model_core::writeSweepDirectory(tmp.filePath("alone").toStdString(), file, model_core::expandSweep(file));
  app::ExperimentsPanel panel;
  ASSERT_TRUE(panel.openSweep(tmp.filePath("alone")));
  panel.refresh(true);
  EXPECT_EQ(panel.verdictTable()->rowCount(), 1);
  EXPECT_EQ(panel.verdictHeading()->text(), "One design: nothing to compare");
  EXPECT_FALSE(panel.differencePlot()->hasFigure());
  EXPECT_EQ(panel.differencePlot()->emptyReason(), "One design: nothing to compare");
}

/// The window at `size` with the Experiments layout, its duel in front, saved when asked.
void screenshotDuel(app::MainWindow& w, const QSize& size, const QString& name) {
  const QString dir = qEnvironmentVariable("TS_GUI_SCREENSHOT_DIR");
  if (dir.isEmpty()) return;
  w.resize(size);
  w.show();
  for (int i = 0; i < 4; ++i) QApplication::processEvents();
  app::applyDockLayout(w, app::DockLayout::Experiments, w.defaultLayout());
  w.experiments()->views()->setCurrentIndex(0);
  for (int i = 0; i < 8; ++i) QApplication::processEvents();
  QDir().mkpath(dir);
  const QString path = QDir(dir).filePath(name + ".png");
  EXPECT_TRUE(w.grab().toImage().save(path)) << path.toStdString();
  std::printf("[ screenshot ] %s\n", qPrintable(path));
}

// A real small duel: three designs over three seeds trained by `tensorscope sweep run` from the
// dock; the verdict view ends with the report's numbers (the screenshots of docs/sweeps.md).
TEST(ExperimentsDock, ARealDuelEndsWithTheReportsVerdicts) {
  QTemporaryDir tmp;
  app::MainWindow w(testOptions());
  w.resize(1600, 1000);
  w.show();
  const QString dir = planDuel(tmp.filePath("duel"), 40);
  ASSERT_TRUE(w.openSweepDirectory(dir));
  auto* panel = w.experiments();
  panel->setProgram(QString::fromStdString(ts_test::tensorscopeBinary()));
  ASSERT_TRUE(panel->startRun());
  ASSERT_TRUE(waitFor([&] { return !panel->running(); }, 400000));
  panel->refresh(true);
  EXPECT_EQ(panel->summary()->text(), "9 finished");
  const auto report = model_core::buildReport(model_core::readSweepPlan(dir.toStdString()));
  expectTheReportsVerdicts(*panel, report);
  EXPECT_EQ(panel->differencePlot()->barCount(), 2);
  screenshotDuel(w, {1600, 1000}, "experiments_duel_1600x1000");
  screenshotDuel(w, {1280, 800}, "experiments_duel_1280x800");
}

// The duel on a laptop screen: at 1280 x 800 and 1600 x 1000 with the Experiments layout every
// verdict row is in view and the verdict words of each are visible without scrolling (before, the
// table showed two of three rows and the verdict was its eleventh column, off to the right); the
// figure keeps the rest of the dock. A divider the user dragged stays where it was put.
TEST(ExperimentsDock, EveryVerdictIsInViewOnALaptopScreen) {
  QTemporaryDir tmp;
  const QString dir = planDuel(tmp.filePath("duel"), 10);
  const auto plan = model_core::readSweepPlan(dir.toStdString());
  ASSERT_EQ(plan.trials.size(), 9u);
  const double values[] = {0.50, 0.52, 0.54, 0.60, 0.63, 0.61, 0.51, 0.49, 0.53};
  for (std::size_t i = 0; i < 9; ++i) finish(plan, plan.trials[i], values[i]);
  app::MainWindow w(testOptions());
  ASSERT_TRUE(w.openSweepDirectory(dir));
  auto* panel = w.experiments();
  panel->refresh(true);
  auto* table = panel->verdictTable();
  ASSERT_EQ(table->rowCount(), 3);
  for (const QSize size : {QSize(1280, 800), QSize(1600, 1000)}) {
    SCOPED_TRACE(std::to_string(size.width()) + "x" + std::to_string(size.height()));
    w.resize(size);
    w.show();
    for (int i = 0; i < 4; ++i) QApplication::processEvents();
    app::applyDockLayout(w, app::DockLayout::Experiments, w.defaultLayout());
    panel->views()->setCurrentIndex(0);
    for (int i = 0; i < 8; ++i) QApplication::processEvents();
    const QRect viewport = table->viewport()->rect();
    for (int row = 0; row < table->rowCount(); ++row) {
      const QRect cell = table->visualItemRect(table->item(row, app::ExperimentsPanel::VVerdict));
      EXPECT_TRUE(viewport.contains(cell.topLeft()) && cell.bottom() <= viewport.bottom())
          << "row " << row << " at y " << cell.top() << ".." << cell.bottom() << " of " << viewport.height();
      EXPECT_EQ(table->columnViewportPosition(app::ExperimentsPanel::VVerdict), table->columnWidth(0))
          << "the verdict is the second column";
      if (row > 0) EXPECT_FALSE(table->item(row, app::ExperimentsPanel::VVerdict)->text().isEmpty());  // row 0: the baseline
    }
    EXPECT_GE(panel->differencePlot()->height(), 80) << "the figure keeps room for its bars";
    screenshotDuel(w, size, QString("experiments_verdicts_%1x%2").arg(size.width()).arg(size.height()));
  }
  // The user's divider stays: a drag, then a resize of the window.
  auto* split = qobject_cast<QSplitter*>(table->parentWidget());
  ASSERT_NE(split, nullptr);
  const int total = split->sizes()[0] + split->sizes()[1];
  split->setSizes({total / 5, total - total / 5});
  Q_EMIT split->splitterMoved(total / 5, 1);
  const int dragged = split->sizes()[0];
  w.resize(1280, 800);
  for (int i = 0; i < 8; ++i) QApplication::processEvents();
  EXPECT_LE(split->sizes()[0], dragged) << "a resize scales the user's sizes down, it does not refit them";
}

TEST(ExperimentsDock, StopKeepsCheckpointsAndRunResumes) {
  QTemporaryDir tmp;
  app::MainWindow w(testOptions());
  const QString dir = planTiny(tmp.filePath("sweep"), 400, 1);
  ASSERT_TRUE(w.openSweepDirectory(dir));
  auto* panel = w.experiments();
  panel->setProgram(QString::fromStdString(ts_test::tensorscopeBinary()));
  ASSERT_TRUE(panel->startRun());
  const auto plan = model_core::readSweepPlan(dir.toStdString());
  ASSERT_TRUE(waitFor([&] { return model_core::trialStatus(plan, plan.trials[0]).step >= 30; }, 120000));
  panel->stopRun();
  ASSERT_TRUE(waitFor([&] { return !panel->running(); }, 60000));
  const auto st = model_core::trialStatus(plan, plan.trials[0]);
  EXPECT_EQ(st.state, model_core::TrialState::Interrupted) << model_core::trialStateName(st.state);
  ASSERT_TRUE(panel->startRun());
  ASSERT_TRUE(waitFor([&] { return !panel->running(); }, 240000));
  panel->refresh(true);
  EXPECT_EQ(panel->summary()->text(), "2 finished");
}

TEST(ExperimentsDock, ADirectoryThatIsNoSweepIsRefusedWithTheReason) {
  QTemporaryDir tmp;
  app::ExperimentsPanel panel;
  QString error;
  EXPECT_FALSE(panel.openSweep(tmp.path(), &error));
  EXPECT_TRUE(error.contains("holds no sweep plan (plan.json)")) << error.toStdString();
  EXPECT_TRUE(panel.sweepDir().isEmpty());
}

TEST(ExperimentsDock, ADamagedTrialResultIsNamedAndTheRestOfTheSweepStaysShown) {
  // Finding N12: one unreadable result.json left the dock with the sweep's name and empty tables.
  QTemporaryDir tmp;
  const QString dir = planTiny(tmp.filePath("sw"), 10, 2);
  const auto plan = model_core::readSweepPlan(dir.toStdString());
  ASSERT_EQ(plan.trials.size(), 4u);
  for (const char* damage : {"{\"format\": \"tensorscope.trial_result\", \"version\": 1, \"status\": \"won\"}", "{not json", ""}) {
    QFile f(QString::fromStdString(plan.trialDir(plan.trials[1]) + "/result.json"));
    ASSERT_TRUE(f.open(QIODevice::WriteOnly | QIODevice::Truncate));
    f.write(damage);
    f.close();
    app::ExperimentsPanel panel;
    QString error;
    ASSERT_TRUE(panel.openSweep(dir, &error)) << error.toStdString();
    panel.refresh(true);
    ASSERT_EQ(panel.trialsTable()->rowCount(), 4) << "damage: " << damage;
    EXPECT_EQ(panel.trialsTable()->item(1, 1)->text(), "failed");
    EXPECT_TRUE(panel.trialsTable()->item(1, 1)->toolTip().contains("result.json is damaged"))
        << panel.trialsTable()->item(1, 1)->toolTip().toStdString();
    EXPECT_EQ(panel.designsTable()->rowCount(), 2);
    EXPECT_TRUE(panel.summary()->text().contains("1 failed")) << panel.summary()->text().toStdString();
    EXPECT_TRUE(panel.summary()->text().contains("damaged")) << panel.summary()->text().toStdString();
    if (!qEnvironmentVariable("TS_GUI_SCREENSHOT_DIR").isEmpty() && std::string(damage).empty()) {
      panel.resize(900, 520);
      static_cast<QWidget&>(panel).show();
      for (int i = 0; i < 8; ++i) QApplication::processEvents();
      QDir().mkpath(qEnvironmentVariable("TS_GUI_SCREENSHOT_DIR"));
      EXPECT_TRUE(panel.grab().toImage().save(QDir(qEnvironmentVariable("TS_GUI_SCREENSHOT_DIR")).filePath("experiments_damaged_result.png")));
    }
  }
}

TEST(ExperimentsDock, AShippedSweepFileIsPlannedAndOpenedWithoutTheCommandLine) {
  // Finding N27: Open sweep… took only planned folders; the shipped files needed `sweep plan` first.
  QTemporaryDir tmp;
  app::ExperimentsPanel panel;
  const QString file = app::resourceDirectory("sweeps") + "/heads_vs_rank.json";
  ASSERT_TRUE(QFileInfo::exists(file)) << file.toStdString();
  QString error;
  const QString dir = panel.planSweepFile(file, tmp.filePath("sweeps"), &error);
  ASSERT_FALSE(dir.isEmpty()) << error.toStdString();
  EXPECT_EQ(panel.sweepDir(), dir);
  const auto plan = model_core::readSweepPlan(dir.toStdString());
  panel.refresh(true);
  EXPECT_EQ(panel.trialsTable()->rowCount(), static_cast<int>(plan.trials.size()));
  EXPECT_GT(plan.trials.size(), 1u);
  // Planned again: a folder of its own, never over the first.
  const QString again = panel.planSweepFile(file, tmp.filePath("sweeps"), &error);
  EXPECT_EQ(again, dir + "-2");
  // A file that is no sweep: nothing planned, the reader's words.
  QFile bad(tmp.filePath("bad.json"));
  ASSERT_TRUE(bad.open(QIODevice::WriteOnly));
  bad.write("{\"format\": \"tensorscope.sweep\", \"version\": 1}");
  bad.close();
  EXPECT_TRUE(panel.planSweepFile(bad.fileName(), tmp.filePath("sweeps"), &error).isEmpty());
  EXPECT_TRUE(error.contains("name")) << error.toStdString();
  EXPECT_EQ(panel.sweepDir(), again) << "the open sweep stays";
}

TEST(SweepThisDesign, PlansTheCurrentDesignAgainstTheChosenOnesAtEqualParameters) {
  QTemporaryDir tmp;
  app::SweepDialog dialog("Tiny", tinyCopy(50), tmp.filePath("planned"));
  dialog.designBox("skip_right")->setChecked(true);
  dialog.designBox("trainable_heads_only")->setChecked(true);
  dialog.seedsBox()->setValue(2);
  dialog.toleranceBox()->setValue(40);
  dialog.accept();
  ASSERT_EQ(dialog.planned(), tmp.filePath("planned")) << dialog.error().toStdString();
  const auto plan = model_core::readSweepPlan(tmp.filePath("planned").toStdString());
  ASSERT_EQ(plan.trials.size(), 10u);  // this design, mhsa, skip_right, trainable_heads_only, thsa × 2 seeds
  const auto& ref = plan.trials[0];
  EXPECT_EQ(ref.labels[0].second, "this design");
  for (const auto& t : plan.trials) {
    EXPECT_EQ(t.config.train.steps, 50);
    EXPECT_LE(std::abs(double(t.attention_parameters - ref.attention_parameters)) / double(ref.attention_parameters), 0.4)
        << t.name;
  }
  EXPECT_EQ(plan.trials[6].labels[0].second, "trainable_heads_only");
  EXPECT_EQ(plan.trials[6].config.model.attention[0].sizes.D, 1);
  EXPECT_EQ(plan.trials[6].matched.rfind("H=", 0), 0u);
}

TEST(SweepThisDesign, AlsoVariesAConfigFieldFromTheDesignDock) {
  QTemporaryDir tmp;
  app::SweepDialog dialog("Tiny", tinyCopy(50), tmp.filePath("planned"));
  dialog.designBox("thsa")->setChecked(false);
  dialog.seedsBox()->setValue(1);
  dialog.toleranceBox()->setValue(40);
  dialog.alsoPathEdit()->setText("train.lr");
  dialog.alsoValuesEdit()->setText("0.001, 0.003");
  if (!qEnvironmentVariable("TS_GUI_SCREENSHOT_DIR").isEmpty()) {  // how the dialog looks, at its own size
    dialog.show();
    for (int i = 0; i < 8; ++i) QApplication::processEvents();
    QDir().mkpath(qEnvironmentVariable("TS_GUI_SCREENSHOT_DIR"));
    EXPECT_TRUE(dialog.grab().toImage().save(QDir(qEnvironmentVariable("TS_GUI_SCREENSHOT_DIR")).filePath("sweep_dialog.png")));
  }
  dialog.accept();
  ASSERT_EQ(dialog.planned(), tmp.filePath("planned")) << dialog.error().toStdString();
  const auto plan = model_core::readSweepPlan(tmp.filePath("planned").toStdString());
  ASSERT_EQ(plan.trials.size(), 4u);  // (this design, mhsa) × two learning rates
  EXPECT_EQ(plan.trials[1].name, "001-this_design-0.003-s1");
  EXPECT_DOUBLE_EQ(plan.trials[1].config.train.lr, 0.003);
  // A bad path is refused with the config reader's words; the Design dock's button opens the dialog.
  app::SweepDialog bad("Tiny", tinyCopy(50), tmp.filePath("bad"));
  bad.alsoPathEdit()->setText("train.colour");
  bad.alsoValuesEdit()->setText("red");
  bad.accept();
  EXPECT_TRUE(bad.error().contains("unknown field \"colour\"")) << bad.error().toStdString();
  app::MainWindow w(testOptions());
  EXPECT_NE(w.designPanel()->findChild<QPushButton*>("sweepDesign"), nullptr);
}

TEST(SweepThisDesign, DescribesSkipLeftAndSkipRightAsTheContractDefinesThem) {
  // docs/attention-variants.md: skip-left I_H ⊗ c₂c₃ᵀ (heads apart, 2D parameters), skip-right
  // C₁ ⊗ 1_D1_Dᵀ (H² parameters, heads mixed). The dialog once said it the other way round.
  QTemporaryDir tmp;
  app::SweepDialog dialog("Tiny", tinyCopy(50), tmp.filePath("planned"));
  const QString left = dialog.designBox("skip_left")->text(), right = dialog.designBox("skip_right")->text();
  EXPECT_TRUE(left.contains("heads kept apart") && left.contains("rank-one") && left.contains("2D parameters"))
      << left.toStdString();
  EXPECT_FALSE(left.contains("H×H")) << left.toStdString();
  EXPECT_TRUE(right.contains("heads mixed by a trainable H×H core") && right.contains("H² parameters")) << right.toStdString();
  EXPECT_FALSE(right.contains("D×D")) << right.toStdString();
}

// The modern presets as designs and as the baseline, at equal KV cache through the cost model's
// matcher: the dialog writes a sweep file the sweep reader takes, with the chosen baseline as the
// reference, and the preview shows each design's solved size and residual.
TEST(SweepThisDesign, MatchesTheKvCacheOfAModernBaselineAndPreviewsTheResidual) {
  QTemporaryDir tmp;
  app::SweepDialog dialog("Tiny", tinyCopy(50), tmp.filePath("planned"));
  for (const QString& d : app::kTuformerDesigns) dialog.designBox(d)->setChecked(false);
  for (const QString& d : app::kModernDesigns) ASSERT_NE(dialog.designBox(d), nullptr) << d.toStdString();
  dialog.designBox("mqa")->setChecked(true);
  dialog.designBox("gqa")->setChecked(true);
  dialog.baselineBox()->setCurrentIndex(dialog.baselineBox()->findData("mhsa"));
  dialog.matchOnBox()->setCurrentIndex(dialog.matchOnBox()->findData("kv"));
  dialog.matchSizeBox()->setCurrentIndex(dialog.matchSizeBox()->findData("D"));
  EXPECT_TRUE(dialog.matchSizeBox()->isEnabled());
  dialog.seedsBox()->setValue(2);
  dialog.toleranceBox()->setValue(1);
  const auto c = dialog.choice();
  EXPECT_EQ(c.matchOn, "kv");
  EXPECT_EQ(c.baseline, "mhsa");
  // The sweep file: read back by the sweep reader, with the match and the baseline as chosen.
  const auto json = app::designSweepJson(tinyCopy(50), c);
  const auto sweep = model_core::sweepFromJson(json.dump());
  ASSERT_TRUE(sweep.match);
  EXPECT_EQ(sweep.match->on, "kv");
  EXPECT_EQ(sweep.match->reference, "mhsa");
  EXPECT_EQ(sweep.match->solve, "D");
  ASSERT_TRUE(sweep.baseline);
  EXPECT_EQ(sweep.baseline->label, "mhsa");
  ASSERT_EQ(sweep.axes[0].values.size(), 4u);  // this design, then mhsa (the baseline, added), mqa, gqa
  EXPECT_EQ(sweep.axes[0].values[1].label, "mhsa");
  // MHSA keeps 2 H D = 32 key/value elements a layer (H = 2, D = 8); MQA one group: 2 D = 32 at
  // D = 16; GQA 2 groups: 2 G D = 4 D = 32 at D = 8, both exact.
  ASSERT_TRUE(dialog.previewPlan()) << dialog.error().toStdString();
  const auto* table = dialog.planTable();
  ASSERT_EQ(table->rowCount(), 4);
  const auto rowOf = [&](const QString& design) {
    for (int r = 0; r < table->rowCount(); ++r)
      if (table->item(r, 0)->text() == design) return r;
    return -1;
  };
  const int mqa = rowOf("mqa"), gqa = rowOf("gqa"), mhsa = rowOf("mhsa");
  ASSERT_GE(mqa, 0);
  ASSERT_GE(gqa, 0);
  EXPECT_EQ(table->item(mhsa, 1)->text(), "(the baseline)");
  EXPECT_EQ(table->item(mqa, 1)->text(), "D=16");
  EXPECT_EQ(table->item(mqa, 2)->text(), "64 kv");  // two layers
  EXPECT_EQ(table->item(mqa, 3)->text(), "64");
  EXPECT_EQ(table->item(mqa, 4)->text(), "+0.00%");
  EXPECT_EQ(table->item(gqa, 1)->text(), "D=8");
  // Planned: the directory's plan carries the same match.
  dialog.accept();
  ASSERT_EQ(dialog.planned(), tmp.filePath("planned")) << dialog.error().toStdString();
  const auto plan = model_core::readSweepPlan(tmp.filePath("planned").toStdString());
  ASSERT_EQ(plan.trials.size(), 8u);
  EXPECT_EQ(plan.trials[4].design, "mqa");
  EXPECT_EQ(plan.trials[4].matched, "D=16");
  EXPECT_EQ(plan.trials[4].match_on, "kv");
  EXPECT_EQ(plan.trials[4].match_residual, 0);
  if (!qEnvironmentVariable("TS_GUI_SCREENSHOT_DIR").isEmpty()) {
    dialog.show();
    for (int i = 0; i < 8; ++i) QApplication::processEvents();
    EXPECT_TRUE(dialog.grab().toImage().save(QDir(qEnvironmentVariable("TS_GUI_SCREENSHOT_DIR")).filePath("sweep_dialog_match.png")));
  }
}

// A design the matcher cannot match is refused with its reason, in the preview and on Plan: GQA's
// KV cache does not change with H.
TEST(SweepThisDesign, ARefusedMatchSaysTheMatchersReason) {
  QTemporaryDir tmp;
  app::SweepDialog dialog("Tiny", tinyCopy(50), tmp.filePath("planned"));
  for (const QString& d : app::kTuformerDesigns) dialog.designBox(d)->setChecked(false);
  dialog.designBox("gqa")->setChecked(true);
  dialog.matchOnBox()->setCurrentIndex(dialog.matchOnBox()->findData("kv"));
  dialog.matchSizeBox()->setCurrentIndex(dialog.matchSizeBox()->findData("H"));
  EXPECT_FALSE(dialog.previewPlan());
  EXPECT_EQ(dialog.planTable()->rowCount(), 0);
  EXPECT_TRUE(dialog.error().contains("H does not change the KV-cache elements per token of this design"))
      << dialog.error().toStdString();
  dialog.accept();
  EXPECT_TRUE(dialog.planned().isEmpty());
  EXPECT_TRUE(dialog.error().contains("-gqa-s1")) << dialog.error().toStdString();
  EXPECT_FALSE(QFile::exists(tmp.filePath("planned/plan.json")));
  // No budget match: the size and tolerance have nothing to do and are off.
  dialog.matchOnBox()->setCurrentIndex(dialog.matchOnBox()->findData(""));
  EXPECT_FALSE(dialog.matchSizeBox()->isEnabled());
  EXPECT_FALSE(dialog.toleranceBox()->isEnabled());
  ASSERT_TRUE(dialog.previewPlan()) << dialog.error().toStdString();
  EXPECT_EQ(dialog.planTable()->item(1, 1)->text(), "(no budget match)");
}

TEST(SweepThisDesign, SaysWhyItPlansNothing) {
  QTemporaryDir tmp;
  app::SweepDialog dialog("Tiny", tinyCopy(50), tmp.filePath("planned"));
  dialog.toleranceBox()->setValue(0.1);  // no dense core size comes within 0.1% of MHSA here
  dialog.accept();
  EXPECT_TRUE(dialog.planned().isEmpty());
  EXPECT_TRUE(dialog.error().contains("the tolerance is 0.1%")) << dialog.error().toStdString();
  EXPECT_FALSE(QFile::exists(tmp.filePath("planned/plan.json")));
  for (const QString& d : app::kTuformerDesigns) dialog.designBox(d)->setChecked(false);
  dialog.accept();
  EXPECT_EQ(dialog.error(), "Choose at least one design to compare with.");
}

}  // namespace
}  // namespace tensorscope::test
