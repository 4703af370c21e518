// Issue 36, live views of the new slots: the Inspector's page "Slots on the probe" draws
// differential attention's two maps of a head and their difference, and the output gate's values
// over the probe's tokens, from the same values as its Value page (a design's random weights, a
// trained run's checkpoint, a training run's inspections); every drawn cell is checked against the
// values the network evaluator computed, and the difference against P₁ − λ·P₂ recomputed here.
#include <gtest/gtest.h>

#include <QDockWidget>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QTest>
#include <cmath>
#include <memory>
#include <string>

#include "gui/shell/demo_runner.h"
#include "gui/shell/demo_script.h"
#include "gui/teaching/inspector_docks.h"
#include "gui/teaching/probe_slots_view.h"
#include "gui/teaching/tensor_inspector.h"
#include "model_core/network_values.h"
#include "model_core/run_config.h"
#include "model_core/trainer.h"
#include "spec/attention_spec.h"
#include "viz/matrix_heatmap.h"
#include "window_test_util.h"

using namespace tensorscope;

namespace {

std::shared_ptr<const model_core::NetworkValues> designValues(const spec::AttentionSpec& s, std::uint64_t seed) {
  return std::make_shared<const model_core::NetworkValues>(model_core::designNetworkValues(s, 6, seed));
}

/// Checks every cell of the page's maps and gates against `v` (what the evaluator computed).
void expectDrawsTheValues(app::ProbeSlotsView& view, const model_core::NetworkValues& v) {
  if (view.showsDifferential()) {
    const auto& P = *v.find("P");  // [1, H, 2, N, M]
    const auto& A = *v.find("A");  // [1, H, N, M]
    const std::int64_t H = P.shape[1], N = P.shape[3], M = P.shape[4];
    ASSERT_EQ(view.heads(), H);
    EXPECT_DOUBLE_EQ(view.lambda(), -double(v.find("Lam")->values[1]));
    for (int h = 0; h < H; ++h) {
      view.setHead(h);
      ASSERT_EQ(view.firstMap()->rows(), N);
      ASSERT_EQ(view.firstMap()->cols(), M);
      for (std::int64_t n = 0; n < N; ++n) {
        double row1 = 0, row2 = 0;
        for (std::int64_t m = 0; m < M; ++m) {
          const double p1 = P.values[size_t(((h * 2 + 0) * N + n) * M + m)];
          const double p2 = P.values[size_t(((h * 2 + 1) * N + n) * M + m)];
          EXPECT_DOUBLE_EQ(view.firstMap()->value(int(n), int(m)), p1);
          EXPECT_DOUBLE_EQ(view.secondMap()->value(int(n), int(m)), p2);
          EXPECT_DOUBLE_EQ(view.difference()->value(int(n), int(m)), A.values[size_t((h * N + n) * M + m)]);
          // The difference is what its definition gives from the two maps and λ.
          EXPECT_NEAR(view.difference()->value(int(n), int(m)), p1 - view.lambda() * p2, 1e-5);
          row1 += p1, row2 += p2;
        }
        EXPECT_NEAR(row1, 1.0, 1e-5) << "a softmax row";
        EXPECT_NEAR(row2, 1.0, 1e-5) << "a softmax row";
      }
    }
  }
  if (view.showsGates()) {
    const auto& G = *v.find("sg");
    const std::int64_t N = G.shape[1];
    std::int64_t cols = 1;
    for (size_t i = 2; i < G.shape.size(); ++i) cols *= G.shape[i];
    ASSERT_EQ(view.gates()->rows(), N);
    ASSERT_EQ(view.gates()->cols(), cols);
    for (std::int64_t n = 0; n < N; ++n)
      for (std::int64_t c = 0; c < cols; ++c) {
        const double g = view.gates()->value(int(n), int(c));
        EXPECT_DOUBLE_EQ(g, G.values[size_t(n * cols + c)]);
        EXPECT_GT(g, 0.0);
        EXPECT_LT(g, 1.0);
      }
  }
}

}  // namespace

TEST(ProbeSlots, DifferentialMapsTheirDifferenceAndGatesAreTheLayersOwn) {
  app::TensorInspector inspector;
  inspector.resize(700, 900);
  struct Case {
    const char* preset;
    spec::Gate gate;
    bool causal;
    bool differential, gated;
  };
  std::uint64_t seed = 11;
  for (const Case& c : {Case{"diff", spec::Gate::None, false, true, false}, Case{"diff", spec::Gate::None, true, true, false},
                        Case{"gated", spec::Gate::Elementwise, true, false, true},
                        Case{"gated_headwise", spec::Gate::Headwise, false, false, true},
                        Case{"mta", spec::Gate::Headwise, true, false, true}}) {
    SCOPED_TRACE(std::string(c.preset) + (c.causal ? " causal" : ""));
    auto s = spec::makeSpecPreset(c.preset);
    s.causal = c.causal;
    if (!s.slots.mta.enabled()) s.slots.gate = c.gate;
    const auto v = designValues(s, ++seed);
    inspector.setValues(v, c.preset);
    EXPECT_TRUE(inspector.probeSlotsTabVisible());
    auto& view = *inspector.probeSlots();
    EXPECT_EQ(view.showsDifferential(), c.differential);
    EXPECT_EQ(view.showsGates(), c.gated);
    EXPECT_TRUE(view.captionText().contains("random weights")) << view.captionText().toStdString();
    expectDrawsTheValues(view, *v);
  }
  // A design with neither: the tab goes, and the page says why if shown.
  inspector.setValues(designValues(spec::makeSpecPreset("talking_heads"), 3), "talking heads");
  EXPECT_FALSE(inspector.probeSlotsTabVisible());
  EXPECT_FALSE(inspector.probeSlots()->hasSlots());
  EXPECT_TRUE(inspector.probeSlots()->captionText().contains("head-mixing view"));
  inspector.clear("no run");
  EXPECT_FALSE(inspector.probeSlotsTabVisible());
}

// A training run's values (its checkpoint on its probe): the page shows the trained layer, not
// random weights, and every cell is the run's.
TEST(ProbeSlots, ATrainedRunsMapsAndGatesAreShownFromItsCheckpoint) {
  QTemporaryDir dir;
  ASSERT_TRUE(dir.isValid());
  for (const char* preset : {"diff", "gated_headwise"}) {
    SCOPED_TRACE(preset);
    auto c = tensorscope::test::tinyCopy(4, preset);
    auto& s = c.model.attention.front();
    if (s.slots.differential) s.sizes.H = 1;  // two maps per head, value heads 2D wide: F = 2·H·D
    c.train.warmup = 1;
    c.train.eval_interval = c.train.checkpoint_interval = c.train.inspect_interval = 4;
    c.train.threads = 1;
    const std::string run = dir.filePath(preset).toStdString();
    model_core::TrainerControl control;
    model_core::ProgressSink quiet;
    const auto result = model_core::train(c, run, control, quiet);
    ASSERT_FALSE(result.diverged) << result.message;
    const auto v = std::make_shared<const model_core::NetworkValues>(model_core::runNetworkValues(run, 0, ""));
    ASSERT_EQ(v->step, 4);
    app::ProbeSlotsView view;
    view.resize(600, 800);
    view.setValues(v);
    EXPECT_EQ(view.showsDifferential(), s.slots.differential);
    EXPECT_EQ(view.showsGates(), !s.slots.differential);
    EXPECT_TRUE(view.captionText().contains("step 4")) << view.captionText().toStdString();
    expectDrawsTheValues(view, *v);
    // The probe is named, and its tokens label the rows.
    ASSERT_FALSE(v->tokens.empty());
    EXPECT_TRUE(view.captionText().contains(QString::fromStdString(v->probe))) << view.captionText().toStdString();
    const auto* rowsShown = s.slots.differential ? view.firstMap() : view.gates();
    EXPECT_EQ(rowsShown->rows(), static_cast<int>(v->tokens.size()));
    if (const QString shots = qEnvironmentVariable("TS_GUI_SCREENSHOT_DIR"); !shots.isEmpty()) {
      QDir().mkpath(shots);
      view.resize(560, s.slots.differential ? 1000 : 520);
      view.show();
      tensorscope::test::settle();
      EXPECT_TRUE(view.grab().toImage().save(QDir(shots).filePath(QString("probe_slots_%1.png").arg(preset))));
    }
  }
}

// In the window, as a user gets there: a run made differential, trained a few steps, the Inspector
// shown; the page follows the stopped run's checkpoint and then the live run's inspections.
TEST(ProbeSlots, TheInspectorPageFollowsATrainingRun) {
  app::MainWindow w(tensorscope::test::testOptions());
  w.resize(1600, 1000);
  w.show();
  ASSERT_TRUE(QTest::qWaitForWindowExposed(&w));
  app::DemoRunner runner(w.demoParts(), app::parseDemoScript("run 0\npreset diff\nquit\n", "demo.txt"));
  bool done = false;
  QObject::connect(&runner, &app::DemoRunner::finished, [&] { done = true; });
  runner.start();
  ASSERT_TRUE(tensorscope::test::waitFor([&] { return done; }, 10000));
  ASSERT_TRUE(w.model().currentSpec().slots.differential);
  {  // light: one layer, batch 4, one thread
    auto light = w.model().session().runs[0].config;
    light.train.batch = 4;
    light.model.layers = 1;
    light.train.threads = 1;
    light.train.eval_examples = 8;
    w.trainingPanel()->setConfig(light);
  }
  QDockWidget* dock = w.dock("Inspector");
  ASSERT_TRUE(dock);
  dock->show();
  dock->raise();
  auto* inspector = w.inspector();
  tensorscope::test::trainStopped(w, 3);
  ASSERT_TRUE(tensorscope::test::waitFor(
      [&] { return inspector->values() && inspector->values()->step == 3 && !w.teaching()->computing(); }, 180000));
  auto* view = inspector->probeSlots();
  EXPECT_TRUE(inspector->probeSlotsTabVisible());
  ASSERT_TRUE(view->showsDifferential());
  EXPECT_TRUE(view->captionText().contains("step 3")) << view->captionText().toStdString();
  expectDrawsTheValues(*view, *inspector->values());
  auto* tabs = inspector->findChild<QTabWidget*>();
  ASSERT_TRUE(tabs);
  tabs->setCurrentWidget(view);
  view->setHead(1);
  tensorscope::test::screenshotIfAsked(w, "inspector_probe_slots_diff");
  if (!qEnvironmentVariable("TS_GUI_SCREENSHOT_DIR").isEmpty()) {
    w.resize(1280, 800);
    tensorscope::test::settle();
    EXPECT_TRUE(w.grab().toImage().save(QDir(qEnvironmentVariable("TS_GUI_SCREENSHOT_DIR")).filePath("inspector_probe_slots_diff_1280.png")));
  }

  // Live: the training run's inspections reach the page.
  ASSERT_TRUE(w.training().start(100000));
  ASSERT_TRUE(tensorscope::test::waitFor([&] { return inspector->values() && inspector->values()->step > 3; }, 180000));
  const auto step = inspector->values()->step;
  EXPECT_TRUE(view->captionText().contains(QString("step %1").arg(step))) << view->captionText().toStdString();
  expectDrawsTheValues(*view, *inspector->values());
  w.controller()->stop();
  w.controller()->waitForFinished();
}
