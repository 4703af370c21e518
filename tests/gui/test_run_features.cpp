// The run features that left MainWindow (issue 12): run directories, metrics curves and the TP
// role projection, each on its own, without a window. (The fork entry is exercised end to end by
// MainWindow.AForkOfAMultiLayerRunTakesEveryLayersLearnedC.)
#include <gtest/gtest.h>

#include <QDir>
#include <QFile>
#include <QTemporaryDir>

#include <random>
#include <set>

#include "gui/run_features.h"
#include "model_core/host_tensor.h"

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
