// Issue 15, teaching through live diagrams: the inspector shows the right value of every tensor of
// every variant's diagram (the evaluator's own intermediates, sliced as the heatmap says), the plan
// steps through every variant, and in the window a click on the diagram shows that tensor for the
// selected run: a design never trained (random weights), a stopped run (its checkpoint) and the
// training run (live).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>

#include <QComboBox>
#include <QPushButton>
#include <QDockWidget>
#include <QFontInfo>
#include <QLabel>
#include <QLocale>
#include <QScrollBar>
#include <QTextBrowser>
#include <map>
#include <QGraphicsItem>
#include <QMenu>
#include <QMenuBar>
#include <QSignalSpy>
#include <QDir>
#include <QFileInfo>
#include <QTabWidget>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QTest>

#include "diagram_view/diagram_view.h"
#include "gui/design/design_panel.h"
#include "gui/shell/dock_layouts.h"
#include "gui/teaching/bottleneck_lab.h"
#include "gui/teaching/stable_rank_lab.h"
#include "gui/teaching/lesson_panel.h"
#include "gui/teaching/lesson_runner.h"
#include "gui/document/app_paths.h"
#include "gui/document/session.h"
#include "gui/document/session_model.h"
#include "gui/training/training_driver.h"
#include "gui/training/training_panel.h"
#include "gui/teaching/presenter_mode.h"
#include "gui/teaching/inspector_docks.h"
#include "gui/teaching/tensor_inspector.h"
#include "gui/training/training_controller.h"
#include "lesson/lesson.h"
#include "files/read_file.h"
#include "model_core/intervention.h"
#include "model_core/network_values.h"
#include "model_core/run_files.h"
#include "spec/attention_spec.h"
#include "spec/slot_values.h"
#include "spec/validation.h"
#include "spec/contraction_steps.h"
#include "spec/cost_model.h"
#include "viz/matrix_heatmap.h"
#include "viz/role_cluster_plot.h"
#include "window_test_util.h"

using namespace tensorscope;
using namespace tensorscope::test;
using Element = diagram_view::DiagramScene::Element;

namespace {

/// The entry of `t` at multi-index `idx`, by its own row-major strides.
float entry(const model_core::HostTensor& t, const std::vector<std::int64_t>& idx) {
  std::int64_t flat = 0;
  for (size_t i = 0; i < t.shape.size(); ++i) flat = flat * t.shape[i] + idx[i];
  return t.values[static_cast<size_t>(flat)];
}

/// Checks that the inspector's heatmap shows `id` of `v` as sliced: every drawn entry equals the
/// tensor's entry at (row, col) with the other legs at their slider's index.
void expectHeatmapShows(app::TensorInspector& inspector, const model_core::NetworkValues& v, const QString& id) {
  const auto* t = v.find(id.toStdString());
  ASSERT_NE(t, nullptr) << id.toStdString();
  ASSERT_TRUE(inspector.showTensor(id)) << id.toStdString();
  const auto& legs = inspector.legs();
  ASSERT_EQ(legs.size(), t->shape.size()) << id.toStdString();
  for (size_t i = 0; i < legs.size(); ++i) {
    EXPECT_EQ(legs[i].size, t->shape[i]) << id.toStdString() << " leg " << i;
    EXPECT_NE(legs[i].symbol, "axis") << id.toStdString() << ": the legs are named from the network";
  }
  // The last index of every other leg, so a wrong stride shows.
  std::vector<std::int64_t> idx(legs.size(), 0);
  for (size_t i = 0; i < legs.size(); ++i) {
    if (static_cast<int>(i) == inspector.rowLeg() || static_cast<int>(i) == inspector.colLeg()) continue;
    idx[i] = legs[i].size - 1;
    inspector.setSliceIndex(static_cast<int>(i), static_cast<int>(idx[i]));
  }
  const auto* heat = inspector.heatmap();
  const int rows = heat->rows(), cols = heat->cols();
  ASSERT_GT(rows * cols, 0);
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c) {
      if (inspector.rowLeg() >= 0) idx[static_cast<size_t>(inspector.rowLeg())] = r;
      if (inspector.colLeg() >= 0) idx[static_cast<size_t>(inspector.colLeg())] = c;
      ASSERT_EQ(heat->value(r, c), static_cast<double>(entry(*t, idx))) << id.toStdString() << " at " << r << ", " << c;
    }
}

}  // namespace

TEST(TeachingInspector, ShowsEveryTensorOfEveryVariantAsTheEvaluatorComputedIt) {
  app::TensorInspector inspector;
  inspector.resize(600, 700);
  std::uint64_t seed = 3;
  for (const auto& name : spec::specPresetNames()) {
    SCOPED_TRACE(name);
    auto s = spec::makeSpecPreset(name);
    s.causal = seed % 2 == 0;
    const auto values = std::make_shared<const model_core::NetworkValues>(model_core::designNetworkValues(s, 5, ++seed));
    inspector.setDesign(s, values->network);
    inspector.setValues(values, QString::fromStdString(name));
    // Every value: nodes, step results and the logits of softmax and φ steps.
    for (const auto& [id, value] : values->values) expectHeatmapShows(inspector, *values, QString::fromStdString(id));
    int logits = 0;
    for (const auto& st : values->network.plan)
      if (values->find(st.output + ".logits")) {
        ++logits;
        ASSERT_TRUE(inspector.showTensor(QString::fromStdString(st.output)));
        inspector.setShowLogits(true);
        EXPECT_EQ(inspector.shownId().toStdString(), st.output + ".logits");
        inspector.setShowLogits(false);
        EXPECT_EQ(inspector.shownId().toStdString(), st.output);
      }
    EXPECT_GT(logits, 0) << "every variant has a softmax, a normalisation or φ";
    // A box shows the step that evaluates it; a leg the step that sums it.
    for (const auto& b : values->network.boxes) {
      ASSERT_TRUE(inspector.showElement(Element::SoftmaxBox, QString::fromStdString(b.id))) << b.id;
      const auto steps = spec::contractionSteps(values->network, 1);
      const auto it = std::find_if(steps.begin(), steps.end(), [&](const auto& st) { return st.box == b.id; });
      ASSERT_NE(it, steps.end()) << b.id;
      EXPECT_EQ(inspector.shownId().toStdString(), it->output);
    }
    EXPECT_FALSE(inspector.showTensor("no_such_tensor"));
  }
}

TEST(TeachingInspector, SteppingCoversEveryVariant) {
  app::TensorInspector inspector;
  QSignalSpy highlights(&inspector, &app::TensorInspector::highlightRequested);
  for (const auto& name : spec::specPresetNames()) {
    SCOPED_TRACE(name);
    const auto s = spec::makeSpecPreset(name);
    const auto values = std::make_shared<const model_core::NetworkValues>(model_core::designNetworkValues(s, 4, 1));
    inspector.setDesign(s, values->network);
    inspector.setValues(values, "");
    const auto steps = spec::contractionSteps(values->network, 1);
    ASSERT_EQ(inspector.stepCount(), static_cast<int>(steps.size()));
    inspector.stepTo(-1);
    for (size_t k = 0; k < steps.size(); ++k) {
      highlights.clear();
      inspector.next();
      ASSERT_EQ(inspector.currentStep(), static_cast<int>(k));
      ASSERT_EQ(highlights.count(), 1);
      const auto h = highlights.at(0).at(0).value<diagram_view::DiagramScene::Highlight>();
      QStringList drawn;
      for (const auto& n : steps[k].drawn_nodes) drawn << QString::fromStdString(n);
      EXPECT_EQ(h.tensors, drawn) << "step " << k;
      if (!steps[k].box.empty()) EXPECT_TRUE(h.boxes.contains(QString::fromStdString(steps[k].box)));
      EXPECT_EQ(inspector.shownId().toStdString(), steps[k].output) << "the step's result is shown";
      EXPECT_TRUE(inspector.stepText().contains(QString("Step %1 of %2").arg(k + 1).arg(steps.size())));
    }
    inspector.next();  // at the end it stays
    EXPECT_EQ(inspector.currentStep(), static_cast<int>(steps.size()) - 1);
    inspector.back();
    EXPECT_EQ(inspector.currentStep(), static_cast<int>(steps.size()) - 2);
  }
}

TEST(TeachingInspector, PlayingWalksThePlanAndStopsAtTheEnd) {
  app::TensorInspector inspector;
  const auto s = spec::makeSpecPreset("mhsa");
  const auto values = std::make_shared<const model_core::NetworkValues>(model_core::designNetworkValues(s, 4, 1));
  inspector.setDesign(s, values->network);
  inspector.setValues(values, "");
  inspector.setSpeed(50);
  inspector.setPlaying(true);
  EXPECT_TRUE(inspector.playing());
  ASSERT_TRUE(waitFor([&] { return !inspector.playing(); }, 5000));
  EXPECT_EQ(inspector.currentStep(), inspector.stepCount() - 1);
}

// N5: another design's plan (another run selected) ends the stepping, and the diagram's stepping
// highlight with it: the diagram agrees with "Next shows the first".
TEST(TeachingInspector, AnotherRunsPlanClearsTheSteppingHighlight) {
  app::TensorInspector inspector;
  const auto thsa = spec::makeSpecPreset("thsa");
  const auto tv = std::make_shared<const model_core::NetworkValues>(model_core::designNetworkValues(thsa, 4, 1));
  inspector.setDesign(thsa, tv->network);
  inspector.setValues(tv, "");
  ASSERT_GT(inspector.stepCount(), 6);
  inspector.stepTo(6);
  QSignalSpy highlights(&inspector, &app::TensorInspector::highlightRequested);
  const auto mhsa = spec::makeSpecPreset("mhsa");
  const auto mv = std::make_shared<const model_core::NetworkValues>(model_core::designNetworkValues(mhsa, 4, 1));
  inspector.setValues(nullptr, "computing…");  // as the Inspector dock does while the new values come
  inspector.setDesign(mhsa, mv->network);
  inspector.setValues(mv, "");
  EXPECT_EQ(inspector.currentStep(), -1);
  EXPECT_TRUE(inspector.stepText().contains("Next shows the first"));
  ASSERT_GE(highlights.count(), 1) << "the diagram is told to drop THSA's step 7";
  EXPECT_EQ(highlights.last().at(0).value<diagram_view::DiagramScene::Highlight>(), diagram_view::DiagramScene::Highlight{});
}

// N5: a lesson step stops the stepping; values that arrive afterwards (the same plan) do not
// bring the stepping's rings back over the lesson's highlight.
TEST(TeachingInspector, StoppedSteppingStaysStoppedWhenValuesArrive) {
  app::TensorInspector inspector;
  const auto mhsa = spec::makeSpecPreset("mhsa");
  const auto mv = std::make_shared<const model_core::NetworkValues>(model_core::designNetworkValues(mhsa, 4, 1));
  inspector.setDesign(mhsa, mv->network);
  inspector.setValues(mv, "");
  inspector.stepTo(2);
  QSignalSpy highlights(&inspector, &app::TensorInspector::highlightRequested);
  inspector.stopStepping();
  EXPECT_EQ(inspector.currentStep(), -1);
  EXPECT_EQ(highlights.count(), 0) << "the lesson sets its own highlight";
  inspector.setValues(nullptr, "computing…");
  inspector.setDesign(mhsa, mv->network);
  inspector.setValues(mv, "");
  EXPECT_EQ(highlights.count(), 0) << "no stepping highlight comes back";
  EXPECT_EQ(inspector.currentStep(), -1);
}

// N25: a click on a tensor that the values on show lack (they are another design's: the Inspector
// was hidden, or new values are on their way) shows that tensor when the new values come.
TEST(TeachingInspector, AClickWhileTheValuesAreStaleShowsThatTensorNext) {
  app::TensorInspector inspector;
  const auto mhsa = spec::makeSpecPreset("mhsa");
  const auto mv = std::make_shared<const model_core::NetworkValues>(model_core::designNetworkValues(mhsa, 4, 1));
  inspector.setDesign(mhsa, mv->network);
  inspector.setValues(mv, "");
  ASSERT_TRUE(inspector.showTensor("Wo"));
  const auto tp = spec::makeSpecPreset("tp");
  const auto tv = std::make_shared<const model_core::NetworkValues>(model_core::designNetworkValues(tp, 4, 1));
  ASSERT_NE(tv->find("Wr"), nullptr);
  ASSERT_EQ(mv->find("Wr"), nullptr);
  EXPECT_FALSE(inspector.showElement(Element::Tensor, "Wr"));  // not in the stale values
  inspector.setDesign(tp, tv->network);
  inspector.setValues(tv, "TP");
  EXPECT_EQ(inspector.shownId(), "Wr") << "the first click counts";
}

// N5: a lesson step's highlight replaces the stepping highlight of the step before, also when the
// Inspector's values come after it.
TEST(TeachingLessons, ALessonHighlightReplacesTheSteppingHighlight) {
  app::MainWindow w(testOptions());
  w.resize(1600, 1000);
  w.show();
  ASSERT_TRUE(QTest::qWaitForWindowExposed(&w));
  ASSERT_TRUE(w.startLesson("mhsa_tensor_network"));
  auto* panel = w.lessonPanel();
  const auto act = [&] {  // the step's action, as "Show me" does it, until its check holds
    ASSERT_TRUE(waitFor([&] { return w.inspector()->stepCount() > 0; }, 10000));
    ASSERT_TRUE(w.lessons()->performAction());
    ASSERT_TRUE(waitFor(
        [&] {
          panel->setState(w.lessons()->state());
          return panel->checkMet();
        },
        20000));
  };
  act();  // "Tensors are nodes, axes are legs": click W^Q
  ASSERT_TRUE(panel->next());  // "A contraction joins two legs": step the plan
  act();
  ASSERT_EQ(w.inspector()->currentStep(), 0);
  ASSERT_TRUE(panel->next());  // "The softmax box": names X^K and W^K
  ASSERT_TRUE(waitFor([&] { return w.inspector()->values() && !w.teaching()->computing(); }, 20000));
  for (int i = 0; i < 10; ++i) QApplication::processEvents(QEventLoop::AllEvents, 20);
  w.teaching()->refresh();  // values that come after the lesson's highlight (a slow computation)
  for (int i = 0; i < 5; ++i) QApplication::processEvents(QEventLoop::AllEvents, 20);
  ASSERT_TRUE(waitFor([&] { return w.inspector()->values() && !w.teaching()->computing(); }, 20000));
  for (int i = 0; i < 10; ++i) QApplication::processEvents(QEventLoop::AllEvents, 20);
  const auto& h = w.diagram()->diagramScene()->highlight();
  EXPECT_TRUE(h.tensors.contains("x_k") && h.tensors.contains("Wk")) << h.tensors.join(",").toStdString();
  EXPECT_TRUE(h.boxes.contains("attn")) << h.boxes.join(",").toStdString();
  EXPECT_EQ(w.inspector()->currentStep(), -1) << "the stepping starts again from the first step";
}

// The cost page: linear attention contracts keys with values first, and grows linearly in N where
// MHSA grows quadratically.
TEST(TeachingInspector, TheCostPageComparesOrdersAndGrowthInN) {
  app::TensorInspector inspector;
  auto s = spec::makeSpecPreset("thsa_linear");
  const auto values = std::make_shared<const model_core::NetworkValues>(model_core::designNetworkValues(s, 6, 1));
  inspector.setDesign(s, values->network);
  inspector.setValues(values, "");
  ASSERT_FALSE(inspector.orderComparisons().empty());
  EXPECT_EQ(inspector.ordersTable()->rowCount(), static_cast<int>(inspector.orderComparisons().size()));
  bool cheaper = false;
  for (const auto& o : inspector.orderComparisons()) cheaper = cheaper || o.most_expensive.flops > 10 * o.cheapest.flops;
  EXPECT_TRUE(cheaper) << "some contraction has a much worse order";
  const QString text = inspector.scalingText();
  EXPECT_TRUE(text.contains("This design: FLOPs ∝ N^1.0")) << text.toStdString();
  EXPECT_TRUE(text.contains("MHSA of the same width: FLOPs ∝ N^1.9") || text.contains("MHSA of the same width: FLOPs ∝ N^2.0"))
      << text.toStdString();
}

// Issue 36: the cost page shows MLA's two orders side by side, with the cost model's numbers for
// each (the oracle), whichever order the design is in; no such table for other designs.
TEST(TeachingInspector, TheCostPageShowsMlasTwoOrdersSideBySide) {
  app::TensorInspector inspector;
  auto s = spec::makeSpecPreset("mla");
  s.sizes.seq_len = 12;
  const auto values = std::make_shared<const model_core::NetworkValues>(model_core::designNetworkValues(s, 12, 1));
  inspector.setDesign(s, values->network);
  inspector.setValues(values, "");
  QTableWidget* t = inspector.mlaOrdersTable();
  ASSERT_TRUE(t);
  ASSERT_EQ(t->rowCount(), 5);
  EXPECT_FALSE(t->isHidden());
  auto naive = s, absorbed = s;
  absorbed.slots.latent.order = spec::LatentOrder::Absorbed;
  const auto grouped = [](double v) { return QLocale(QLocale::English).toString(static_cast<qlonglong>(std::llround(v))); };
  const auto cell = [&](int r, int c) { return t->item(r, c)->text(); };
  EXPECT_EQ(cell(0, 0), "forward FLOPs");
  EXPECT_EQ(cell(0, 1), grouped(spec::estimateCost(naive, 1, 12).forward_flops));
  EXPECT_EQ(cell(0, 2), grouped(spec::estimateCost(absorbed, 1, 12).forward_flops));
  EXPECT_EQ(cell(3, 0), "KV cache per token");
  auto naiveDecoder = naive, absorbedDecoder = absorbed;  // a cache is a decoder's: the causal twin's
  naiveDecoder.causal = absorbedDecoder.causal = true;
  const auto dn = spec::estimateDecodeCost(naiveDecoder, 12), da = spec::estimateDecodeCost(absorbedDecoder, 12);
  EXPECT_LT(da.cache_elements_per_token, dn.cache_elements_per_token) << "the absorbed order caches the latent";
  EXPECT_EQ(cell(3, 3), QString("%1×").arg(da.cache_elements_per_token / dn.cache_elements_per_token, 0, 'f', 3));
  EXPECT_EQ(cell(4, 1), grouped(dn.flops));
  EXPECT_EQ(cell(4, 2), grouped(da.flops));
  EXPECT_GT(da.flops, dn.flops) << "and pays at decoding";
  // The same table from the other order.
  const auto values2 = std::make_shared<const model_core::NetworkValues>(model_core::designNetworkValues(absorbed, 12, 1));
  inspector.setDesign(absorbed, values2->network);
  inspector.setValues(values2, "");
  t = inspector.mlaOrdersTable();
  ASSERT_EQ(t->rowCount(), 5);
  EXPECT_EQ(cell(0, 1), grouped(spec::estimateCost(naive, 1, 12).forward_flops));
  if (auto* tabs = inspector.findChild<QTabWidget*>()) tabs->setCurrentIndex(1);  // the cost page
  screenshotIfAsked(inspector, "inspector_mla_orders");
  // Any other design: none.
  const auto gqa = spec::makeSpecPreset("gqa");
  const auto values3 = std::make_shared<const model_core::NetworkValues>(model_core::designNetworkValues(gqa, 6, 1));
  inspector.setDesign(gqa, values3->network);
  inspector.setValues(values3, "");
  EXPECT_EQ(inspector.mlaOrdersTable()->rowCount(), 0);
  EXPECT_TRUE(inspector.mlaOrdersTable()->isHidden());
}

// In the window: a click on a tensor of the diagram shows it in the Inspector, for a design never
// trained (random weights on a random input, as designNetworkValues computes them), then for the
// run after training (its checkpoint), then live while it trains.
TEST(TeachingWindow, AClickOnTheDiagramShowsThatTensorForTheSelectedRun) {
  app::MainWindow w(testOptions());
  w.resize(1600, 1000);
  w.show();
  ASSERT_TRUE(QTest::qWaitForWindowExposed(&w));
  w.model().select(1);  // THSA
  {  // light, on one thread (no OpenMP threads spinning against the tests ctest runs beside it)
    auto small = w.model().session().runs[1].config;
    small.train.batch = 4;
    small.model.layers = 1;
    small.train.threads = 1;
    w.trainingPanel()->setConfig(small);
  }
  QDockWidget* dock = w.dock("Inspector");
  ASSERT_NE(dock, nullptr);
  auto* view = w.diagram();
  ASSERT_TRUE(waitFor([&] { return view->diagramScene()->tensorItem("Wq") != nullptr; }, 5000));
  QApplication::processEvents();
  const QPoint at = view->mapFromScene(view->diagramScene()->tensorItem("Wq")->scenePos());
  QTest::mouseClick(view->viewport(), Qt::LeftButton, {}, at);
  EXPECT_TRUE(dock->isVisible());
  auto* inspector = w.inspector();
  ASSERT_TRUE(waitFor([&] { return inspector->values() && !w.teaching()->computing(); }, 20000));
  EXPECT_EQ(inspector->shownId(), "Wq");
  const auto design = model_core::designNetworkValues(w.model().currentSpec(), app::InspectorDocks::kDesignTokens, 1);
  EXPECT_EQ(inspector->values()->find("Wq")->values, design.find("Wq")->values) << "random weights of seed 1";
  EXPECT_EQ(inspector->values()->step, -1);

  // Trained and stopped: the checkpoint's values on the default probe.
  trainStopped(w, 3);
  ASSERT_TRUE(waitFor([&] { return inspector->values() && inspector->values()->step == 3 && !w.teaching()->computing(); }, 180000))
      << "values of step " << (inspector->values() ? inspector->values()->step : -2) << "; "
      << w.findChild<QDockWidget*>("Inspector")->isVisible();
  EXPECT_EQ(inspector->shownId(), "Wq");
  const auto run = model_core::runNetworkValues(w.model().currentRun().runDir.toStdString(), 0, "");
  // The same checkpoint and probe, evaluated on the Inspector's worker thread and here: LibTorch may
  // split the reductions over another number of threads there, so equal to float rounding.
  const auto& shown = inspector->values()->find(run.network.output)->values;
  const auto& expected = run.find(run.network.output)->values;
  ASSERT_EQ(shown.size(), expected.size());
  float scale = 0;
  for (float v : expected) scale = std::max(scale, std::abs(v));
  for (size_t i = 0; i < expected.size(); ++i) ASSERT_NEAR(shown[i], expected[i], 1e-5f * std::max(scale, 1.0f)) << "value " << i;
  // A softmax box: the attention weights.
  QApplication::processEvents();
  ASSERT_TRUE(inspector->showElement(Element::SoftmaxBox, "attn"));
  EXPECT_EQ(inspector->shownId(), "P");

  // Live: the training run sends the layer's values with its inspections. (It trains until
  // stopped: a run that finished before the check would have handed the layer back already.)
  ASSERT_TRUE(w.training().start(100000));
  ASSERT_TRUE(waitFor([&] { return inspector->values() && inspector->values()->step > 3; }, 180000));
  ASSERT_TRUE(w.model().isTraining(w.model().current()));
  EXPECT_EQ(w.controller()->networkLayer(), 0);
  w.controller()->stop();
  w.controller()->waitForFinished();
  // Selecting the training run shows its values, never the run shown before it meanwhile.
  w.model().select(0);  // MHSA
  {
    auto light = w.model().session().runs[0].config;
    light.train.batch = 4;
    light.train.threads = 1;
    light.train.eval_examples = 8;
    w.trainingPanel()->setConfig(light);
  }
  ASSERT_TRUE(w.training().start(100000));
  w.model().select(1);  // THSA, stopped: its checkpoint's values
  ASSERT_TRUE(waitFor([&] { return inspector->values() && inspector->values()->spec.variant == spec::Variant::Thsa && !w.teaching()->computing(); }, 180000));
  w.model().select(0);
  for (int i = 0; i < 3; ++i) QApplication::processEvents();
  EXPECT_TRUE(!inspector->values() || inspector->values()->spec.variant == spec::Variant::Mhsa)
      << "THSA's values stayed on show for the training MHSA run";
  ASSERT_TRUE(waitFor([&] { return inspector->values() && inspector->values()->spec.variant == spec::Variant::Mhsa; }, 180000));
  w.controller()->stop();
  w.controller()->waitForFinished();
  // A hidden inspector costs the training run nothing.
  dock->hide();
  QApplication::processEvents();
  EXPECT_EQ(w.controller()->networkLayer(), -1);
}

// Presenter mode: full screen, only the diagram and the inspector, large type, the plan on the
// arrow keys; everything comes back when it ends.
TEST(TeachingWindow, PresenterModeShowsTheDiagramAndInspectorAndComesBack) {
  app::MainWindow w(testOptions());
  w.resize(1280, 800);
  w.show();
  ASSERT_TRUE(QTest::qWaitForWindowExposed(&w));
  QApplication::processEvents();
  QStringList visibleBefore;
  for (QDockWidget* d : w.docks())
    if (d->isVisible()) visibleBefore << d->objectName();
  auto* presenter = w.presenter();
  presenter->toggleAction()->trigger();
  QApplication::processEvents();
  ASSERT_TRUE(presenter->active());
  EXPECT_TRUE(w.isFullScreen() || w.windowState().testFlag(Qt::WindowFullScreen));
  for (QDockWidget* d : w.docks()) {
    const bool shown = d->objectName() == "Diagram" || d->objectName() == "Inspector";
    EXPECT_EQ(d->isVisible(), shown) << d->objectName().toStdString();
  }
  EXPECT_FALSE(w.menuBar()->isVisible());
  EXPECT_GT(w.inspector()->font().pointSizeF(), QApplication::font().pointSizeF() * 1.4);
  // The arrow keys step the plan.
  ASSERT_TRUE(waitFor([&] { return w.inspector()->stepCount() > 0; }, 5000));
  const int before = w.inspector()->currentStep();
  QTest::keyClick(&w, Qt::Key_Right);
  EXPECT_EQ(w.inspector()->currentStep(), before + 1);
  QTest::keyClick(&w, Qt::Key_Left);
  EXPECT_EQ(w.inspector()->currentStep(), before);
  QTest::keyClick(&w, Qt::Key_Escape);
  QApplication::processEvents();
  EXPECT_FALSE(presenter->active());
  EXPECT_TRUE(w.menuBar()->isVisible());
  QStringList visibleAfter;
  for (QDockWidget* d : w.docks())
    if (d->isVisible()) visibleAfter << d->objectName();
  visibleAfter.sort();
  visibleBefore.sort();
  EXPECT_EQ(visibleAfter, visibleBefore);
  EXPECT_NEAR(w.inspector()->font().pointSizeF(), QApplication::font().pointSizeF(), 0.01);
}

namespace {

/// Every dock's place, to compare before presenter mode and after it.
struct DockPlace {
  bool hidden = false;
  bool shown = false;  ///< on screen (in front of its tab group)
  QRect geometry;
  QStringList tabbedWith;
  bool operator==(const DockPlace&) const = default;
};

std::map<QString, DockPlace> dockPlaces(app::MainWindow& w) {
  std::map<QString, DockPlace> places;
  for (QDockWidget* d : w.docks()) {
    DockPlace p{d->isHidden(), onScreen(d), onScreen(d) ? d->geometry() : QRect(), {}};
    for (QDockWidget* t : w.tabifiedDockWidgets(d)) p.tabbedWith << t->objectName();
    p.tabbedWith.sort();
    places[d->objectName()] = p;
  }
  return places;
}

void expectSamePlaces(const std::map<QString, DockPlace>& before, const std::map<QString, DockPlace>& after) {
  ASSERT_EQ(before.size(), after.size());
  for (const auto& [name, p] : before) {
    const DockPlace& q = after.at(name);
    EXPECT_EQ(q.hidden, p.hidden) << name.toStdString();
    EXPECT_EQ(q.shown, p.shown) << name.toStdString();
    EXPECT_EQ(q.geometry, p.geometry) << name.toStdString();
    EXPECT_EQ(q.tabbedWith, p.tabbedWith) << name.toStdString();
  }
}

/// The diagram and the inspector in presenter mode: both on screen, side by side, neither tabbed
/// with a dock that is shown, the diagram the larger share (at least half the window's width).
void expectDiagramBesideInspector(app::MainWindow& w) {
  QDockWidget* diagram = w.dock("Diagram");
  QDockWidget* inspector = w.dock("Inspector");
  ASSERT_TRUE(diagram && inspector);
  EXPECT_TRUE(onScreen(diagram)) << "the diagram is behind a tab";
  EXPECT_TRUE(onScreen(inspector)) << "the inspector is behind a tab";
  for (QDockWidget* d : {diagram, inspector})
    for (QDockWidget* t : w.tabifiedDockWidgets(d))
      EXPECT_TRUE(t->isHidden()) << d->objectName().toStdString() << " is tabbed with " << t->objectName().toStdString();
  EXPECT_LE(diagram->geometry().right(), inspector->geometry().left()) << "not side by side";
  EXPECT_FALSE(diagram->geometry().intersects(inspector->geometry()));
  EXPECT_GE(w.diagram()->width(), w.width() / 2) << "the diagram keeps a docked size";
  EXPECT_GE(inspector->width(), w.width() / 4) << "the inspector is too narrow to read";
  EXPECT_GT(w.diagram()->height(), w.height() / 2);
}

}  // namespace

// Finding N4: presenter mode tabbed the Inspector behind the diagram (the Diagram dock is tabbed
// with Spec (JSON), so splitDockWidget only added a tab) and kept the diagram at its docked size
// with ~9 px heatmap ticks. Now both are in view side by side, the diagram the larger share, the
// type larger everywhere (the inspector, its heatmap's tick labels, the diagram's header).
TEST(TeachingWindow, PresenterModePutsTheInspectorBesideALargeDiagram) {
  app::MainWindow w(testOptions());
  w.resize(1280, 800);
  w.show();
  ASSERT_TRUE(QTest::qWaitForWindowExposed(&w));
  settle();
  const double ticks = w.inspector()->heatmap()->tickLabelFont().pointSizeF();
  auto* header = w.diagram()->findChild<QLabel*>("DiagramHeader");
  ASSERT_TRUE(header);
  const int headerPx = QFontInfo(header->font()).pixelSize();
  w.presenter()->toggleAction()->trigger();
  settle();
  ASSERT_TRUE(w.presenter()->active());
  expectDiagramBesideInspector(w);
  EXPECT_GE(w.inspector()->heatmap()->tickLabelFont().pointSizeF(), ticks * 1.4) << "heatmap ticks stay small";
  EXPECT_GE(QFontInfo(header->font()).pixelSize(), headerPx * 1.4) << "the diagram's header stays small";
  EXPECT_DOUBLE_EQ(w.diagram()->presentationScale(), app::PresenterMode::kFontScale);
  // A window that changes size while presenting (a projector plugged in) keeps the shares.
  w.resize(1024, 768);
  settle();
  expectDiagramBesideInspector(w);
  QTest::keyClick(&w, Qt::Key_Escape);
  settle();
  EXPECT_FALSE(w.presenter()->active());
  EXPECT_DOUBLE_EQ(w.inspector()->heatmap()->tickLabelFont().pointSizeF(), ticks);
  EXPECT_EQ(QFontInfo(header->font()).pixelSize(), headerPx);
  EXPECT_DOUBLE_EQ(w.diagram()->presentationScale(), 1.0);
}

// Leaving presenter mode restores the previous layout exactly: every dock where it was, in its tab
// group, at its size (the layout of the window as the user left it, here the Design layout).
TEST(TeachingWindow, LeavingPresenterModeRestoresTheLayoutExactly) {
  app::MainWindow w(testOptions());
  w.resize(1280, 800);
  w.show();
  ASSERT_TRUE(QTest::qWaitForWindowExposed(&w));
  settle();
  for (const auto layout : {app::DockLayout::Default, app::DockLayout::Design, app::DockLayout::Teach}) {
    SCOPED_TRACE(app::dockLayoutName(layout).toStdString());
    app::applyDockLayout(w, layout, w.defaultLayout());
    settle();
    const auto before = dockPlaces(w);
    const QRect geometry = w.geometry();
    w.presenter()->setActive(true);
    settle();
    expectDiagramBesideInspector(w);
    w.presenter()->setActive(false);
    settle();
    EXPECT_EQ(w.geometry(), geometry);
    expectSamePlaces(before, dockPlaces(w));
  }
}

// With a lesson running, presenter mode keeps the lesson in view but compact: under the diagram, a
// strip of the height, its step's text in large type without the chooser and the step list; the
// diagram and the inspector stay side by side. Leaving gives the panel back as it was.
TEST(TeachingWindow, PresenterModeKeepsARunningLessonCompact) {
  app::MainWindow w(testOptions());
  w.resize(1280, 800);
  w.show();
  ASSERT_TRUE(QTest::qWaitForWindowExposed(&w));
  settle();
  ASSERT_TRUE(w.startLesson("mhsa_tensor_network"));
  settle();
  const auto before = dockPlaces(w);
  auto* panel = w.lessonPanel();
  auto* chooser = panel->findChild<QComboBox*>();
  auto* text = panel->findChild<QTextBrowser*>();
  ASSERT_TRUE(chooser && text);
  const double textPt = text->font().pointSizeF();
  w.presenter()->setActive(true);
  settle();
  expectDiagramBesideInspector(w);
  QDockWidget* lesson = w.dock("Lesson");
  EXPECT_TRUE(onScreen(lesson));
  EXPECT_TRUE(panel->compact());
  EXPECT_FALSE(chooser->isVisible());
  EXPECT_GE(lesson->geometry().top(), w.dock("Diagram")->geometry().bottom()) << "the lesson is not under the diagram";
  EXPECT_LE(lesson->height(), w.height() * (app::PresenterMode::kMaxLessonShare + 0.01)) << "the lesson takes the screen";
  EXPECT_GE(text->height(), 60) << "the lesson's text has no room";
  // Its step in view whole: the dock does not scroll its buttons away.
  QPushButton* next = nullptr;
  for (QPushButton* b : panel->findChildren<QPushButton*>())
    if (b->text().startsWith("Next")) next = b;
  ASSERT_TRUE(next);
  EXPECT_FALSE(next->visibleRegion().isEmpty()) << "the lesson's Next button is scrolled out of view";
  EXPECT_GT(text->font().pointSizeF(), textPt * 1.2);
  w.presenter()->setActive(false);
  settle();
  EXPECT_FALSE(panel->compact());
  EXPECT_TRUE(chooser->isVisible());
  EXPECT_DOUBLE_EQ(text->font().pointSizeF(), textPt);
  expectSamePlaces(before, dockPlaces(w));
}

// Finding N24: the Teach layout hid the Design dock that lessons ask for ("Switch the variant … in
// the Design dock"). Every dock a shipped lesson names ("… in the Design dock") is in view in the
// Teach layout, beside the lesson, the diagram and the inspector; the plots and labs the lessons
// open are there (in front or a tab).
TEST(TeachingLayout, TheTeachLayoutShowsTheDocksTheLessonsAskFor) {
  app::MainWindow w(testOptions());
  w.resize(1280, 800);
  w.show();
  ASSERT_TRUE(QTest::qWaitForWindowExposed(&w));
  settle();
  QAction* teach = nullptr;
  for (QMenu* m : w.findChildren<QMenu*>())
    if (m->title() == "&Layout")
      for (QAction* a : m->actions())
        if (a->text() == "&Teach") teach = a;
  ASSERT_TRUE(teach);
  teach->trigger();
  settle();
  QStringList named;
  for (const auto& lesson : w.lessonPanel()->lessons())
    for (const auto& step : lesson.steps)
      for (QDockWidget* d : w.docks()) {
        const QString said = QString::fromStdString(step.text + " " + step.action.prompt);
        if (said.contains(d->objectName() + " dock", Qt::CaseInsensitive) && !named.contains(d->objectName()))
          named << d->objectName();
      }
  EXPECT_TRUE(named.contains("Design")) << named.join(", ").toStdString();
  // The Cost dock shares C's and the Inspector's place; the runner raises it at each set_slot step
  // (LessonRunner, SetSlot), so the layout need not show it before a lesson asks for it.
  named.removeAll("Cost");
  EXPECT_TRUE(w.dock("Cost") && !w.dock("Cost")->isHidden()) << "the Cost dock is closed in the Teach layout";
  for (const QString& name : named + QStringList{"Lesson", "Design", "Diagram", "Inspector", "Curves", "Stable rank", "Attention maps"})
    EXPECT_TRUE(onScreen(w.dock(name))) << name.toStdString() << " is not in view in the Teach layout";
  for (QDockWidget* t : w.tabifiedDockWidgets(w.dock("Design")))
    EXPECT_FALSE(onScreen(t)) << "the Design form shares its place with " << t->objectName().toStdString();
  for (const char* name : {"Core matrix C", "Role clusters", "Bottleneck lab", "Stable-rank lab"})
    EXPECT_FALSE(w.dock(name)->isHidden()) << name << " (a lesson opens it)";
  EXPECT_GE(w.dock("Design")->height(), 200) << "the Design form is a sliver";
  EXPECT_GE(w.dock("Lesson")->height(), w.height() * 0.45);
  EXPECT_EQ(w.size(), QSize(1280, 800));
  // Another layout afterwards is as it always was (the Teach column does not stay).
  app::applyDockLayout(w, app::DockLayout::Default, w.defaultLayout());
  settle();
  EXPECT_FALSE(onScreen(w.dock("Lesson"))) << "the default layout keeps the lesson tabbed behind the Design form";
  EXPECT_TRUE(onScreen(w.dock("Design")));
  EXPECT_TRUE(onScreen(w.dock("Runs")));
}

// Finding N24: at 1280 x 800 in the default layout a started lesson's text was hidden in a 150-px
// tabbed dock (the chooser and the step list took it all). A lesson started there is read in the
// Teach layout: its step's text fits, the Design form it asks for beside it.
TEST(TeachingLayout, AStartedLessonGetsReadableRoomAt1280x800) {
  app::MainWindow w(testOptions());
  w.resize(1280, 800);
  w.show();
  ASSERT_TRUE(QTest::qWaitForWindowExposed(&w));
  settle();
  ASSERT_TRUE(w.startLesson("thsa_stable_rank"));
  settle();
  QDockWidget* lesson = w.dock("Lesson");
  EXPECT_TRUE(onScreen(lesson));
  for (QDockWidget* t : w.tabifiedDockWidgets(lesson)) EXPECT_FALSE(onScreen(t)) << t->objectName().toStdString();
  EXPECT_TRUE(onScreen(w.dock("Design")));
  EXPECT_TRUE(onScreen(w.dock("Diagram")));
  auto* text = w.lessonPanel()->findChild<QTextBrowser*>();
  ASSERT_TRUE(text);
  EXPECT_GE(text->viewport()->height(), 150) << "the lesson's text has no room";
  EXPECT_GE(text->viewport()->width(), 300);
  EXPECT_EQ(text->verticalScrollBar()->maximum(), 0) << "the first step's text does not fit";
  for (QPushButton* b : w.lessonPanel()->findChildren<QPushButton*>())
    EXPECT_FALSE(b->visibleRegion().isEmpty()) << b->text().toStdString() << " is scrolled out of view";
  // A lesson started where it already has room leaves the layout alone.
  const auto places = dockPlaces(w);
  ASSERT_TRUE(w.startLesson("mhsa_tensor_network"));
  settle();
  expectSamePlaces(places, dockPlaces(w));
}

// --- Lessons ---------------------------------------------------------------------------------------

namespace {

const char* const kLessonIds[] = {"mhsa_tensor_network", "thsa_stable_rank", "design_space_equal_parameters",
                                  "low_rank_bottleneck", "tp_roles", "linear_attention", "multilinear_block_terms",
                                  "kv_cache_mhsa_gqa_mla", "mixing_heads"};

// Finding N11: the second lesson trained in the first lesson's run. Each lesson works in a run of
// its own (docs/teaching.md), named by the lesson.
TEST(TeachingLessons, EachLessonWorksInARunOfItsOwn) {
  app::MainWindow w(testOptions());
  ASSERT_TRUE(w.startLesson("mhsa_tensor_network"));
  QApplication::processEvents();
  const quint64 first = w.lessons()->lessonRun();
  ASSERT_NE(first, 0u);
  const int runs = w.model().count();
  ASSERT_TRUE(w.startLesson("thsa_stable_rank"));
  QApplication::processEvents();
  const quint64 second = w.lessons()->lessonRun();
  EXPECT_NE(second, first);
  EXPECT_EQ(w.model().count(), runs + 1);
  EXPECT_EQ(w.model().currentRun().id, second);
  EXPECT_TRUE(w.model().currentRun().name.startsWith("Lesson · THSA")) << w.model().currentRun().name.toStdString();
  EXPECT_TRUE(w.model().run(w.model().indexOf(first)).name.startsWith("Lesson · Multi-head")) << "the first keeps its name";
}

/// Plays lesson `id` as a scripted learner: at every step with a check, the check must not hold
/// before the learner acts and must hold after doing exactly the step's action (what "Show me"
/// does); then Next. `afterStep`, when given, checks what step k's text says is visible once its
/// check holds.
void playLesson(const QString& id, const std::function<void(app::MainWindow&, size_t)>& afterStep = {}) {
  // The learner answers yes: a design edit of a run the lesson trained forks it (issue 33), after
  // asking, and the lesson goes on with the fork beside the trained run.
  auto options = testOptions();
  options.confirm = [](const QString&) { return true; };
  app::MainWindow w(options);
  w.resize(1600, 1000);
  w.show();
  ASSERT_TRUE(QTest::qWaitForWindowExposed(&w));
  ASSERT_TRUE(w.startLesson(id)) << id.toStdString();
  auto* panel = w.lessonPanel();
  auto* runner = w.lessons();
  const auto* lesson = panel->lesson();
  ASSERT_NE(lesson, nullptr);
  const auto settle = [] {
    for (int i = 0; i < 5; ++i) QApplication::processEvents(QEventLoop::AllEvents, 20);
  };
  for (size_t k = 0; k < lesson->steps.size(); ++k) {
    const auto& step = lesson->steps[k];
    SCOPED_TRACE(id.toStdString() + " step " + std::to_string(k + 1) + ": " + step.title);
    ASSERT_EQ(panel->stepIndex(), static_cast<int>(k));
    settle();
    ASSERT_TRUE(waitFor([&] { return w.inspector()->stepCount() > 0; }, 10000)) << "the plan of the step's design";
    if (step.check) {
      panel->setState(runner->state());
      EXPECT_FALSE(panel->checkMet()) << "met before the learner acted: " << spec::describeCheck(*step.check);
    }
    if (step.action.kind == spec::LessonActionKind::Train) {
      // A light batch on one thread: the check counts steps, and the test should not wait for a
      // full batch, nor for OpenMP threads spinning against the other tests ctest runs beside it
      // (the explorer itself makes them sleep; a test process does not).
      auto light = w.model().currentRun().config;
      light.train.batch = 4;
      light.train.eval_examples = 8;
      light.train.threads = 1;
      w.trainingPanel()->setConfig(light);
    }
    if (step.action.kind == spec::LessonActionKind::EditCore) ASSERT_FALSE(step.action.paint.empty()) << "a scripted edit";
    ASSERT_TRUE(runner->performAction()) << "the action could not be done";
    if (step.action.kind == spec::LessonActionKind::Train) {
      ASSERT_TRUE(waitFor([&] { return !w.controller()->running(); }, 600000));
      ASSERT_TRUE(waitFor([&] { return !w.model().isTraining(w.model().current()); }, 20000));
    }
    if (step.action.kind == spec::LessonActionKind::RunLab) {
      if (step.action.lab == spec::LessonLab::Bottleneck) ASSERT_TRUE(w.bottleneckLab()->waitForResult());
      else ASSERT_TRUE(w.stableRankLab()->waitForResult());
    }
    if (step.check) {
      const bool met = waitFor(
          [&] {
            panel->setState(runner->state());
            return panel->checkMet();
          },
          60000);
      EXPECT_TRUE(met) << "not met after the action: " << spec::describeCheck(*step.check) << "; "
                       << panel->checkText().toStdString();
      if (!met) return;
    }
    if (afterStep) {
      afterStep(w, k);
      if (::testing::Test::HasFatalFailure()) return;
    }
    if (k + 1 < lesson->steps.size()) ASSERT_TRUE(panel->next());
  }
  EXPECT_FALSE(panel->next()) << "the last step has no next";
}

}  // namespace

TEST(TeachingLessons, NineLessonsShipOneIdeaEach) {
  QString problems;
  const auto lessons = app::shippedLessons(&problems);
  EXPECT_TRUE(problems.isEmpty()) << problems.toStdString();
  QStringList ids;
  for (const auto& l : lessons) ids << QString::fromStdString(l.id);
  QStringList expected;
  for (const char* id : kLessonIds) expected << id;
  EXPECT_EQ(ids, expected) << "in their order";
  // The Lessons menu offers every one, and starting one shows its first step.
  app::MainWindow w(testOptions());
  QStringList titles;
  for (QAction* a : w.menuBar()->actions())
    if (a->text() == "&Lessons")
      for (QAction* item : a->menu()->actions()) titles << item->text();
  for (const auto& l : lessons) EXPECT_TRUE(titles.contains(QString::fromStdString(l.title))) << l.title;
}

TEST(TeachingLessons, MhsaAsATensorNetwork) { playLesson("mhsa_tensor_network"); }
TEST(TeachingLessons, ThsaAndTheStableRankOfC) { playLesson("thsa_stable_rank"); }
TEST(TeachingLessons, TheDesignSpaceAtEqualParameters) { playLesson("design_space_equal_parameters"); }
TEST(TeachingLessons, TheLowRankBottleneck) { playLesson("low_rank_bottleneck"); }
// Finding N7: the TP lesson trained reversal, whose tokens are only "integer digit" and "special",
// so the numerator and denominator clusters its text promises could not be seen; and its last step
// switched the trained TP run to MHSA in place, so there were no two runs to compare. The lesson
// trains arithmetic; the role view coloured by structural label shows numerator and denominator
// digits; the variant switch forks, and both runs train side by side on the same task.
TEST(TeachingLessons, TpRolesAndTheirClusters) {
  quint64 tpRun = 0;
  int runsAtStart = -1;
  playLesson("tp_roles", [&](app::MainWindow& w, size_t k) {
    const auto& step = w.lessonPanel()->lesson()->steps[k];
    if (k == 0) {
      runsAtStart = w.model().count() - 1;  // the lesson's run was added at its first step
      EXPECT_EQ(w.model().currentRun().config.task.name, "arithmetic") << "the lesson names its task";
    }
    if (step.action.kind == spec::LessonActionKind::Inspect && step.action.node == "x_r" && k > 0) {
      // "Clusters are structural roles": what the text says is visible in the Role clusters view.
      tpRun = w.model().currentRun().id;
      auto* roles = w.roleClusters();
      roles->setColourBy(viz::RoleClusterPlot::ColourBy::Label);
      ASSERT_TRUE(waitFor([&] { return roles->pointCount() > 0; }, 20000)) << "the TP run's role vectors";
      const QStringList labels = roles->groupNames();
      EXPECT_TRUE(labels.contains("numerator digit")) << labels.join(", ").toStdString();
      EXPECT_TRUE(labels.contains("denominator digit")) << labels.join(", ").toStdString();
      EXPECT_TRUE(labels.contains("integer digit")) << labels.join(", ").toStdString();
    }
    if (k + 1 == w.lessonPanel()->lesson()->steps.size()) {
      // Two lesson runs side by side: the TP run as it trained, and its MHSA fork, trained as long
      // on the same task.
      ASSERT_NE(tpRun, 0u);
      EXPECT_EQ(w.model().count(), runsAtStart + 2) << "the lesson's TP run and the fork";
      const int tp = w.model().indexOf(tpRun);
      ASSERT_GE(tp, 0);
      const auto& fork = w.model().currentRun();
      EXPECT_NE(fork.id, tpRun);
      EXPECT_EQ(fork.forkParent, tpRun);
      EXPECT_EQ(w.lessons()->lessonRun(), fork.id) << "the lesson went on in the fork";
      EXPECT_EQ(w.model().run(tp).config.model.attention.front().variant, spec::Variant::Tp) << "the TP run stays TP";
      EXPECT_EQ(fork.config.model.attention.front().variant, spec::Variant::Mhsa);
      EXPECT_EQ(fork.config.task.name, "arithmetic") << "the same task";
      EXPECT_FALSE(w.model().run(tp).runDir.isEmpty());
      EXPECT_FALSE(fork.runDir.isEmpty());
      EXPECT_NE(fork.runDir, w.model().run(tp).runDir) << "each in its own folder";
      EXPECT_FALSE(w.model().status(tp).startsWith("failed")) << w.model().status(tp).toStdString();
      EXPECT_FALSE(w.model().status(w.model().current()).startsWith("failed"));
    }
  });
}
TEST(TeachingLessons, LinearAndDimensionWiseAttention) { playLesson("linear_attention"); }
TEST(TeachingLessons, MultilinearBlockTermAttention) { playLesson("multilinear_block_terms"); }

// Issue 36: the KV cache lesson. Every cost a check asks for is the Cost dock's own number (the
// design panel's costs(), computed from the cost model for the design on show), and every loss is
// the lesson run's real evaluation loss; the MHSA run stays beside its GQA fork.
TEST(TeachingLessons, TheKvCacheOfMhsaGqaAndMla) {
  quint64 mhsaRun = 0;
  playLesson("kv_cache_mhsa_gqa_mla", [&](app::MainWindow& w, size_t k) {
    const auto costs = w.designPanel()->costs();
    ASSERT_TRUE(costs.valid);
    ASSERT_TRUE(costs.hasBaseline);
    const auto spec = w.model().currentSpec();
    const auto ratio = [&](const char* cost) { return *spec::lessonCostRatio(spec, cost, costs.context); };
    EXPECT_NEAR(ratio("kv_cache"), costs.kvCacheBytesPerToken / costs.mhsaKvCacheBytesPerToken, 1e-12);
    EXPECT_NEAR(ratio("decode_flops"), costs.decodeFlops / costs.mhsaDecodeFlops, 1e-12);
    EXPECT_NEAR(ratio("parameters"), double(costs.parameters) / double(costs.mhsaParameters), 1e-12);
    EXPECT_EQ(w.model().currentRun().config.task.name, "reverse") << "the default lesson task";
    if (k == 0) mhsaRun = w.model().currentRun().id;
    if (k == 3) {
      // The GQA-2 run is a fork of the trained MHSA run, trained as long; the MHSA run kept its design.
      const auto& fork = w.model().currentRun();
      EXPECT_EQ(fork.forkParent, mhsaRun);
      EXPECT_EQ(fork.config.model.attention.front().slots.kv_groups, 2);
      const int parent = w.model().indexOf(mhsaRun);
      ASSERT_GE(parent, 0);
      EXPECT_EQ(w.model().run(parent).config.model.attention.front().slots.kv_groups, 0);
      EXPECT_FALSE(w.model().run(parent).runDir.isEmpty());
      EXPECT_FALSE(fork.runDir.isEmpty());
    }
    if (k == 5) {
      EXPECT_EQ(spec.slots.latent.order, spec::LatentOrder::Absorbed);
      EXPECT_GT(costs.decodeFlops, costs.mhsaDecodeFlops) << "absorbed MLA pays in decoding FLOPs at these sizes";
    }
  });
}

// Issue 36: the intervention. Zeroing row 1 of C′ forks the trained talking-heads run and zeroes
// that row in the fork's starting weights (read back from the file); the trained run's checkpoint
// keeps its row; the fork trains on from the edited weights, and its curve continues.
TEST(TeachingLessons, MixingHeadsAndAnIntervention) {
  quint64 trained = 0;
  playLesson("mixing_heads", [&](app::MainWindow& w, size_t k) {
    const auto& run = w.model().currentRun();
    if (k == 1) trained = run.id;
    if (k == 2) {
      EXPECT_NE(run.id, trained);
      EXPECT_EQ(run.forkParent, trained);
      EXPECT_EQ(w.lessons()->lessonRun(), run.id) << "the lesson goes on in the fork";
      ASSERT_FALSE(run.initFrom.isEmpty());
      EXPECT_EQ(model_core::zeroMixingRows(run.initFrom.toStdString(), 0), std::vector<std::string>{"mix_post[1]"});
      const int parent = w.model().indexOf(trained);
      ASSERT_GE(parent, 0);
      EXPECT_TRUE(model_core::zeroMixingRows(w.model().run(parent).runDir.toStdString(), 0).empty())
          << "the trained run's own checkpoint is untouched";
    }
    if (k == 3) {
      EXPECT_FALSE(run.runDir.isEmpty());
      EXPECT_EQ(run.forkParent, trained);
      // The fork started from the snapshot with row 1 of C′ at zero (its init.json names it) and
      // trained on: its own checkpoint exists and training has moved the row.
      const auto record = model_core::parseWarmStartRecord(
          files::readWholeFile(run.runDir.toStdString() + "/init.json"), "init.json");
      EXPECT_NE(std::find(record.loaded.begin(), record.loaded.end(), "blocks.0.attn.mix_post"), record.loaded.end());
      EXPECT_EQ(QFileInfo(QString::fromStdString(record.source)).canonicalFilePath(), QFileInfo(run.initFrom).canonicalFilePath());
    }
  });
}

// The intervention on a fork whose design draws C′ (spec/slot_values.h): its warm start takes C′
// from the design, so the row is zeroed there too (and in the snapshot, which the check reads).
TEST(TeachingLessons, ZeroingARowOfADrawnCPrimeReachesTheForksDesign) {
  QStringList asked;
  app::MainWindow w(answeringOptions(asked, true));
  lightRun0(w);
  setPresetDesign(w, "talking_heads",
                  [](spec::AttentionSpec& s) { s.slots.post_mixing = spec::makeMixingPreset("average", s.sizes.H); });
  trainStopped(w, 3);
  const quint64 trained = w.model().currentRun().id;
  ASSERT_TRUE(w.lessons()->zeroRow("mix_post", 1));
  const auto& fork = w.model().currentRun();
  ASSERT_EQ(fork.forkParent, trained);
  EXPECT_EQ(model_core::zeroMixingRows(fork.initFrom.toStdString(), 0), std::vector<std::string>{"mix_post[1]"});
  const auto& drawn = w.model().currentSpec().slots.post_mixing.values;
  ASSERT_EQ(drawn.size(), 16u);
  for (int l = 0; l < 4; ++l) {
    EXPECT_EQ(drawn[size_t(4 + l)], 0.0) << "row 1 zeroed in the fork's design";
    EXPECT_EQ(drawn[size_t(l)], 0.25) << "row 0 as drawn";
  }
  EXPECT_EQ(w.model().undoStack()->undoText(), "zero row 1 of mix_post");
}

// Issue 36: example sessions for the modern designs on the King James Bible. Each compares designs
// at the same width, task and training settings; the KV cache session's runs cache exactly what the
// cost model says for MHSA, GQA-2, MQA and MLA in both orders.
TEST(ExampleSessions, TheModernDesignsCompareAtTheSameWidthAndTask) {
  QString kv, mixing;
  for (const auto& p : app::exampleSessionPaths()) {
    if (p.endsWith("kjv_kv_cache_designs.json")) kv = p;
    if (p.endsWith("kjv_mixing_heads.json")) mixing = p;
  }
  ASSERT_FALSE(kv.isEmpty());
  ASSERT_FALSE(mixing.isEmpty());
  const auto fair = [](const app::Session& s) {
    ASSERT_GE(s.runs.size(), 3u);
    const auto& first = s.runs.front().config;
    for (const auto& r : s.runs) {
      SCOPED_TRACE(r.name.toStdString());
      const auto& a = r.config.model.attention.front();
      EXPECT_TRUE(spec::validate(a).empty()) << spec::formatIssues(spec::validate(a));
      EXPECT_EQ(r.config.task.name, "char_lm");
      EXPECT_EQ(r.config.model.d_model, first.model.d_model);
      EXPECT_EQ(r.config.model.layers, first.model.layers);
      EXPECT_EQ(r.config.train.steps, first.train.steps);
      EXPECT_EQ(r.config.train.batch, first.train.batch);
      EXPECT_TRUE(a.causal) << "a decoder";
    }
  };
  const app::Session kvSession = app::Session::load(kv);
  fair(kvSession);
  std::map<QString, double> cache;
  for (const auto& r : kvSession.runs) cache[r.name] = *spec::lessonCostRatio(r.config.model.attention.front(), "kv_cache", 4096);
  EXPECT_DOUBLE_EQ(cache.at("MHSA"), 1.0);
  EXPECT_DOUBLE_EQ(cache.at("GQA-2"), 0.5);
  EXPECT_DOUBLE_EQ(cache.at("MQA"), 0.25);
  EXPECT_DOUBLE_EQ(cache.at("MLA"), 4.0 * (2 * 32 + 16) / 256.0) << "naive: every head's key (D + r) and value";
  EXPECT_DOUBLE_EQ(cache.at("MLA absorbed"), (64.0 + 16) / 256.0) << "absorbed: the latent and the rotary key";
  const app::Session mixSession = app::Session::load(mixing);
  fair(mixSession);
  bool talking = false, diff = false;
  for (const auto& r : mixSession.runs) {
    const auto& slots = r.config.model.attention.front().slots;
    talking = talking || (slots.pre_mix && slots.post_mix);
    diff = diff || slots.differential;
  }
  EXPECT_TRUE(talking);
  EXPECT_TRUE(diff);
}

// Finding N26: a teacher could not add a lesson from the window; lessons were read only from the
// installation's folder. Add lessons… reads each file as an installed lesson is read (a bad file
// gets its precise reason, nothing else is lost), copies a good one to the user's lessons folder,
// lists it at once in the Lesson dock and the Lessons menu, and the next start offers it too.
TEST(TeachingLessons, ATeacherAddsALessonFileFromTheWindow) {
  const QString userDir = app::userLessonDirectory();
  QDir(userDir).removeRecursively();
  QTemporaryDir tmp;
  ASSERT_TRUE(tmp.isValid());
  const auto lessonText = [](const QString& id, int order, const QString& action) {
    return QString(R"({"format": "tensorscope.lesson", "version": 1, "id": "%1", "title": "Our class: %1",
  "summary": "A teacher's own lesson.", "order": %2,
  "steps": [{"title": "Start", "text": "<p>MHSA, as we saw it in class.</p>",
             "design": {"preset": "mhsa", "sizes": {"F": 32, "H": 4, "D": 8}}, "action": %3}]}
)")
        .arg(id)
        .arg(order)
        .arg(action)
        .toUtf8();
  };
  const auto write = [&](const QString& name, const QByteArray& bytes) {
    QFile f(tmp.filePath(name));
    EXPECT_TRUE(f.open(QIODevice::WriteOnly));
    f.write(bytes);
    return f.fileName();
  };
  const QByteArray good = lessonText("our_class", 5, R"({"kind": "read", "prompt": "Read."})");
  const QString goodPath = write("our_class.json", good);
  const QString badPath = write("bad_class.json", lessonText("bad_class", 501, R"({"kind": "dance", "prompt": "Dance."})"));
  const QString clashPath = write("tp_roles.json", lessonText("tp_roles", 502, R"({"kind": "read", "prompt": "Read."})"));

  app::MainWindow w(testOptions());
  auto* panel = w.lessonPanel();
  const size_t shipped = panel->lessons().size();
  ASSERT_TRUE(w.startLesson("mhsa_tensor_network"));
  panel->goTo(2);  // a learner in the middle of a lesson
  QApplication::processEvents();
  const int step = panel->stepIndex();
  ASSERT_EQ(step, 2);
  const quint64 lessonRun = w.lessons()->lessonRun();
  ASSERT_NE(lessonRun, 0u);

  EXPECT_EQ(panel->addLessonFiles({badPath, goodPath, clashPath}), 1);
  const QString said = panel->problemsText();
  EXPECT_TRUE(said.contains("Added \u201cOur class: our_class\u201d")) << said.toStdString();
  EXPECT_TRUE(said.contains(badPath + ": steps[0].action.kind: ")) << "the reason, with its field: " << said.toStdString();
  EXPECT_TRUE(said.contains(clashPath + ": id: lesson id \"tp_roles\" is already offered by")) << said.toStdString();
  ASSERT_EQ(panel->lessons().size(), shipped + 1);
  EXPECT_EQ(panel->lessons().front().id, "our_class") << "listed in its order (5: first)";
  EXPECT_EQ(QString::fromStdString(panel->lesson()->id), "mhsa_tensor_network") << "the lesson on show stays";
  EXPECT_EQ(panel->stepIndex(), step) << "at its step";
  panel->goTo(step + 1);
  QApplication::processEvents();
  EXPECT_EQ(w.lessons()->lessonRun(), lessonRun) << "and goes on in its own run, though its place in the list moved";
  // Listed at once in the Lessons menu too, beside Add lessons….
  QStringList titles;
  for (QAction* a : w.menuBar()->actions())
    if (a->text() == "&Lessons")
      for (QAction* item : a->menu()->actions()) titles << item->text();
  EXPECT_TRUE(titles.contains("Our class: our_class")) << titles.join(" | ").toStdString();
  EXPECT_TRUE(titles.contains("&Add lessons…")) << titles.join(" | ").toStdString();
  // Copied whole into the user's folder; the refused files are not.
  QFile copy(QDir(userDir).filePath("our_class.json"));
  ASSERT_TRUE(copy.open(QIODevice::ReadOnly)) << copy.fileName().toStdString();
  EXPECT_EQ(copy.readAll(), good);
  EXPECT_EQ(QDir(userDir).entryList({"*.json"}, QDir::Files), QStringList{"our_class.json"});

  // The next start reads the user's folder: the lesson is offered and runs.
  app::MainWindow again(testOptions());
  const auto& lessons = again.lessonPanel()->lessons();
  EXPECT_EQ(lessons.size(), shipped + 1);
  EXPECT_TRUE(again.lessonPanel()->problemsText().isEmpty()) << again.lessonPanel()->problemsText().toStdString();
  EXPECT_TRUE(again.startLesson("our_class"));
  QDir(userDir).removeRecursively();
}
