// Issue 13, "role clusters" and "attention maps": the user picks the TP layer and head the role
// clusters show (captioned with the probe, layer and head), and types the probe the attention maps
// are computed on, for a stopped run (from its checkpoint) and for the run that trains.
#include <gtest/gtest.h>

#include <QLabel>
#include <QLineEdit>
#include <QSignalSpy>
#include <QTest>

#include "gui/training/snapshot_docks.h"
#include "gui/training/training_controller.h"
#include "model_core/snapshots.h"
#include "spec/attention_spec.h"
#include "viz/attention_map_grid.h"
#include "viz/role_cluster_plot.h"
#include "window_test_util.h"

using namespace tensorscope;
using namespace tensorscope::test;

TEST(Probes, RoleClustersShowTheChosenLayerAndHeadWithACaption) {
  app::MainWindow w(testOptions());
  useLightTpRun(w);
  trainStopped(w, 2);
  auto* roles = w.roleClusters();
  ASSERT_FALSE(roles->isShowingMessage());
  const auto shown = w.snapshotDocks()->shown();
  ASSERT_TRUE(shown);
  ASSERT_EQ(shown->roles.size(), 4u);  // 2 layers x 2 heads
  // By default head 0 of the last TP layer, said in the caption with the probe it comes from.
  EXPECT_EQ(w.snapshotDocks()->roleSource(), std::make_pair(1, 0));
  EXPECT_TRUE(roles->caption().startsWith("Role vectors of layer 1, head 0 · ")) << roles->caption().toStdString();
  EXPECT_TRUE(roles->caption().contains("examples")) << roles->caption().toStdString();
  EXPECT_EQ(roles->source(), 2);
  const int points = roles->pointCount();
  const QPointF before = roles->pointPosition(0);
  w.snapshotDocks()->setRoleSource(0, 1);
  EXPECT_EQ(roles->source(), 1);
  EXPECT_TRUE(roles->caption().startsWith("Role vectors of layer 0, head 1 · ")) << roles->caption().toStdString();
  EXPECT_EQ(roles->pointCount(), points) << "the same tokens";
  roles->replotNow();
  EXPECT_NE(roles->pointPosition(0), before) << "another head's vectors";
  // The choice stays when the run is shown again (a reopened run reads the same inspection).
  w.model().select(0);
  w.model().select(1);
  EXPECT_EQ(w.snapshotDocks()->roleSource(), std::make_pair(0, 1));
  EXPECT_EQ(roles->source(), 1);
}

TEST(Probes, ATypedProbeRunsOnAStoppedRunsCheckpoint) {
  app::MainWindow w(testOptions());
  w.model().select(1);
  useLightThsaRun(w, 2);
  trainStopped(w, 2);
  auto* maps = w.attentionMaps();
  const int defaultSide = maps->displayedMap(0, 0).rows;
  QSignalSpy finished(w.snapshotDocks(), &app::SnapshotDocks::probeFinished);
  // Typed into the field, Enter runs it.
  w.probeEdit()->setText("312");
  QTest::keyClick(w.probeEdit(), Qt::Key_Return);
  ASSERT_TRUE(waitFor([&] { return finished.count() > 0; }, 60000));
  const auto shown = w.snapshotDocks()->shown();
  ASSERT_TRUE(shown);
  EXPECT_EQ(shown->step, 2);
  EXPECT_TRUE(QString::fromStdString(shown->probe).startsWith("“312” → “")) << shown->probe;
  EXPECT_TRUE(maps->title().startsWith("Probe “312” → “")) << maps->title().toStdString();
  const int n = static_cast<int>(shown->probe_tokens.size());
  EXPECT_EQ(maps->displayedMap(0, 0).rows, n);
  ASSERT_GE(n, 5);  // an untrained model may answer up to the context's end
  EXPECT_EQ(std::vector<std::string>(shown->probe_tokens.begin(), shown->probe_tokens.begin() + 5),
            (std::vector<std::string>{"<bos>", "3", "1", "2", "<sep>"}))
      << "the typed probe, not the default example";
  EXPECT_TRUE(w.probeNote()->text().isEmpty()) << w.probeNote()->text().toStdString();
  // A character the model does not know: refused with the reason, the maps stay.
  w.snapshotDocks()->setProbe("3+2");
  ASSERT_TRUE(waitFor([&] { return finished.count() > 1; }, 60000));
  EXPECT_TRUE(w.probeNote()->text().contains("cannot be read")) << w.probeNote()->text().toStdString();
  EXPECT_EQ(w.snapshotDocks()->shown(), shown);
  // A run without weights cannot be probed: the note says so.
  w.model().select(0);
  EXPECT_EQ(w.snapshotDocks()->probe(), "3+2");
  EXPECT_TRUE(w.probeNote()->text().contains("train it first")) << w.probeNote()->text().toStdString();
  // An empty probe brings the kept inspection (the default example) back.
  w.model().select(1);
  w.snapshotDocks()->setProbe("");
  ASSERT_TRUE(w.snapshotDocks()->shown());
  EXPECT_EQ(maps->displayedMap(0, 0).rows, defaultSide);
  EXPECT_FALSE(maps->title().contains("“312”")) << maps->title().toStdString();
}

TEST(Probes, TheTrainingRunAnswersATypedProbeAtItsNextStep) {
  app::MainWindow w(testOptions());
  w.model().select(1);
  useLightThsaRun(w, 1);
  ASSERT_TRUE(w.training().start(100000));
  w.controller()->pause();
  w.snapshotDocks()->setProbe("4321");
  EXPECT_TRUE(w.probeNote()->text().contains("next step")) << w.probeNote()->text().toStdString();
  // Served while paused: no step is needed.
  ASSERT_TRUE(waitFor([&] {
    const auto s = w.snapshotDocks()->shown();
    return s && QString::fromStdString(s->probe).startsWith("“4321” → “");
  }, 60000));
  EXPECT_TRUE(w.attentionMaps()->title().contains("“4321”"));
  w.controller()->stop();
  w.controller()->waitForFinished();
}
