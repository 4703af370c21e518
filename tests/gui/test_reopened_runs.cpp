// Issue 13, "runs are durable" and "panels never show another run's data": a reopened session shows
// every view of a trained run as it trained (stable rank history, spectrum, learned C, maps), the
// views follow the selected run with a "run · step" header, and a damaged inspection file is said.
#include <gtest/gtest.h>

#include <QDockWidget>
#include <QFile>
#include <QFileInfo>
#include <QLabel>
#include <QTemporaryDir>

#include "gui/design/core_editor.h"
#include "gui/training/training_controller.h"
#include "model_core/inspection_files.h"
#include "viz/attention_map_grid.h"
#include "viz/curves_plot.h"
#include "viz/role_cluster_plot.h"
#include "viz/spectrum_plot.h"
#include "viz/stable_rank_plot.h"
#include "window_test_util.h"

using namespace tensorscope;
using namespace tensorscope::test;

namespace {

QString dockTitle(app::MainWindow& w, const QString& name) {
  for (auto* d : w.docks())
    if (d->objectName() == name) return d->windowTitle();
  return "<no dock " + name + ">";
}

}  // namespace

TEST(ReopenedRuns, EveryViewComesBackFromTheRunDirectoryAndFollowsTheSelectedRun) {
  QTemporaryDir dir;
  const QString sessionPath = dir.filePath("trained.tsession");
  QString runDir;
  {
    app::MainWindow w(testOptions());
    w.model().select(1);
    useLightThsaRun(w, 2);
    trainStopped(w, 3);
    runDir = w.model().run(1).runDir;
    ASSERT_FALSE(runDir.isEmpty());
    ASSERT_TRUE(w.files().save(sessionPath));
  }
  const auto kept = model_core::readInspection(runDir.toStdString());
  ASSERT_TRUE(kept.has_value()) << "the run kept no inspection";
  ASSERT_EQ(kept->step, 3);
  ASSERT_EQ(kept->core_layers, (std::vector<int>{0, 1}));

  auto options = testOptions();
  QStringList asked;
  options.confirm = [&](const QString& title) {
    asked << title;
    return true;
  };
  app::MainWindow w(options);
  ASSERT_TRUE(w.files().open(sessionPath));
  w.model().select(1);
  const QString name = w.model().run(1).name;
  // How its training ended, not its path (finding N21: "trained: /tmp/…").
  EXPECT_EQ(w.model().status(1), "finished 3 steps");
  EXPECT_EQ(w.model().status(0), "not trained");
  EXPECT_EQ(w.stableRankPlot()->layers(), (std::vector<int>{0, 1})) << "no stable rank history";
  EXPECT_FALSE(w.spectrumPlot()->isShowingMessage());
  EXPECT_FALSE(w.attentionMaps()->isShowingMessage());
  EXPECT_EQ(w.attentionMaps()->layerCount(), 2);
  EXPECT_GT(w.attentionMaps()->mapCount(0), 0);
  // The core editor shows the learned C, as the spectrum does, never the initial one.
  EXPECT_TRUE(w.coreEditor()->bannerText().contains("learned C of " + name + " at step 3 (read-only): the run stays as trained"))
      << w.coreEditor()->bannerText().toStdString();
  EXPECT_NEAR(w.coreEditor()->stableRank(), kept->stable_ranks[0], 1e-3);
  EXPECT_EQ(dockTitle(w, "Attention maps"), "Attention maps · " + name + " · step 3");
  EXPECT_EQ(dockTitle(w, "Spectrum of C"), "Spectrum of C · " + name + " · step 3");
  EXPECT_EQ(dockTitle(w, "Stable rank"), "Stable rank · " + name);
  EXPECT_EQ(dockTitle(w, "Role clusters"), "Role clusters") << "a THSA model has no roles";
  EXPECT_TRUE(w.roleClusters()->isShowingMessage());

  // The learned C of a trained run is read-only: a click asks for a fork, made at once from its
  // checkpoint, with the click applied to the fork.
  const auto original = w.model().run(1).config.model.attention.front();
  const int runs = w.model().count();
  w.coreEditor()->setTool(app::CoreEditor::Tool::SetValue);
  w.coreEditor()->setPaintValue(-0.5);
  w.coreEditor()->editCell(2, 3);
  EXPECT_EQ(asked, QStringList{"Edit the learned C of a trained run?"});
  ASSERT_EQ(w.model().count(), runs + 1);
  const auto& fork = w.model().run(runs);
  EXPECT_EQ(fork.forkParent, w.model().run(1).id);
  EXPECT_TRUE(QFileInfo::exists(fork.initFrom + "/model.safetensors"));
  const int R = fork.config.model.attention.front().sizes.R;
  EXPECT_DOUBLE_EQ(fork.config.model.attention.front().core->dense_values[size_t(2 * R + 3)], -0.5);
  EXPECT_EQ(w.model().run(1).config.model.attention.front(), original) << "the trained run stays as it is";

  // An untrained run: nothing of the trained one, and the headers say no run.
  w.model().select(0);
  EXPECT_TRUE(w.stableRankPlot()->layers().empty());
  EXPECT_TRUE(w.attentionMaps()->isShowingMessage());
  EXPECT_TRUE(w.spectrumPlot()->isShowingMessage());
  EXPECT_EQ(dockTitle(w, "Attention maps"), "Attention maps");
  EXPECT_FALSE(w.coreEditor()->bannerText().contains("learned C"));

  // A damaged inspection file: the history still shows, the maps say what is wrong.
  QFile damaged(runDir + "/" + model_core::kInspectionFileName);
  ASSERT_TRUE(damaged.open(QIODevice::WriteOnly | QIODevice::Truncate));
  damaged.write("not an inspection");
  damaged.close();
  w.model().select(1);
  EXPECT_EQ(w.stableRankPlot()->layers(), (std::vector<int>{0, 1}));
  EXPECT_TRUE(w.attentionMaps()->isShowingMessage());
  EXPECT_TRUE(labelSays(w.attentionMaps(), "The inspection of " + w.model().run(1).name + " is damaged"));

}

// Open run… (and `tensorscope RUN_DIR`): a run that comes with a history draws its curves at once,
// not only after the session is saved and reopened.
TEST(ReopenedRuns, AnOpenedRunDirectoryDrawsItsCurves) {
  QString runDir;
  {
    app::MainWindow w(testOptions());
    w.model().select(1);
    useLightThsaRun(w, 1);
    trainStopped(w, 3);
    runDir = w.model().run(1).runDir;
  }
  app::MainWindow w(testOptions());
  const int before = w.model().count();
  ASSERT_TRUE(w.openRunDirectory(runDir));
  ASSERT_EQ(w.model().count(), before + 1);
  const QString name = w.model().run(before).name;
  EXPECT_EQ(w.curves()->pointCount("train loss", name), 3) << "the opened run's curves are not drawn";
}
