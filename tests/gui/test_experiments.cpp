// The Experiments dock and Experiments > Sweep this design (issue 14), offscreen: a planned sweep is
// shown with its trials and comparison, a real `tensorscope sweep run` started from the dock trains
// it while the tables update, a trial opens as a run, and the dialog plans a sweep of the current
// design or says why it cannot.
#include <QCheckBox>
#include <QDockWidget>
#include <QDoubleSpinBox>
#include <QSpinBox>
#include <QFile>
#include <QFileInfo>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QTableWidget>
#include <QTemporaryDir>
#include <gtest/gtest.h>

#include "gui/design/design_panel.h"
#include "gui/document/app_paths.h"
#include "gui/experiments/experiments_panel.h"
#include "gui/experiments/sweep_dialog.h"
#include "model_core/sweep.h"
#include "spec/attention_spec.h"
#include "window_test_util.h"

namespace tensorscope::test {
namespace {

/// A tiny copy-task decoder (trains in about a second).
model_core::RunConfig tinyCopy(int steps) {
  model_core::RunConfig c;
  c.task.name = "copy";
  c.task.seq_len = 24;
  c.task.algorithmic_length = 5;
  c.model.layers = 2;
  c.model.d_model = 16;
  c.model.ffn_multiplier = 2;
  auto s = spec::makeSpecPreset("mhsa");
  s.sizes.F = 16;
  s.sizes.H = 2;
  s.sizes.D = 8;
  s.sizes.R = 16;
  s.sizes.seq_len = 24;
  s.causal = true;
  c.model.attention = {s};
  c.train.steps = steps;
  c.train.batch = 4;
  c.train.warmup = 2;
  c.train.eval_interval = 10;
  c.train.eval_examples = 8;
  c.train.checkpoint_interval = 10;
  c.train.inspect_interval = 10;
  return c;
}

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

  panel->setProgram(TS_TENSORSCOPE_BINARY);
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

TEST(ExperimentsDock, StopKeepsCheckpointsAndRunResumes) {
  QTemporaryDir tmp;
  app::MainWindow w(testOptions());
  const QString dir = planTiny(tmp.filePath("sweep"), 400, 1);
  ASSERT_TRUE(w.openSweepDirectory(dir));
  auto* panel = w.experiments();
  panel->setProgram(TS_TENSORSCOPE_BINARY);
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
