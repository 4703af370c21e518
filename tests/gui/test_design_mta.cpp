// Issue 36, MTA and the head mixings: multi-token attention's slots (docs/attention-variants.md
// §8.8) in the Design dock — on/off, kernel sizes before and after the softmax, pad_key, head
// groups, the head norm, its rescale and the gate — each one undo step, each checked by the spec
// validator first (a refusal shows its reason and changes nothing), reachable from the preset list
// and the demo's `slot`; C′, C^pre and MTA's kernels as heatmap editors (painted values, frozen
// entries, presets, each an undo step; a trained run's values read-only with C′'s spectrum and
// stable rank, an edit of them forks the run); Match budget's "solve" box follows the design.
#include <gtest/gtest.h>

#include <QAbstractButton>
#include <QCheckBox>
#include <QComboBox>
#include <QDir>
#include <QPlainTextEdit>
#include <QSpinBox>
#include <QTemporaryDir>
#include <QTest>

#include <cstring>
#include <map>

#include "diagram_view/diagram_view.h"
#include "gui/design/design_panel.h"
#include "gui/design/head_mixing_view.h"
#include "gui/training/training_controller.h"
#include "gui/shell/demo_runner.h"
#include "gui/shell/demo_script.h"
#include "model_core/analysis.h"
#include "model_core/attention_layer.h"
#include "model_core/run_directory.h"
#include "model_core/safetensors.h"
#include "model_core/snapshots.h"
#include "spec/cost_model.h"
#include "spec/design_names.h"
#include "spec/slot_values.h"
#include "spec/validation.h"
#include "viz/matrix_heatmap.h"
#include "window_test_util.h"

using namespace tensorscope;
using namespace tensorscope::test;

namespace {

/// The values of a float32 safetensors tensor.
std::vector<double> valuesOf(const model_core::TensorData& t) {
  EXPECT_EQ(t.dtype, model_core::DType::F32);
  std::vector<float> f(t.bytes.size() / sizeof(float));
  std::memcpy(f.data(), t.bytes.data(), f.size() * sizeof(float));
  return std::vector<double>(f.begin(), f.end());
}

/// The weights of a freshly built layer of `s` (the module's own initialisation).
model_core::SafetensorsFile moduleWeights(const spec::AttentionSpec& s) {
  QTemporaryDir dir;
  const std::string path = QDir(dir.path()).filePath("w.safetensors").toStdString();
  model_core::AttentionLayer(s, 7).saveWeights(path);
  return model_core::readSafetensors(path);
}

}  // namespace

TEST(DesignMta, EveryMtaSlotIsEditedWithUndoAndTheValidatorRefusesWhatItWouldReject) {
  app::MainWindow w(testOptions());
  w.model().select(0);  // MHSA, never trained: edited in place
  auto* p = w.designPanel();
  auto* undo = w.model().undoStack();
  const auto before = w.model().currentSpec();
  ASSERT_EQ(before.variant, spec::Variant::Mhsa);
  ASSERT_EQ(before.sizes.H, 4);
  auto* on = slot<QCheckBox>(p, "slots.mta");
  auto* cq = slot<QSpinBox>(p, "slots.mta.q_kernel");
  auto* ck = slot<QSpinBox>(p, "slots.mta.k_kernel");
  auto* cq2 = slot<QSpinBox>(p, "slots.mta.post_q_kernel");
  auto* ck2 = slot<QSpinBox>(p, "slots.mta.post_k_kernel");
  auto* pad = slot<QComboBox>(p, "slots.mta.pad");
  auto* groups = slot<QSpinBox>(p, "slots.mta.head_group");
  auto* norm = slot<QCheckBox>(p, "slots.mta.group_norm");
  auto* rescale = slot<QCheckBox>(p, "slots.mta.norm_rescale");
  auto* gate = slot<QComboBox>(p, "slots.mta.out_gate");
  ASSERT_TRUE(on && cq && ck && cq2 && ck2 && pad && groups && norm && rescale && gate);
  EXPECT_TRUE(cq->isHidden() && gate->isHidden()) << "one MTA row while it is off";

  // On: the mta preset's MTA fields; the name says what the network is now.
  on->setChecked(true);
  const auto mta = spec::makeSpecPreset("mta").slots.mta;
  EXPECT_EQ(w.model().currentSpec().slots.mta, mta);
  EXPECT_EQ(undo->undoText(), "multi-token attention on");
  EXPECT_FALSE(cq->isHidden());
  EXPECT_EQ(cq->value(), 6);
  EXPECT_EQ(ck->value(), 11);
  EXPECT_TRUE(p->isValid()) << p->problemsText().toStdString();
  EXPECT_EQ(p->designNameText(), app::DesignPanel::describeDesigns(w.model().currentSpec()));
  EXPECT_TRUE(p->designNameText().contains(QString::fromStdString(spec::nameDesigns(w.model().currentSpec()).front().name)));
  EXPECT_EQ(w.diagram()->caption(), p->designNameText());
  int steps = undo->count();

  // Each field one undo step.
  cq->setValue(3);
  EXPECT_EQ(w.model().currentSpec().slots.mta.q_kernel, 3);
  EXPECT_EQ(undo->undoText(), "MTA c_q (logits) 3");
  pad->setCurrentIndex(1);  // left
  EXPECT_EQ(w.model().currentSpec().slots.mta.pad, spec::MtaPad::Left);
  EXPECT_EQ(undo->undoText(), "MTA pad_key left");
  ck->setValue(4);  // even: fine with pad left
  EXPECT_EQ(w.model().currentSpec().slots.mta.k_kernel, 4);
  norm->setChecked(false);
  EXPECT_FALSE(w.model().currentSpec().slots.mta.group_norm);
  gate->setCurrentIndex(2);
  EXPECT_EQ(w.model().currentSpec().slots.mta.out_gate, spec::Gate::Elementwise);
  EXPECT_EQ(undo->undoText(), "MTA gate elementwise");
  // A kernel size turned off turns its partner off; turned on from off, the partner becomes 1.
  cq2->setValue(0);
  EXPECT_EQ(w.model().currentSpec().slots.mta.post_q_kernel, 0);
  EXPECT_EQ(w.model().currentSpec().slots.mta.post_k_kernel, 0);
  EXPECT_EQ(ck2->value(), 0);
  ck2->setValue(5);
  EXPECT_EQ(w.model().currentSpec().slots.mta.post_k_kernel, 5);
  EXPECT_EQ(w.model().currentSpec().slots.mta.post_q_kernel, 1);
  groups->setValue(2);
  EXPECT_EQ(w.model().currentSpec().slots.mta.head_group, 2);
  EXPECT_TRUE(p->isValid()) << p->problemsText().toStdString();
  EXPECT_EQ(undo->count(), steps + 8);
  EXPECT_TRUE(p->slotRefusal().isEmpty());

  // Refusals: the validator's reason under the slots, nothing applied, the control back.
  const auto refusedLeaves = [&](auto change, const char* field, const char* words) {
    const auto spec = w.model().currentSpec();
    const int count = undo->count();
    change();
    EXPECT_EQ(w.model().currentSpec(), spec) << field << ": nothing applied";
    EXPECT_EQ(undo->count(), count) << field;
    const QString why = p->slotRefusal();
    EXPECT_TRUE(why.contains(field) && why.contains(words)) << why.toStdString();
    EXPECT_TRUE(p->isValid()) << "the design stays valid";
  };
  refusedLeaves([&] { groups->setValue(3); }, "slots.mta.head_group", "must divide H=4");
  EXPECT_EQ(groups->value(), 2) << "the control shows the design's value again";
  refusedLeaves([&] { rescale->setChecked(true); }, "slots.mta.norm_rescale", "set group_norm to true");
  EXPECT_FALSE(rescale->isChecked());
  pad->setCurrentIndex(0);  // both: the key kernel of 4 is now even
  EXPECT_EQ(w.model().currentSpec().slots.mta.pad, spec::MtaPad::Left) << "refused: c_k = 4 is even";
  EXPECT_TRUE(p->slotRefusal().contains("slots.mta.k_kernel")) << p->slotRefusal().toStdString();
  EXPECT_EQ(pad->currentIndex(), 1);
  {
    // The shown reason is spec::validate's message for that design, word for word.
    auto refused = w.model().currentSpec();
    refused.slots.mta.pad = spec::MtaPad::Both;
    const auto issues = spec::validate(refused);
    ASSERT_FALSE(issues.empty());
    EXPECT_TRUE(p->slotRefusal().contains(QString::fromStdString(issues.front().message))) << p->slotRefusal().toStdString();
  }
  // A valid edit clears the reason.
  norm->setChecked(true);
  EXPECT_TRUE(p->slotRefusal().isEmpty());
  rescale->setChecked(true);
  EXPECT_TRUE(w.model().currentSpec().slots.mta.norm_rescale);
  // The head convolution and the full C′ are two post-softmax mixings: post_mix on makes the design
  // invalid (that slot shows problems as before), and a head group with C′ on is refused.
  groups->setValue(0);
  slot<QCheckBox>(p, "slots.post_mix")->setChecked(true);
  refusedLeaves([&] { groups->setValue(2); }, "slots.mta.head_group", "post_mix");

  // Undo back to MHSA, redo forward: the controls follow.
  steps = undo->count();
  const auto last = w.model().currentSpec();
  while (undo->canUndo() && !(w.model().currentSpec() == before)) undo->undo();
  EXPECT_EQ(w.model().currentSpec(), before);
  EXPECT_FALSE(on->isChecked());
  EXPECT_TRUE(cq->isHidden());
  while (undo->canRedo()) undo->redo();
  EXPECT_EQ(w.model().currentSpec(), last);
  EXPECT_TRUE(on->isChecked());
  EXPECT_EQ(cq->value(), 3);
  EXPECT_EQ(pad->currentIndex(), 1);

  // MTA with the slot Gate is refused (MTA gates each head from its own output); off turns every field off.
  w.model().editDesign(before, "back");
  slot<QComboBox>(p, "slots.gate")->setCurrentIndex(1);
  on->setChecked(true);
  EXPECT_FALSE(w.model().currentSpec().slots.mta.enabled());
  EXPECT_FALSE(on->isChecked());
  EXPECT_TRUE(p->slotRefusal().contains("slots.gate")) << p->slotRefusal().toStdString();
  slot<QComboBox>(p, "slots.gate")->setCurrentIndex(0);
  on->setChecked(true);
  ASSERT_TRUE(w.model().currentSpec().slots.mta.enabled());
  on->setChecked(false);
  EXPECT_EQ(w.model().currentSpec().slots.mta, spec::Mta{});
  EXPECT_EQ(undo->undoText(), "multi-token attention off");
}

TEST(DesignMta, ThePresetListReachesMtaAndTheDemoSlotCommandSetsItsFields) {
  app::MainWindow w(testOptions());
  const auto play = [&](const char* text) {
    app::DemoRunner runner(w.demoParts(), app::parseDemoScript(text, "demo.txt"));
    bool done = false;
    QObject::connect(&runner, &app::DemoRunner::finished, [&] { done = true; });
    runner.start();
    EXPECT_TRUE(waitFor([&] { return done; }, 10000));
    return runner.exitCode();
  };
  w.model().select(0);
  auto* p = w.designPanel();
  auto* preset = presetBox(p);
  ASSERT_TRUE(preset);
  ASSERT_GE(preset->findText("mta"), 0);
  preset->setCurrentText("mta");
  EXPECT_EQ(w.model().currentSpec().slots, spec::makeSpecPreset("mta").slots);
  EXPECT_EQ(w.model().undoStack()->undoText(), "preset mta");
  EXPECT_EQ(p->designNameText(), app::DesignPanel::describeDesigns(spec::makeSpecPreset("mta")));
  EXPECT_TRUE(slot<QCheckBox>(p, "slots.mta")->isChecked());

  EXPECT_EQ(play("slot slots.mta.q_kernel 2\nslot slots.mta.pad right\nslot slots.mta.k_kernel 4\n"
                 "slot slots.mta.out_gate elementwise\nslot slots.mta.norm_rescale on\nquit\n"), 0);
  const auto& m = w.model().currentSpec().slots.mta;
  EXPECT_EQ(m.q_kernel, 2);
  EXPECT_EQ(m.k_kernel, 4);
  EXPECT_EQ(m.pad, spec::MtaPad::Right);
  EXPECT_EQ(m.out_gate, spec::Gate::Elementwise);
  EXPECT_TRUE(m.norm_rescale);
  EXPECT_EQ(w.model().undoStack()->undoText(), "MTA norm × (1 − λ_init) on");
  // A refused value fails the script with the validator's reason and changes nothing.
  const auto kept = w.model().currentSpec();
  EXPECT_NE(play("slot slots.mta.head_group 3\nquit\n"), 0) << "3 does not divide H = 4";
  EXPECT_EQ(w.model().currentSpec(), kept);
  EXPECT_NE(play("slot slots.mta.pad both\nquit\n"), 0) << "c_k = 4 is even";
  EXPECT_EQ(w.model().currentSpec(), kept);
  // The head-mixing view from a script: C′ of the preset, the kernel of head 2.
  EXPECT_EQ(play("mixing mix_post\nmixing mta_kernel 2\nquit\n"), 0);
  EXPECT_EQ(p->headMixing()->shownWeight(), "mta_kernel");
  EXPECT_EQ(p->headMixing()->shownIndex(), 2);
  EXPECT_NE(play("mixing head_kernel\nquit\n"), 0) << "no head convolution in this design";
  EXPECT_NE(play("mixing mta_kernel 4\nquit\n"), 0) << "H = 4: heads 0 to 3";
  EXPECT_THROW(app::parseDemoScript("slot slots.mta.pad\n", "demo.txt"), std::invalid_argument);
  // Drawing from a script: a preset, a value, a frozen rectangle; each one undo step.
  EXPECT_EQ(play("mixing mix_post\nmixing-draw preset average\nmixing-draw value 0.5 0 1\n"
                 "mixing-draw frozen 2 0 3 3\nquit\n"),
            0);
  const auto& post = w.model().currentSpec().slots.post_mixing;
  ASSERT_EQ(post.values.size(), 16u);
  EXPECT_EQ(post.values[1], 0.5);
  EXPECT_EQ(post.values[0], 0.25);
  EXPECT_EQ(spec::mixingTrainableCount(post, 4), 8);
  EXPECT_EQ(w.model().undoStack()->undoText(), "paint C′[2..3, 0..3] frozen");
  EXPECT_EQ(play("mixing mta_kernel 1\nmixing-draw preset key_blur\nquit\n"), 0);
  EXPECT_FALSE(w.model().currentSpec().slots.mta.kernel_values.empty());
  EXPECT_NE(play("mixing-draw preset swap\nquit\n"), 0) << "swap is a mixing preset, not a kernel's";
  EXPECT_NE(play("mixing-draw value x 0 0\nquit\n"), 0);
  EXPECT_NE(play("mixing-draw frozen 1\nquit\n"), 0);
}

TEST(DesignMta, TheHeadMixingViewShowsTheModulesStartingValues) {
  app::HeadMixingView view;
  view.setSpec(spec::makeSpecPreset("mhsa"));
  EXPECT_TRUE(view.isHidden()) << "MHSA has no mixing";
  EXPECT_TRUE(view.weights().isEmpty());
  for (const auto pad : {spec::MtaPad::Both, spec::MtaPad::Left, spec::MtaPad::Right}) {
    auto s = spec::makeSpecPreset("mta");
    s.slots.mta.pad = pad;
    s.slots.mta.k_kernel = 5;
    s.slots.mta.post_q_kernel = 2;
    s.slots.mta.post_k_kernel = 3;
    s.slots.post_mix = false;
    s.slots.mta.head_group = 2;
    ASSERT_TRUE(spec::validate(s).empty()) << spec::formatIssues(spec::validate(s));
    view.setSpec(s);
    EXPECT_EQ(view.weights(), QStringList({"mix_pre", "mta_kernel", "mta_kernel_after_sm", "head_kernel"}));
    // The view's names are the ones inspections carry (model_core::slotWeightNames), in their order.
    auto all = s;
    all.slots.post_mix = true;
    QStringList carried;
    for (const auto& n : model_core::slotWeightNames()) carried << QString::fromStdString(n);
    EXPECT_EQ(app::HeadMixingView::weightsOf(all), carried);
    // The oracle: the module's own initialisation, as it saves its weights.
    const auto module = moduleWeights(s);
    for (const auto& name : view.weights()) {
      const auto init = app::HeadMixingView::initialValues(s, name);
      const auto& t = module.tensors.at(name.toStdString());
      EXPECT_EQ(init.shape, t.shape) << name.toStdString();
      EXPECT_EQ(init.values, valuesOf(t)) << name.toStdString() << " pad " << spec::toString(pad);
      // Shown: every head or group of it, as the heatmap.
      const int count = init.shape.size() == 2 ? 1 : int(init.shape[0]);
      for (int i = 0; i < count; ++i) {
        ASSERT_TRUE(view.choose(name, i)) << name.toStdString();
        const auto* map = view.heatmap();
        const int rows = int(init.shape[init.shape.size() - 2]), cols = int(init.shape.back());
        ASSERT_EQ(map->rows(), rows);
        ASSERT_EQ(map->cols(), cols);
        for (int r = 0; r < rows; ++r)
          for (int c = 0; c < cols; ++c)
            EXPECT_EQ(map->value(r, c), init.values[size_t(i) * rows * cols + size_t(r) * cols + c]);
      }
    }
    EXPECT_FALSE(view.choose("mix_post")) << "post_mix is off";
  }
  // C′ of talking heads: the identity, stable rank H, and the reason it is read-only.
  auto th = spec::makeSpecPreset("talking_heads");
  th.sizes.H = 6;
  th.sizes.D = 8;
  view.setSpec(th);
  ASSERT_TRUE(view.choose("mix_post"));
  EXPECT_FALSE(view.isHidden());
  EXPECT_FALSE(view.showsTrained());
  EXPECT_NEAR(view.stableRank(), 6.0, 1e-9);
  EXPECT_TRUE(view.readoutText().startsWith("stable rank 6.000 of 6 heads")) << view.readoutText().toStdString();
  EXPECT_TRUE(view.noteText().contains("Click or drag to set entries")) << view.noteText().toStdString();
  EXPECT_TRUE(view.heatmap()->title().contains("C′ (mix_post) — initial values")) << view.heatmap()->title().toStdString();
  EXPECT_THROW(app::HeadMixingView::initialValues(spec::makeSpecPreset("mhsa"), "mix_post"), std::invalid_argument);
  // Drawn values (spec/slot_values.h) are where the module starts, and what the view shows.
  auto drawn = spec::makeSpecPreset("mta");
  drawn.sizes.H = 2;
  drawn.sizes.D = 4;
  drawn.slots.post_mixing = spec::makeMixingPreset("swap", 2);
  spec::setMtaKernelValues(drawn.slots.mta, 2, false, spec::makeMtaKernelPreset("key_blur", drawn.slots.mta, 2, false));
  ASSERT_TRUE(spec::validate(drawn).empty()) << spec::formatIssues(spec::validate(drawn));
  view.setSpec(drawn);
  const auto module = moduleWeights(drawn);
  for (const auto& name : view.weights()) {
    const auto init = app::HeadMixingView::initialValues(drawn, name);
    const auto& t = module.tensors.at(name.toStdString());
    EXPECT_EQ(init.shape, t.shape) << name.toStdString();
    for (size_t i = 0; i < init.values.size(); ++i)
      EXPECT_NEAR(init.values[i], valuesOf(t)[i], 1e-7) << name.toStdString() << " entry " << i;
  }
  ASSERT_TRUE(view.choose("mix_post"));
  EXPECT_TRUE(view.heatmap()->title().contains("as drawn")) << view.heatmap()->title().toStdString();
  EXPECT_EQ(view.heatmap()->value(0, 1), 1.0);
  EXPECT_NEAR(view.stableRank(), 2.0, 1e-9) << "a permutation keeps every head";
}

// Issue 36: C′, C^pre and the MTA kernels are edited as C is — click and drag set values, Shift+drag
// fills a rectangle, frozen and trainable are painted, presets redraw the weight — each one undo
// step of the document, live in the costs and the spec text; a structural edit that leaves the
// values without their shape drops them (the slot starts from its identity again).
TEST(DesignMta, CPrimeAndTheKernelsArePaintedFrozenAndPresetWithUndo) {
  app::MainWindow w(testOptions());
  w.model().select(0);
  const auto th = setPresetDesign(w, "talking_heads");
  auto* p = w.designPanel();
  auto* view = p->headMixing();
  auto* undo = w.model().undoStack();
  ASSERT_TRUE(view->choose("mix_post"));
  ASSERT_TRUE(view->editsDesign());
  const auto params0 = spec::parameterCount(w.model().currentSpec());
  // Set one value: one undo step named by the cell.
  view->setTool(app::HeadMixingView::Tool::SetValue);
  view->setPaintValue(0.5);
  view->editCell(0, 1);
  const auto& post = [&] { return w.model().currentSpec().slots.post_mixing; };
  ASSERT_EQ(post().values.size(), 16u);
  EXPECT_EQ(post().values[1], 0.5);
  EXPECT_EQ(post().values[0], 1.0);
  EXPECT_EQ(undo->undoText(), "set C′[0,1] = 0.5");
  EXPECT_EQ(view->heatmap()->value(0, 1), 0.5);
  EXPECT_TRUE(view->heatmap()->title().contains("as drawn"));
  auto* specText = w.findChild<QPlainTextEdit*>("specText");
  ASSERT_TRUE(specText);
  EXPECT_TRUE(specText->toPlainText().contains("\"post_mixing\"")) << "the spec text shows the drawn C′";
  // A drag is one stroke: one undo step for its cells.
  const int steps = undo->count();
  view->editCell(1, 0);
  view->editCell(1, 2, /*continuingStroke=*/true);
  view->editCell(1, 3, true);
  EXPECT_EQ(undo->count(), steps + 1) << "a drag merges into one undo step";
  EXPECT_EQ(post().values[4 + 3], 0.5);
  undo->undo();
  EXPECT_EQ(post().values[4 + 0], 0.0) << "the whole drag taken back";
  EXPECT_EQ(post().values[1], 0.5) << "the edit before it stays";
  // Paint frozen: the mask, hatched, and the costs follow (a frozen entry is stored, not trained).
  view->setTool(app::HeadMixingView::Tool::PaintFrozen);
  view->editRectangle(2, 0, 3, 3);
  EXPECT_EQ(undo->undoText(), "paint C′[2..3, 0..3] frozen");
  EXPECT_EQ(spec::mixingTrainableCount(post(), 4), 8);
  EXPECT_EQ(spec::parameterCount(w.model().currentSpec()), params0 - 8);
  EXPECT_EQ(view->heatmap()->mask()[8], 1) << "frozen entries are hatched";
  EXPECT_TRUE(view->readoutText().contains("8 of 16 entries trained")) << view->readoutText().toStdString();
  view->setTool(app::HeadMixingView::Tool::PaintTrainable);
  view->editCell(2, 2);
  EXPECT_EQ(spec::mixingTrainableCount(post(), 4), 9);
  // Presets: one undo step each; the identity preset is the design without drawn values again.
  EXPECT_EQ(view->presetNames(), QStringList({"identity", "average", "swap", "identity_frozen", "diagonal_only"}));
  ASSERT_TRUE(view->applyPreset("average"));
  EXPECT_EQ(undo->undoText(), "C′ preset average");
  EXPECT_NEAR(view->stableRank(), 1.0, 1e-9) << "every head reads the mean map: one head's worth";
  ASSERT_TRUE(view->applyPreset("identity"));
  EXPECT_TRUE(post().isDefault());
  EXPECT_EQ(w.model().currentSpec(), th) << "drawn back to the preset, byte for byte";
  EXPECT_FALSE(view->applyPreset("key_blur")) << "a kernel preset is not C′'s";
  undo->undo();
  EXPECT_NEAR(view->stableRank(), 1.0, 1e-9) << "undo brings the average back";
  // C^pre is its own weight.
  ASSERT_TRUE(view->choose("mix_pre"));
  view->setTool(app::HeadMixingView::Tool::SetValue);
  view->setPaintValue(-0.25);
  view->editCell(3, 0);
  EXPECT_EQ(w.model().currentSpec().slots.pre_mixing.values[12], -0.25);
  EXPECT_EQ(undo->undoText(), "set C^pre[3,0] = -0.25");
  // A structural edit that changes H drops the drawn values: the mixings start as the identity.
  auto narrower = w.model().currentSpec();
  narrower.sizes.H = 2;
  w.model().editDesign(narrower, "H = 2");
  EXPECT_EQ(w.model().currentSpec().sizes.H, 2);
  EXPECT_TRUE(post().isDefault());
  EXPECT_TRUE(w.model().currentSpec().slots.pre_mixing.isDefault());
  EXPECT_TRUE(spec::validate(w.model().currentSpec()).empty());
  undo->undo();
  EXPECT_EQ(w.model().currentSpec().slots.pre_mixing.values[12], -0.25) << "undo brings H and the values back";

  // MTA's kernels: one c_q x c_k grid per head, values only (no frozen entries).
  slot<QCheckBox>(p, "slots.mta")->setChecked(true);
  ASSERT_TRUE(view->choose("mta_kernel", 2));
  EXPECT_FALSE(view->findChild<QAbstractButton*>("headMixingTool2")->isEnabled()) << "a kernel has no frozen entries";
  view->setPaintValue(0.75);
  view->editCell(5, 0);
  const auto& m = w.model().currentSpec().slots.mta;
  ASSERT_EQ(m.kernel_values.size(), size_t(4 * m.q_kernel * m.k_kernel));
  EXPECT_EQ(m.kernel_values[size_t(2 * m.q_kernel * m.k_kernel + 5 * m.k_kernel + 0)], 0.75);
  EXPECT_EQ(undo->undoText(), "set θ[head 2][5,0] = 0.75");
  ASSERT_TRUE(view->applyPreset("key_blur"));
  EXPECT_NEAR(view->heatmap()->value(m.q_kernel - 1, 0), 1.0 / m.k_kernel, 1e-12);
  // Changing the kernel's size drops its drawn values.
  slot<QSpinBox>(p, "slots.mta.k_kernel")->setValue(5);
  EXPECT_TRUE(w.model().currentSpec().slots.mta.kernel_values.empty());
  EXPECT_TRUE(spec::validate(w.model().currentSpec()).empty()) << spec::formatIssues(spec::validate(w.model().currentSpec()));
  // κ is not drawn: a click says so and changes nothing.
  slot<QCheckBox>(p, "slots.post_mix")->setChecked(false);
  slot<QSpinBox>(p, "slots.mta.head_group")->setValue(2);
  ASSERT_TRUE(view->choose("head_kernel"));
  const auto before = w.model().currentSpec();
  view->editCell(0, 1);
  EXPECT_EQ(w.model().currentSpec(), before);
  EXPECT_TRUE(view->noteText().contains("the spec draws no values")) << view->noteText().toStdString();
  EXPECT_TRUE(view->presetNames().isEmpty());
}

TEST(DesignMta, ATrainedRunShowsItsLearnedCPrimeAndForksOnAnMtaEdit) {
  QStringList asked;
  app::MainWindow w(answeringOptions(asked, true));
  lightRun0(w);
  const auto th = setPresetDesign(w, "talking_heads");
  auto* p = w.designPanel();
  auto* view = p->headMixing();
  ASSERT_TRUE(view->choose("mix_post"));
  EXPECT_FALSE(view->showsTrained());
  EXPECT_TRUE(view->noteText().contains("has not trained yet")) << view->noteText().toStdString();
  trainStopped(w, 3);
  ASSERT_TRUE(w.model().hasCheckpoint(0));
  // The oracle: the checkpoint's mix_post read with the safetensors reader.
  QTemporaryDir snap;
  const qint64 step = model_core::snapshotCheckpoint(w.model().run(0).runDir.toStdString(), snap.path().toStdString());
  const auto file = model_core::readSafetensors(QDir(snap.path()).filePath("model.safetensors").toStdString());
  const auto learned = valuesOf(file.tensors.at("blocks.0.attn.mix_post"));
  ASSERT_EQ(learned.size(), 16u);
  ASSERT_TRUE(view->choose("mix_post"));
  EXPECT_TRUE(view->showsTrained());
  EXPECT_TRUE(view->heatmap()->title().contains(QString("trained, step %1").arg(step)))
      << view->heatmap()->title().toStdString();
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 4; ++c) EXPECT_DOUBLE_EQ(view->heatmap()->value(r, c), learned[size_t(r) * 4 + c]);
  EXPECT_NEAR(view->stableRank(), model_core::stableRank(learned, 4, 4), 1e-12);
  EXPECT_TRUE(view->noteText().contains("Trained values of " + w.model().run(0).name)) << view->noteText().toStdString();
  EXPECT_TRUE(view->noteText().contains("read-only")) << view->noteText().toStdString();

  // An MTA edit of the trained run forks it; the fork carries the edit, undoable there.
  const auto original = w.model().run(0);
  const int runs = w.model().count();
  slot<QCheckBox>(p, "slots.mta")->setChecked(true);
  EXPECT_EQ(asked.size(), 1);
  EXPECT_EQ(w.model().run(0).config.model.attention, original.config.model.attention) << "the trained run stays";
  ASSERT_EQ(w.model().count(), runs + 1) << "the MTA edit made a fork";
  EXPECT_EQ(w.model().currentRun().forkParent, original.id);
  EXPECT_EQ(w.model().currentSpec().slots.mta, spec::makeSpecPreset("mta").slots.mta);
  EXPECT_EQ(w.model().undoStack()->undoText(), "multi-token attention on");
  EXPECT_EQ(p->designNameText(), app::DesignPanel::describeDesigns(w.model().currentSpec()));
}

// Issue 36: a trained run's C′ is read-only; an edit asks to fork it and lands on the fork, whose
// C′ starts from the learned values with the edit (its warm start takes a drawn C′ from the design).
TEST(DesignMta, EditingATrainedRunsCPrimeForksItWithTheEditOnTheLearnedValues) {
  QStringList asked;
  app::MainWindow w(answeringOptions(asked, true));
  lightRun0(w);
  const auto th = setPresetDesign(w, "talking_heads");
  trainStopped(w, 3);
  ASSERT_TRUE(w.model().hasCheckpoint(0));
  auto* view = w.designPanel()->headMixing();
  ASSERT_TRUE(view->choose("mix_post"));
  ASSERT_TRUE(view->showsTrained());
  EXPECT_FALSE(view->editsDesign());
  EXPECT_TRUE(view->noteText().contains("Editing forks the run")) << view->noteText().toStdString();
  EXPECT_FALSE(view->applyPreset("average")) << "a preset does not change a trained run";
  EXPECT_TRUE(view->noteText().contains("click a cell to fork the run")) << view->noteText().toStdString();
  std::vector<double> learned;
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 4; ++c) learned.push_back(view->heatmap()->value(r, c));
  const auto parent = w.model().run(0);
  view->setPaintValue(0.0);
  view->editCell(2, 3);
  ASSERT_EQ(asked.size(), 1);
  EXPECT_TRUE(asked.front().contains("C′")) << asked.front().toStdString();
  EXPECT_EQ(w.model().run(0).config.model.attention, parent.config.model.attention) << "the trained run stays";
  ASSERT_EQ(w.model().currentRun().forkParent, parent.id);
  const auto fork = w.model().currentSpec();
  ASSERT_EQ(fork.slots.post_mixing.values.size(), 16u);
  for (int k = 0; k < 16; ++k)
    EXPECT_NEAR(fork.slots.post_mixing.values[size_t(k)], k == 2 * 4 + 3 ? 0.0 : learned[size_t(k)], 1e-7) << k;
  EXPECT_EQ(w.model().undoStack()->undoText(), "set C′[2,3] = 0");
  EXPECT_TRUE(view->editsDesign()) << "the fork, untrained, is edited directly";
  EXPECT_TRUE(view->heatmap()->title().contains("as drawn")) << view->heatmap()->title().toStdString();
  // C^pre of the fork: its starting snapshot's values until drawn, then edited as drawn.
  ASSERT_TRUE(view->choose("mix_pre"));
  EXPECT_TRUE(view->heatmap()->title().contains("fork start")) << view->heatmap()->title().toStdString();
  EXPECT_TRUE(view->editsDesign());
  const double pre23 = view->heatmap()->value(2, 3);
  view->setPaintValue(pre23 + 1.0);
  view->editCell(1, 1);
  ASSERT_EQ(w.model().currentSpec().slots.pre_mixing.values.size(), 16u);
  EXPECT_NEAR(w.model().currentSpec().slots.pre_mixing.values[2 * 4 + 3], pre23, 1e-7) << "the others start as learned";
  EXPECT_EQ(asked.size(), 1) << "no second question on the fork";
}

// Issue 36: C′ with its spectrum and stable rank follows a training run at each inspection, as the
// learned C does, instead of waiting for the run to stop; once it stops, the checkpoint's values.
// The oracle is the inspection the window received (model_core's Trainer test pins those against
// the checkpoint of the same step).
TEST(DesignMta, TheHeadMixingViewFollowsATrainingRunAtEachInspection) {
  QStringList asked;
  app::MainWindow w(answeringOptions(asked, true));
  w.model().select(0);
  const auto th = setPresetDesign(w, "talking_heads");
  {  // light: one layer, batch 4, one thread, an inspection and a checkpoint every 2 steps
    auto light = w.model().session().runs[0].config;
    ASSERT_TRUE(light.model.attention.front().slots.post_mix);
    light.train.batch = 4;
    light.model.layers = 1;
    light.train.threads = 1;
    light.train.eval_examples = 8;
    light.train.inspect_interval = light.train.checkpoint_interval = 2;
    w.trainingPanel()->setConfig(light);
  }
  std::map<qint64, std::shared_ptr<const model_core::InspectionSnapshot>> received;
  QObject::connect(w.controller(), &app::TrainingController::inspected,
                   [&](std::shared_ptr<const model_core::InspectionSnapshot> snap) { received[snap->step] = snap; });
  auto* view = w.designPanel()->headMixing();
  ASSERT_TRUE(view->choose("mix_post"));
  ASSERT_TRUE(w.training().start(100000));
  qint64 shown = -1;
  ASSERT_TRUE(waitFor(
      [&] {
        if (received.empty() || received.rbegin()->first < 6) return false;
        shown = received.rbegin()->first;
        return view->heatmap()->title().contains(QString("training, step %1").arg(shown));
      },
      180000))
      << view->heatmap()->title().toStdString();
  // Checked at once, before the next inspection can arrive (no events run in between).
  EXPECT_TRUE(view->showsTrained());
  const auto& weights = received.at(shown)->slot_weights.at(0);
  ASSERT_FALSE(weights.empty());
  ASSERT_EQ(weights[0].name, "mix_post");
  std::vector<double> live(weights[0].value.values.begin(), weights[0].value.values.end());
  ASSERT_EQ(live.size(), 16u);
  double moved = 0;
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 4; ++c) {
      EXPECT_DOUBLE_EQ(view->heatmap()->value(r, c), live[size_t(r) * 4 + c]);
      moved += std::abs(live[size_t(r) * 4 + c] - (r == c ? 1.0 : 0.0));
    }
  EXPECT_GT(moved, 0) << "trained, not the identity it starts as";
  EXPECT_NEAR(view->stableRank(), model_core::stableRank(live, 4, 4), 1e-12);
  EXPECT_TRUE(view->readoutText().contains("stable rank")) << view->readoutText().toStdString();
  EXPECT_TRUE(view->noteText().contains(QString("at step %1 while it trains").arg(shown))) << view->noteText().toStdString();
  // C^pre of the same inspection, chosen while training.
  ASSERT_TRUE(view->choose("mix_pre"));
  EXPECT_TRUE(view->heatmap()->title().contains("training, step")) << view->heatmap()->title().toStdString();

  // Stopped: the checkpoint's values, said so.
  w.controller()->stop();
  w.controller()->waitForFinished();
  ASSERT_TRUE(waitFor([&] { return !w.model().isTraining(0); }, 20000));
  ASSERT_TRUE(view->choose("mix_post"));
  ASSERT_TRUE(waitFor([&] { return view->heatmap()->title().contains("trained, step"); }, 20000))
      << view->heatmap()->title().toStdString();
  EXPECT_TRUE(view->noteText().contains("of its checkpoint")) << view->noteText().toStdString();
}

TEST(DesignMta, MatchBudgetsSolveBoxFollowsTheDesign) {
  app::MainWindow w(testOptions());
  w.model().select(0);
  auto* p = w.designPanel();
  auto* solve = p->costPanel()->findChild<QComboBox*>("matchSize");
  ASSERT_TRUE(solve);
  const auto listed = [&] {
    QStringList out;
    for (int i = 0; i < solve->count(); ++i) out << solve->itemData(i).toString();
    return out;
  };
  const auto edit = [&](const char* name) {
    auto s = spec::makeSpecPreset(name);
    s.sizes.seq_len = w.model().currentSpec().sizes.seq_len;
    w.model().editDesign(s, name);
  };
  edit("mla");
  EXPECT_EQ(listed(), QStringList({"", "H", "D", "F", "kv_rank", "rope_dim"}));
  solve->setCurrentIndex(solve->findData("kv_rank"));
  edit("mhsa");
  EXPECT_EQ(listed(), QStringList({"", "H", "D", "F"})) << "MHSA has no latent";
  EXPECT_EQ(solve->currentData().toString(), "") << "the stale kv_rank went back to any free size";
  EXPECT_THROW(p->matchBudget("params", "mhsa", "kv_rank"), std::invalid_argument);
  solve->setCurrentIndex(solve->findData("D"));
  edit("gqa");
  EXPECT_EQ(listed(), QStringList({"", "H", "kv_groups", "D", "F"}));
  EXPECT_EQ(solve->currentData().toString(), "D") << "a size the new design has stays chosen";
  edit("mta");
  EXPECT_TRUE(listed().contains("mta_q_kernel") && listed().contains("mta_k_kernel"));
  edit("thsa");
  EXPECT_EQ(listed(), QStringList({"", "H", "D", "R", "F"}));
}
