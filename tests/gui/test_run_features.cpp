// The run features that left MainWindow (issue 12): run directories, metrics curves and the TP
// role projection, each on its own, without a window. (The fork entry is exercised end to end by
// MainWindow.AForkOfAMultiLayerRunTakesEveryLayersLearnedC.)
#include <gtest/gtest.h>

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QTemporaryDir>

#include <cmath>

#include <random>
#include <set>

#include "gui/training/live_docks.h"
#include "gui/training/run_features.h"
#include "gui/document/default_session.h"
#include "gui/document/session_model.h"
#include "gui/training/training_controller.h"
#include "model_core/host_tensor.h"
#include "model_core/run_config.h"
#include "model_core/run_files.h"
#include "viz/curves_plot.h"

using namespace tensorscope;

TEST(RunFeatures, RunDirectoriesAreNeverSharedAndNamedSafely) {
  QTemporaryDir tmp;
  const QString base = tmp.filePath("runs");
  const QDateTime now = QDateTime::fromString("2026-11-24T07:30:05", Qt::ISODate);
  const QString first = app::makeRunDirectory(base, "THSA fork@4 (2)", now);
  EXPECT_EQ(first, base + "/THSA_fork_4_2_-20261124-073005");
  const QString second = app::makeRunDirectory(base, "THSA fork@4 (2)", now);
  EXPECT_EQ(second, first + "-2") << "the same second gets its own directory";
  EXPECT_TRUE(QDir(first).exists() && QDir(second).exists());
  QFile blocker(tmp.filePath("file"));
  ASSERT_TRUE(blocker.open(QIODevice::WriteOnly));
  blocker.close();
  EXPECT_TRUE(app::makeRunDirectory(tmp.filePath("file/runs"), "x", now).isEmpty()) << "a base that cannot exist";
  EXPECT_EQ(app::runsFolderFor("/data/study/sweep.json"), "/data/study/sweep.runs");
  EXPECT_TRUE(app::runsFolderFor("").endsWith("/runs"));
}

TEST(RunFeatures, MetricsCurvesComeFromTheBoundedReader) {
  QTemporaryDir tmp;
  EXPECT_TRUE(app::readMetricsCurves(tmp.path().toStdString()).series.empty()) << "no log yet: no curves";
  QFile log(tmp.filePath("metrics.jsonl"));
  ASSERT_TRUE(log.open(QIODevice::WriteOnly));
  log.write(R"({"kind": "train", "step": 1, "loss": 2.5, "lr": 0.001}
{"kind": "train", "step": 2, "loss": 2.25}
not json
{"kind": "eval", "step": 2, "split": "test", "loss": 2.0, "accuracy": 0.25}
{"kind": "eval", "step": 2, "split": "ood", "loss": 3.0, "accuracy": 0.1, "exact_match": 0.0}
)");
  log.close();
  const auto c = app::readMetricsCurves(tmp.path().toStdString());
  ASSERT_EQ(c.series.count("train loss"), 1u);
  EXPECT_EQ(c.series.at("train loss").steps, (std::vector<double>{1, 2}));
  EXPECT_EQ(c.series.at("train loss").values, (std::vector<double>{2.5, 2.25}));
  EXPECT_EQ(c.series.at("lr").steps, (std::vector<double>{1})) << "a record without lr adds no lr point";
  EXPECT_EQ(c.series.at("accuracy (test)").values, (std::vector<double>{0.25}));
  EXPECT_EQ(c.series.at("exact match (ood)").values, (std::vector<double>{0.0}));
  EXPECT_EQ(c.series.count("accuracy (ood)"), 0u);
  EXPECT_EQ(c.series.at("eval loss (ood)").values, (std::vector<double>{3.0}));
  EXPECT_EQ(c.damaged, 1);
  EXPECT_EQ(c.firstDamaged, 3);
  EXPECT_FALSE(c.firstReason.empty());
}

TEST(RunFeatures, RoleVectorsProjectAndClusterByTheirGroups) {
  // Three tight groups of role vectors in 6 dimensions: PCA keeps most of the variance in two
  // components and k-means with k = 3 finds the groups.
  std::mt19937 rng(3);
  std::normal_distribution<float> noise(0.f, 0.05f);
  model_core::HostTensor roles;
  roles.shape = {30, 6};
  const float centres[3][6] = {{2, 0, 0, 1, 0, 0}, {0, 2, 0, 0, -1, 0}, {-2, -2, 0, 0, 0, 1}};
  for (int i = 0; i < roles.rows(); ++i)
    for (int d = 0; d < roles.cols(); ++d) roles.values.push_back(centres[i % 3][d] + noise(rng));
  const auto p = app::projectRoles(roles, 3);
  ASSERT_EQ(p.xs.size(), 30u);
  ASSERT_EQ(p.clusters.size(), 30u);
  EXPECT_GT(p.explainedPc1 + p.explainedPc2, 0.9);
  std::set<int> labels;
  for (int g = 0; g < 3; ++g) {
    for (int i = g; i < 30; i += 3) EXPECT_EQ(p.clusters[size_t(i)], p.clusters[size_t(g)]) << "point " << i;
    labels.insert(p.clusters[size_t(g)]);
  }
  EXPECT_EQ(labels.size(), 3u);
  EXPECT_EQ(app::projectRoles(roles, 99).clusters.size(), 30u) << "k is capped at the number of vectors";
}

// Issue 13: PCA's signs and k-means' labels are arbitrary, so each inspection's picture jumped.
TEST(RunFeatures, ARolePictureIsTurnedAndRelabelledToMatchThePreviousOne) {
  app::RoleProjection previous;
  previous.xs = {1, 2, -1, 0.5, -2};
  previous.ys = {0, 1, 3, -1, -0.5};
  previous.clusters = {0, 0, 1, 2, 1};
  for (bool reflect : {false, true}) {
    // The same points turned by 70° (and mirrored), with the cluster labels permuted.
    const double t = 70 * M_PI / 180, c = std::cos(t), s = std::sin(t);
    app::RoleProjection next;
    for (size_t i = 0; i < previous.xs.size(); ++i) {
      const double x = previous.xs[i], y = reflect ? -previous.ys[i] : previous.ys[i];
      next.xs.push_back(c * x - s * y);
      next.ys.push_back(s * x + c * y);
    }
    next.clusters = {2, 2, 0, 1, 0};
    app::alignRoleProjection(next, previous);
    for (size_t i = 0; i < previous.xs.size(); ++i) {
      EXPECT_NEAR(next.xs[i], previous.xs[i], 1e-12) << "point " << i << (reflect ? " (mirrored)" : "");
      EXPECT_NEAR(next.ys[i], previous.ys[i], 1e-12) << "point " << i << (reflect ? " (mirrored)" : "");
    }
    EXPECT_EQ(next.clusters, previous.clusters);
  }
  // A picture of other points (another probe) is left as it is.
  app::RoleProjection other;
  other.xs = {1, 2};
  other.ys = {3, 4};
  other.clusters = {1, 0};
  const auto copy = other;
  app::alignRoleProjection(other, previous);
  EXPECT_EQ(other.xs, copy.xs);
  EXPECT_EQ(other.clusters, copy.clusters);
}

namespace {

void writeText(const QString& path, const QString& text) {
  QDir().mkpath(QFileInfo(path).absolutePath());
  QFile f(path);
  ASSERT_TRUE(f.open(QIODevice::WriteOnly)) << path.toStdString();
  f.write(text.toUtf8());
}

// A run directory as the trainer leaves it: config.json (batch 32 x seq_len 64 = 2048 tokens a
// step) and a metrics log of `steps` train records at `tokensPerSecond`, evaluations every 10.
QString writeRun(const QString& dir, int steps, double tokensPerSecond) {
  model_core::RunConfig config = app::defaultSession().runs.front().config;
  config.train.batch = 32;
  config.task.seq_len = 64;
  writeText(dir + "/config.json", QString::fromStdString(model_core::runConfigToJson(config)));
  QString log;
  for (int s = 1; s <= steps; ++s) {
    log += QString(R"({"kind": "train", "step": %1, "loss": %2, "lr": 0.001, "tokens_per_second": %3})")
               .arg(s).arg(3.0 / s).arg(tokensPerSecond) + "\n";
    if (s % 10 == 0)
      log += QString(R"({"kind": "eval", "step": %1, "split": "validation", "loss": %2, "accuracy": 0.5})").arg(s).arg(3.0 / s) + "\n";
  }
  writeText(dir + "/metrics.jsonl", log);
  return dir;
}

}  // namespace

// Issue 13: the time axis. The log holds no clock; the time of a step is its throughput's.
TEST(RunFeatures, MetricsCurvesCarryTheTrainingTimeOfEveryTrainStep) {
  QTemporaryDir tmp;
  writeRun(tmp.path(), 20, 1024.0);  // 2048 tokens at 1024 tokens/s: 2 s a step
  const auto c = app::readMetricsCurves(tmp.path().toStdString());
  const auto& loss = c.series.at("train loss");
  ASSERT_EQ(loss.times.size(), 20u);
  EXPECT_DOUBLE_EQ(loss.times.front(), 2.0);
  EXPECT_DOUBLE_EQ(loss.times.back(), 40.0);
  EXPECT_EQ(c.series.at("lr").times, loss.times);
  EXPECT_TRUE(c.series.at("eval loss (validation)").times.empty()) << "evaluations are placed by the plot";
  model_core::RunConfig images;
  images.task.name = "fashion_mnist";
  images.train.batch = 64;
  images.task.patch = 7;
  EXPECT_EQ(app::tokensPerStep(images), 64 * 16) << "patch tokens, as the trainer counts them";
  EXPECT_TRUE(std::isnan(app::stepSeconds(2048, 1, 0.0)));
  // Without a config the curves come without times.
  QFile::remove(tmp.filePath("config.json"));
  EXPECT_TRUE(app::readMetricsCurves(tmp.path().toStdString()).series.at("train loss").times.empty());
}

// Issue 13: "the fork's curve starts at step 0 instead of the parent's step", and styles changed
// after a reopen. A parent trained 40 steps, a fork from its step 30: after a
// save and a reopen the fork's curve (12 steps of its own) starts at 31 (and at the parent's time at step 30), and every
// pen is what it was.
TEST(RunFeatures, AForkIsDrawnFromItsParentsStepAfterAReopen) {
  QTemporaryDir tmp;
  app::Session session;
  app::RunEntry parent, fork;
  parent.name = "thsa_r32";
  parent.config = fork.config = app::defaultSession().runs.front().config;
  parent.runDir = writeRun(tmp.filePath("parent"), 40, 2048.0);  // 1 s a step
  model_core::TrainerState state;
  state.step = 30;
  state.optimizer_step = 30;
  state.status = "checkpoint";
  writeText(tmp.filePath("snapshot/trainer_state.json"), QString::fromStdString(model_core::trainerStateToJson(state)));
  fork.name = "thsa_r32 fork@30";
  fork.initFrom = tmp.filePath("snapshot");
  fork.runDir = writeRun(tmp.filePath("fork"), 12, 4096.0);  // 0.5 s a step
  session.runs = {fork, parent};  // the fork listed first: colours follow the session's order
  EXPECT_EQ(app::forkStartStep(fork), 30);
  EXPECT_EQ(app::forkStartStep(parent), 0);
  EXPECT_EQ(app::forkParentName(fork, session.runs), "thsa_r32") << "by name when ids are gone";
  const QString file = tmp.filePath("session.json");
  session.save(file);

  const auto show = [&](viz::CurvesPlot& curves, app::SessionModel& model) {
    model.reset(app::Session::load(file));
    ASSERT_EQ(curves.runs().size(), 2);
  };
  app::TrainingController controller;
  app::SessionModel model1, model2;
  viz::CurvesPlot curves1, curves2;
  app::LiveDocks views1(&model1, &controller, &curves1), views2(&model2, &controller, &curves2);
  show(curves1, model1);
  EXPECT_EQ(curves1.displayedKeys("train loss", fork.name).front(), 31.0);
  EXPECT_EQ(curves1.displayedKeys("eval loss (validation)", fork.name).front(), 40.0) << "its step 10";
  EXPECT_EQ(curves1.displayedKeys("train loss", parent.name).front(), 1.0);
  curves1.setTimeAxis(true);
  EXPECT_DOUBLE_EQ(curves1.displayedKeys("train loss", fork.name).front(), 30.5) << "parent's 30 s + 0.5 s";
  curves1.setTimeAxis(false);

  // The filter is remembered: a metric hidden in one window is hidden in the next.
  curves1.setMetricVisible("lr", false);
  show(curves2, model2);
  app::SessionModel model3;
  viz::CurvesPlot curves3;
  app::LiveDocks views3(&model3, &controller, &curves3);
  show(curves3, model3);
  EXPECT_FALSE(curves3.metricVisible("lr"));
  curves1.setMetricVisible("lr", true);
  for (const QString& run : {fork.name, parent.name})
    for (const QString& metric : {"train loss", "lr", "eval loss (validation)", "accuracy (validation)"})
      EXPECT_EQ(curves1.seriesPen(metric, run), curves2.seriesPen(metric, run)) << run.toStdString() << metric.toStdString();
  EXPECT_EQ(curves2.displayedKeys("train loss", fork.name).front(), 31.0);
  EXPECT_NE(curves2.seriesPen("train loss", fork.name).color(), curves2.seriesPen("train loss", parent.name).color());
}
