// Issue 36, first part: the Design dock edits every slot of the one attention network (K/V
// groups, head mixing, gate, differential attention, MLA's latent) with undo and forks a trained
// run's design as other design edits do; the Preset box shows the design preset the spec is; the
// dock and the diagram's caption say what the network is (spec::nameDesigns) and the dock what it
// costs against MHSA (spec/cost_model.h); the Inspector names the run with the design it has now.
#include <gtest/gtest.h>

#include <QCheckBox>
#include <QComboBox>
#include <QDockWidget>
#include <QSpinBox>
#include <QTest>

#include "diagram_view/diagram_view.h"
#include "gui/design/design_panel.h"
#include "gui/shell/demo_runner.h"
#include "gui/shell/demo_script.h"
#include "gui/teaching/inspector_docks.h"
#include "gui/teaching/tensor_inspector.h"
#include "spec/cost_model.h"
#include "spec/design_names.h"
#include "spec/validation.h"
#include "window_test_util.h"

using namespace tensorscope;
using namespace tensorscope::test;

namespace {

/// Chooses the K/V groups item whose value is `G` (0: MHSA), as a click in the combo does.
void chooseGroups(app::DesignPanel* p, int G) {
  auto* box = slot<QComboBox>(p, "slots.kv_groups");
  ASSERT_TRUE(box);
  const int i = box->findData(G);
  ASSERT_GE(i, 0) << "no K/V groups item " << G;
  box->setCurrentIndex(i);
}

/// MHSA at the width of `s` (F, H, D): what the cost section compares with.
spec::AttentionSpec mhsaAt(const spec::AttentionSpec& s) {
  auto m = spec::makeSpecPreset("mhsa");
  m.sizes.F = s.sizes.F;
  m.sizes.H = s.sizes.H;
  m.sizes.D = s.sizes.D;
  m.sizes.R = s.sizes.H * s.sizes.D;
  m.sizes.seq_len = s.sizes.seq_len;
  m.causal = s.causal;
  m.bias = s.bias;
  return m;
}

}  // namespace

TEST(DesignSlots, EverySlotIsEditedInTheDockWithUndo) {
  app::MainWindow w(testOptions());
  w.model().select(0);  // MHSA, never trained: edited in place
  auto* p = w.designPanel();
  const auto before = w.model().currentSpec();
  ASSERT_EQ(before.variant, spec::Variant::Mhsa);
  ASSERT_EQ(before.sizes.H, 4);
  EXPECT_TRUE(p->slotsShown());
  auto* groups = slot<QComboBox>(p, "slots.kv_groups");
  ASSERT_TRUE(groups);
  QStringList items;
  for (int i = 0; i < groups->count(); ++i) items << groups->itemText(i);
  EXPECT_EQ(items, QStringList({"1 (MQA)", "2 (GQA-2)", "4 (MHSA)"})) << "the divisors of H = 4";

  chooseGroups(p, 1);
  EXPECT_EQ(w.model().currentSpec().slots.kv_groups, 1);
  EXPECT_EQ(w.model().undoStack()->undoText(), "K/V groups 1 (MQA)");
  chooseGroups(p, 2);
  EXPECT_EQ(w.model().currentSpec().slots.kv_groups, 2);
  slot<QCheckBox>(p, "slots.pre_mix")->setChecked(true);
  EXPECT_TRUE(w.model().currentSpec().slots.pre_mix);
  EXPECT_EQ(w.model().undoStack()->undoText(), "mix heads before the softmax on");
  slot<QCheckBox>(p, "slots.post_mix")->setChecked(true);
  EXPECT_TRUE(w.model().currentSpec().slots.post_mix);
  slot<QComboBox>(p, "slots.gate")->setCurrentIndex(1);
  EXPECT_EQ(w.model().currentSpec().slots.gate, spec::Gate::Headwise);
  EXPECT_EQ(w.model().undoStack()->undoText(), "Gate headwise");
  slot<QComboBox>(p, "slots.gate")->setCurrentIndex(2);
  EXPECT_EQ(w.model().currentSpec().slots.gate, spec::Gate::Elementwise);
  EXPECT_TRUE(p->isValid()) << p->problemsText().toStdString();
  // Differential attention with talking heads is refused by the spec layer: the problems list says so.
  slot<QCheckBox>(p, "slots.differential")->setChecked(true);
  EXPECT_TRUE(w.model().currentSpec().slots.differential);
  EXPECT_FALSE(p->isValid());
  EXPECT_TRUE(p->problemsText().contains("slots.differential")) << p->problemsText().toStdString();
  EXPECT_EQ(w.model().undoStack()->count(), 7);
  // Back to MHSA one undo at a time; the controls follow.
  for (int i = 0; i < 7; ++i) w.model().undoStack()->undo();
  EXPECT_EQ(w.model().currentSpec(), before);
  EXPECT_EQ(groups->currentData().toInt(), 0);
  EXPECT_FALSE(slot<QCheckBox>(p, "slots.pre_mix")->isChecked());
  EXPECT_EQ(slot<QComboBox>(p, "slots.gate")->currentIndex(), 0);
  EXPECT_TRUE(p->isValid());

  // MLA's latent: size, query rank, rotary part and order (the last three shown once it has a latent).
  EXPECT_TRUE(slot<QSpinBox>(p, "slots.latent.q_rank")->isHidden()) << "one MLA row while it is off";
  EXPECT_TRUE(slot<QComboBox>(p, "slots.latent.order")->isHidden());
  slot<QSpinBox>(p, "slots.latent.kv_rank")->setValue(24);
  EXPECT_FALSE(slot<QSpinBox>(p, "slots.latent.q_rank")->isHidden());
  EXPECT_FALSE(slot<QComboBox>(p, "slots.latent.order")->isHidden());
  slot<QSpinBox>(p, "slots.latent.q_rank")->setValue(12);
  slot<QSpinBox>(p, "slots.latent.rope_dim")->setValue(3);
  EXPECT_FALSE(p->isValid()) << "an odd rotary part";
  EXPECT_TRUE(p->problemsText().contains("slots.latent.rope_dim")) << p->problemsText().toStdString();
  slot<QSpinBox>(p, "slots.latent.rope_dim")->setValue(4);
  slot<QComboBox>(p, "slots.latent.order")->setCurrentIndex(1);
  const auto& l = w.model().currentSpec().slots.latent;
  EXPECT_EQ(l.kv_rank, 24);
  EXPECT_EQ(l.q_rank, 12);
  EXPECT_EQ(l.rope_dim, 4);
  EXPECT_EQ(l.order, spec::LatentOrder::Absorbed);
  EXPECT_EQ(w.model().undoStack()->undoText(), "MLA order absorbed");
  EXPECT_TRUE(p->isValid()) << p->problemsText().toStdString();
  w.model().undoStack()->undo();
  EXPECT_EQ(w.model().currentSpec().slots.latent.order, spec::LatentOrder::Naive);
  EXPECT_EQ(slot<QComboBox>(p, "slots.latent.order")->currentIndex(), 0);
  w.model().undoStack()->redo();
  EXPECT_EQ(w.model().currentSpec().slots.latent.order, spec::LatentOrder::Absorbed);

  // H changes: the K/V groups list is the divisors of the new H.
  w.model().undoStack()->clear();
  w.model().editDesign(before, "back");
  auto* heads = p->findChildren<QSpinBox*>().front();
  for (auto* b : p->findChildren<QSpinBox*>())
    if (b->toolTip().startsWith("H:")) heads = b;
  heads->setValue(6);
  items.clear();
  for (int i = 0; i < groups->count(); ++i) items << groups->itemText(i);
  EXPECT_EQ(items, QStringList({"1 (MQA)", "2 (GQA-2)", "3 (GQA-3)", "6 (MHSA)"}));
}

TEST(DesignSlots, CollaborativeAttentionIsEditedInTheDockWithUndo) {
  // Collaborative attention (§8.9): one row (D̃, "off") while it is off; a key space turns it on and
  // shows its content bias and mixing init; "off" turns every field back; each edit is one undo
  // step; the name follows the structure; shared K/V groups with it are named as a problem.
  app::MainWindow w(testOptions());
  w.model().select(0);  // MHSA, never trained: edited in place
  auto* p = w.designPanel();
  const auto before = w.model().currentSpec();
  auto* keyDim = slot<QSpinBox>(p, "slots.collaborative.key_dim");
  auto* contentBias = slot<QCheckBox>(p, "slots.collaborative.content_bias");
  auto* init = slot<QComboBox>(p, "slots.collaborative.mixing_init");
  ASSERT_TRUE(keyDim && contentBias && init);
  EXPECT_FALSE(keyDim->isHidden());
  EXPECT_TRUE(contentBias->isHidden()) << "one collaborative row while it is off";
  EXPECT_TRUE(init->isHidden());
  keyDim->setValue(24);
  const auto& c = w.model().currentSpec().slots.collaborative;
  EXPECT_EQ(c.key_dim, 24);
  EXPECT_TRUE(c.content_bias);
  EXPECT_FALSE(contentBias->isHidden());
  EXPECT_FALSE(init->isHidden());
  EXPECT_TRUE(p->isValid()) << p->problemsText().toStdString();
  EXPECT_TRUE(p->designNameText().contains("collaborative attention (D̃ = 24)")) << p->designNameText().toStdString();
  contentBias->setChecked(false);
  EXPECT_FALSE(w.model().currentSpec().slots.collaborative.content_bias);
  init->setCurrentIndex(1);
  EXPECT_EQ(w.model().currentSpec().slots.collaborative.init, spec::MixingInit::Concatenate);
  EXPECT_EQ(w.model().undoStack()->count(), 3);
  // Shared K/V groups with it: the problems list names the slot; undone.
  chooseGroups(p, 2);
  EXPECT_FALSE(p->isValid());
  EXPECT_TRUE(p->problemsText().contains("slots.collaborative")) << p->problemsText().toStdString();
  w.model().undoStack()->undo();
  EXPECT_TRUE(p->isValid()) << p->problemsText().toStdString();
  // Off: every field back to its default, one step.
  keyDim->setValue(0);
  EXPECT_FALSE(w.model().currentSpec().slots.collaborative.enabled());
  EXPECT_TRUE(contentBias->isHidden());
  for (int i = 0; i < 4; ++i) w.model().undoStack()->undo();
  EXPECT_EQ(w.model().currentSpec(), before);
  EXPECT_EQ(keyDim->value(), 0);
}

TEST(DesignSlots, VariantsWithoutSlotsHideTheSectionAndDropTheSlots) {
  app::MainWindow w(testOptions());
  w.model().select(1);  // THSA
  EXPECT_FALSE(w.designPanel()->slotsShown());
  w.model().select(0);
  EXPECT_TRUE(w.designPanel()->slotsShown());
  chooseGroups(w.designPanel(), 1);
  auto* variant = w.designPanel()->findChild<QComboBox*>("designVariant");
  ASSERT_TRUE(variant);
  ASSERT_EQ(variant->currentText(), "mhsa");
  variant->setCurrentText("tp");
  EXPECT_EQ(w.model().currentSpec().variant, spec::Variant::Tp);
  EXPECT_TRUE(w.model().currentSpec().slots.isMhsa()) << "tp has no slots: they go with the variant";
  EXPECT_TRUE(w.designPanel()->isValid()) << w.designPanel()->problemsText().toStdString();
  EXPECT_FALSE(w.designPanel()->slotsShown());
}

// Finding (issue 36): MLA at other sizes showed a blank Preset box. The slots' ranks and kernel
// sizes are sizes: MLA, TPA and MTA at any of them are still their presets; whether a part is on
// (a query latent, factorised queries, a convolution after the softmax) is the design.
TEST(DesignSlots, ThePresetBoxNamesAModernDesignAtOtherRanksAndKernelSizes) {
  app::DesignPanel p;
  QComboBox* preset = presetBox(&p);
  ASSERT_TRUE(preset);
  auto mla = spec::makeSpecPreset("mla");
  mla.sizes.D = 32;
  mla.sizes.F = mla.sizes.H * 32;
  mla.slots.latent.kv_rank = 64;
  mla.slots.latent.rope_dim = 16;
  ASSERT_TRUE(spec::validate(mla).empty());
  p.setSpec(mla);
  EXPECT_EQ(preset->currentText(), "mla");
  mla.slots.latent.q_rank = 24;  // a query latent: a design no preset is
  p.setSpec(mla);
  EXPECT_EQ(preset->currentIndex(), -1) << preset->currentText().toStdString();
  auto tpa = spec::makeSpecPreset("tpa");
  tpa.slots.tpa.q_rank = 4;
  tpa.slots.tpa.k_rank = tpa.slots.tpa.v_rank = 3;
  p.setSpec(tpa);
  EXPECT_EQ(preset->currentText(), "tpa");
  tpa.slots.tpa.q_rank = 0;  // queries as MHSA: T6_kvonly
  p.setSpec(tpa);
  EXPECT_EQ(preset->currentText(), "tpa_kv_only");
  auto mta = spec::makeSpecPreset("mta");
  mta.slots.mta.q_kernel = 3;
  mta.slots.mta.k_kernel = 5;
  p.setSpec(mta);
  EXPECT_EQ(preset->currentText(), "mta");
  mta.slots.mta.post_q_kernel = mta.slots.mta.post_k_kernel = 0;  // no convolution after the softmax
  p.setSpec(mta);
  EXPECT_EQ(preset->currentIndex(), -1) << preset->currentText().toStdString();
}

TEST(DesignSlots, ThePresetBoxShowsTheDesignPresetTheSpecIs) {
  app::DesignPanel p;
  QComboBox* preset = presetBox(&p);
  ASSERT_TRUE(preset);
  for (const auto& name : spec::designPresetNames()) {
    auto s = spec::makeSpecPreset(name);
    s.causal = true;  // as the demo runner and the lessons set them: still the preset
    s.sizes.seq_len = 12;
    p.setSpec(s);
    EXPECT_EQ(preset->currentText().toStdString(), name);
  }
  auto mqa = spec::makeSpecPreset("mhsa");
  mqa.slots.kv_groups = 1;  // built by hand
  p.setSpec(mqa);
  EXPECT_EQ(preset->currentText(), "mqa");
  p.setSpec(spec::makeSpecPreset("mhsa"));
  EXPECT_EQ(preset->currentText(), "mhsa");
  p.setSpec(spec::makeSpecPreset("skip_left"));
  EXPECT_EQ(preset->currentText(), "skip_left");
  // An edit in the dock: GQA, then GQA with pre-softmax mixing. No preset is that design: the box
  // is blank with its placeholder, not "mhsa" (the plain MHSA preset).
  p.setSpec(spec::makeSpecPreset("mhsa"));
  chooseGroups(&p, 2);
  EXPECT_EQ(preset->currentText(), "gqa");
  slot<QCheckBox>(&p, "slots.pre_mix")->setChecked(true);
  EXPECT_EQ(preset->currentIndex(), -1) << preset->currentText().toStdString();
  EXPECT_FALSE(preset->placeholderText().isEmpty());
  p.setSpec(p.spec());  // the window's echo of the edit
  EXPECT_EQ(preset->currentIndex(), -1) << preset->currentText().toStdString();
  slot<QCheckBox>(&p, "slots.pre_mix")->setChecked(false);
  EXPECT_EQ(preset->currentText(), "gqa") << "the edit undone by hand is the preset again";
  // Choosing a design preset in the box sets its slots.
  preset->setCurrentText("mla");
  EXPECT_EQ(p.spec().slots, spec::makeSpecPreset("mla").slots);
  EXPECT_EQ(slot<QSpinBox>(&p, "slots.latent.kv_rank")->value(), 32);
}

TEST(DesignSlots, EveryShippedPresetShowsItsOwnNameAppliedAndReopened) {
  app::DesignPanel p;
  QComboBox* preset = presetBox(&p);
  ASSERT_TRUE(preset);
  const auto names = spec::specPresetNames();
  ASSERT_EQ(preset->count(), static_cast<int>(names.size()));
  for (const auto& n : names) {
    const QString name = QString::fromStdString(n);
    const auto want = spec::makeSpecPreset(n);
    // Applied from the box, then echoed back by the window (setSpec of the same spec).
    preset->setCurrentText(name);
    EXPECT_EQ(p.spec(), want) << n;
    EXPECT_EQ(preset->currentText(), name) << "applied";
    p.setSpec(p.spec());
    EXPECT_EQ(preset->currentText(), name) << "echoed";
    // Reopened in a fresh dock (another run, a session file): the preset's own name, or for
    // "core:X" the name X that applies the same spec ("core:mhsa" stays: "mhsa" is the variant).
    app::DesignPanel q;
    q.setSpec(want);
    const QString shown = presetBox(&q)->currentText();
    EXPECT_TRUE(shown == name || (name.startsWith("core:") && shown == name.mid(5))) << n << " reopened as '"
                                                                                    << shown.toStdString() << "'";
    ASSERT_FALSE(shown.isEmpty()) << n;
    EXPECT_EQ(spec::makeSpecPreset(shown.toStdString()), want) << n << " reopened as " << shown.toStdString();
  }
  // THSA with MHSA's core is not the mhsa preset (an mhsa layer).
  app::DesignPanel q;
  q.setSpec(spec::makeSpecPreset("core:mhsa"));
  EXPECT_EQ(presetBox(&q)->currentText(), "core:mhsa");
}

TEST(DesignSlots, MlaInTheAbsorbedOrderIsStillTheMlaPresetAndAnEditIsNoPreset) {
  // The window, as a user goes: the mla preset on run 0, then the absorbed order from its slot.
  app::MainWindow w(testOptions());
  w.model().select(0);
  auto* p = w.designPanel();
  QComboBox* preset = presetBox(p);
  ASSERT_TRUE(preset);
  preset->setCurrentText("mla");
  ASSERT_EQ(w.model().currentSpec().slots, spec::makeSpecPreset("mla").slots);
  auto* order = slot<QComboBox>(p, "slots.latent.order");
  ASSERT_TRUE(order);
  order->setCurrentText("absorbed");
  ASSERT_EQ(w.model().currentSpec().slots.latent.order, spec::LatentOrder::Absorbed);
  EXPECT_EQ(preset->currentText(), "mla") << "naive and absorbed are one layer (the bench's mla_absorbed)";
  // Picking the name shown applies the preset again (one undo step); picking it over the preset's
  // own design changes nothing.
  {
    const int before = w.model().undoStack()->count();
    Q_EMIT preset->textActivated("mla");
    EXPECT_EQ(w.model().currentSpec().slots.latent.order, spec::LatentOrder::Naive);
    EXPECT_EQ(w.model().undoStack()->count(), before + 1);
    Q_EMIT preset->textActivated("mla");
    EXPECT_EQ(w.model().undoStack()->count(), before + 1) << "the preset's own design: nothing to apply";
    w.model().undoStack()->undo();
    ASSERT_EQ(w.model().currentSpec().slots.latent.order, spec::LatentOrder::Absorbed);
  }
  // Away to another run and back: the dock is set from the spec again.
  const auto absorbed = w.model().currentSpec();
  w.model().select(1);
  EXPECT_NE(preset->currentText(), "mla");
  w.model().select(0);
  ASSERT_EQ(w.model().currentSpec(), absorbed);
  EXPECT_EQ(preset->currentText(), "mla");
  // A fresh dock given the spec as a session file holds it.
  app::DesignPanel fresh;
  fresh.setSpec(absorbed);
  EXPECT_EQ(presetBox(&fresh)->currentText(), "mla");
  // A query latent makes a design no preset is: no name, never "mhsa".
  slot<QSpinBox>(p, "slots.latent.q_rank")->setValue(8);
  ASSERT_EQ(w.model().currentSpec().slots.latent.q_rank, 8);
  EXPECT_EQ(preset->currentIndex(), -1) << preset->currentText().toStdString();
  w.model().undoStack()->undo();
  EXPECT_EQ(preset->currentText(), "mla") << "undo brings the preset's design back";
  // A core picked in the dock under THSA: the box follows it.
  preset->setCurrentText("thsa");
  const auto core = p->findChildren<QComboBox*>();
  QComboBox* coreBox = nullptr;
  for (auto* c : core)
    if (c != preset && c->findText("skip_left") >= 0 && c->findText("custom") >= 0) coreBox = c;
  ASSERT_TRUE(coreBox);
  coreBox->setCurrentText("skip_left");
  ASSERT_TRUE(w.model().currentSpec().core);
  EXPECT_EQ(w.model().currentSpec().core->preset, "skip_left");
  EXPECT_EQ(preset->currentText(), "skip_left");
}

TEST(DesignSlots, TheDockAndTheDiagramSayWhatYouDrew) {
  app::MainWindow w(testOptions());
  w.model().select(0);
  auto* p = w.designPanel();
  std::vector<std::string> names = spec::designPresetNames();
  names.push_back("mhsa");
  for (const auto& name : names) {
    auto s = spec::makeSpecPreset(name);
    s.sizes.seq_len = w.model().currentSpec().sizes.seq_len;
    w.model().editDesign(s, QString::fromStdString("preset " + name));
    const auto designs = spec::nameDesigns(s);
    const QString first = QString::fromStdString(designs.front().name);
    const QString label = p->designNameText();
    EXPECT_TRUE(label.startsWith((designs.front().equals ? "Equals " : "Contains ") + first))
        << name << ": " << label.toStdString();
    for (const auto& d : designs) {
      EXPECT_TRUE(label.contains(QString::fromStdString(d.name))) << name << ": " << d.name;
      EXPECT_TRUE(p->designNameWhy().contains(QString::fromStdString(d.why))) << name << ": the why as tooltip";
    }
    EXPECT_EQ(w.diagram()->caption(), label) << name << ": the diagram's caption says the same";
    EXPECT_TRUE(w.diagram()->headerText().contains(label.toHtmlEscaped())) << name;
  }
  // The names the spec layer gives, spelled out.
  w.model().editDesign(spec::makeSpecPreset("gqa"), "gqa");
  EXPECT_EQ(p->designNameText(), "Equals GQA-2");
  w.model().editDesign(spec::makeSpecPreset("mhsa"), "mhsa");
  EXPECT_EQ(p->designNameText(), "Equals MHSA");
  // A hand-built MQA: MHSA with one K/V group, chosen in the dock.
  chooseGroups(p, 1);
  EXPECT_EQ(p->designNameText(), "Equals MQA");
  EXPECT_EQ(w.diagram()->caption(), "Equals MQA");
  EXPECT_TRUE(p->designNameWhy().contains("one key and value head shared by all 4 query heads"))
      << p->designNameWhy().toStdString();
  // Live: pre-softmax mixing on top names both parts.
  slot<QCheckBox>(p, "slots.pre_mix")->setChecked(true);
  EXPECT_TRUE(p->designNameText().contains("MQA") && p->designNameText().contains("talking heads, pre-softmax half"))
      << p->designNameText().toStdString();
}

TEST(DesignSlots, CostsFollowTheCostModelAgainstMhsaAtTheSameWidth) {
  app::DesignPanel p;
  p.setSpec(spec::makeSpecPreset("mla"));
  p.setPrecision(2);  // bfloat16
  p.setContext(1024);
  auto c = p.costs();
  const auto mla = p.spec();
  const auto mhsa = mhsaAt(mla);
  ASSERT_TRUE(c.valid && c.hasBaseline);
  EXPECT_EQ(c.context, 1024);
  EXPECT_EQ(c.parameters, spec::parameterCount(mla));
  EXPECT_EQ(c.mhsaParameters, spec::parameterCount(mhsa));
  EXPECT_DOUBLE_EQ(c.trainingFlopsPerToken, spec::estimateCost(mla, 1, 1024).training_flops / 1024);
  EXPECT_DOUBLE_EQ(c.mhsaTrainingFlopsPerToken, spec::estimateCost(mhsa, 1, 1024).training_flops / 1024);
  // A KV cache is a decoder's: the (non-causal) preset is decoded as the same layer made causal.
  auto mlaCausal = mla, mhsaCausal = mhsa;
  mlaCausal.causal = mhsaCausal.causal = true;
  EXPECT_DOUBLE_EQ(c.decodeFlops, spec::estimateDecodeCost(mlaCausal, 1024).flops);
  EXPECT_DOUBLE_EQ(c.mhsaDecodeFlops, spec::estimateDecodeCost(mhsaCausal, 1024).flops);
  EXPECT_TRUE(c.decodeNote.contains("not causal")) << c.decodeNote.toStdString();
  // MLA's naive order caches every head's key (D + rope_dim) and value (D): 4·(16 + 8 + 16) = 160
  // elements, 320 bytes at bfloat16; MHSA 2·4·16 = 128 elements, 256 bytes.
  EXPECT_DOUBLE_EQ(c.kvCacheBytesPerToken, spec::estimateDecodeCost(mlaCausal, 1024).cache_elements_per_token * 2);
  EXPECT_DOUBLE_EQ(c.kvCacheBytesPerToken, 320);
  EXPECT_DOUBLE_EQ(c.mhsaKvCacheBytesPerToken, 256);
  EXPECT_TRUE(p.costText().contains("KV cache per token: 320 B at bfloat16 (1.25× MHSA)")) << p.costText().toStdString();
  // The absorbed order caches the latent and the rotary key: 32 + 8 = 40 elements.
  slot<QComboBox>(&p, "slots.latent.order")->setCurrentIndex(1);
  c = p.costs();
  EXPECT_DOUBLE_EQ(c.kvCacheBytesPerToken, 80);
  auto absorbed = p.spec();
  absorbed.causal = true;
  EXPECT_DOUBLE_EQ(c.decodeFlops, spec::estimateDecodeCost(absorbed, 1024).flops);
  EXPECT_LT(c.decodeFlops, c.mhsaDecodeFlops * 10) << "sane";
  EXPECT_TRUE(p.costText().contains("KV cache per token: 80 B at bfloat16 (0.313× MHSA)")) << p.costText().toStdString();
  p.setPrecision(4);  // float32
  EXPECT_DOUBLE_EQ(p.costs().kvCacheBytesPerToken, 160);
  EXPECT_TRUE(p.costText().contains("160 B at float32")) << p.costText().toStdString();
  // GQA-2 halves MHSA's cache; the training and decoding lines follow the context length.
  p.setSpec(spec::makeSpecPreset("gqa"));
  p.setContext(64);
  c = p.costs();
  EXPECT_DOUBLE_EQ(c.kvCacheBytesPerToken, 2 * 2 * 16 * 4);
  EXPECT_DOUBLE_EQ(c.kvCacheBytesPerToken / c.mhsaKvCacheBytesPerToken, 0.5);
  EXPECT_DOUBLE_EQ(c.trainingFlopsPerToken, spec::estimateCost(p.spec(), 1, 64).training_flops / 64);
  EXPECT_LT(c.parameters, c.mhsaParameters) << "fewer K and V weights";
  EXPECT_TRUE(p.costText().contains(QString("parameters: %1 (%2× MHSA)")
                                        .arg(c.parameters)
                                        .arg(QString::number(double(c.parameters) / double(c.mhsaParameters), 'g', 3))))
      << p.costText().toStdString();
  EXPECT_TRUE(p.costText().contains("at L = 64")) << p.costText().toStdString();
  // Linear THSA keeps a fixed state instead of a cache.
  p.setSpec(spec::makeSpecPreset("thsa_linear"));
  EXPECT_TRUE(p.costText().contains("KV cache: none, a fixed state")) << p.costText().toStdString();
}

TEST(DesignSlots, ASlotEditOfATrainedRunForksIt) {
  QStringList asked;
  app::MainWindow w(answeringOptions(asked, true));
  lightRun0(w);  // MHSA
  trainStopped(w, 3);
  const auto original = w.model().run(0);
  const int runs = w.model().count();
  chooseGroups(w.designPanel(), 1);
  EXPECT_EQ(asked.size(), 1);
  EXPECT_EQ(w.model().run(0).config.model.attention, original.config.model.attention) << "the trained run stays";
  ASSERT_EQ(w.model().count(), runs + 1) << "the slot edit made a fork";
  EXPECT_EQ(w.model().current(), runs);
  EXPECT_EQ(w.model().currentRun().forkParent, original.id);
  EXPECT_EQ(w.model().currentSpec().slots.kv_groups, 1);
  EXPECT_EQ(w.designPanel()->designNameText(), "Equals MQA") << "the dock shows the fork";
  EXPECT_EQ(w.model().undoStack()->undoText(), "K/V groups 1 (MQA)") << "the edit is undoable on the fork";
}

// A preset picked from the box on a trained run asks to fork once; declined, the design stays and
// nothing asks again (the textActivated after the pick is not a second request).
TEST(DesignSlots, ADeclinedPresetOfATrainedRunIsAskedOnceAndChangesNothing) {
  QStringList asked;
  app::MainWindow w(answeringOptions(asked, false));
  lightRun0(w);  // MHSA
  trainStopped(w, 2);
  const auto trained = w.model().currentSpec();
  const int runs = w.model().count();
  QComboBox* preset = presetBox(w.designPanel());
  ASSERT_TRUE(preset);
  const QString shown = preset->currentText();
  QTest::keyClick(preset, Qt::Key_Down);  // a user's pick: currentTextChanged, then textActivated
  EXPECT_EQ(asked.size(), 1) << asked.join(" | ").toStdString();
  EXPECT_EQ(w.model().count(), runs) << "declined: no fork";
  EXPECT_EQ(w.model().currentSpec(), trained);
  EXPECT_EQ(preset->currentText(), shown) << "the box shows the design the run has";
  QTest::keyClick(preset, Qt::Key_Down);  // picked again: asked again, once
  EXPECT_EQ(asked.size(), 2);
  EXPECT_EQ(w.model().currentSpec(), trained);
}

// Finding: after `preset diff` on a selected run, the Inspector's header named the run for the
// design it had (e.g. "THSA heads-only") over the old design's values until the new ones came, and
// a demo `inspect` right after the preset read the old values.
TEST(DesignSlots, TheInspectorNamesTheRunWithTheDesignItHasAfterAPreset) {
  app::MainWindow w(testOptions());
  w.show();
  ASSERT_TRUE(QTest::qWaitForWindowExposed(&w));
  w.model().select(2);  // THSA heads-only, never trained
  QDockWidget* dock = w.dock("Inspector");
  ASSERT_TRUE(dock);
  dock->show();
  dock->raise();
  auto* inspector = w.inspector();
  ASSERT_TRUE(waitFor([&] { return inspector->values() && !w.teaching()->computing(); }, 20000));
  const QString name = w.model().currentRun().name;
  ASSERT_TRUE(inspector->captionText().startsWith(name)) << inspector->captionText().toStdString();

  app::DemoRunner runner(w.demoParts(), app::parseDemoScript("preset diff\nquit\n", "demo.txt"));
  bool done = false, staleShownAsReady = true;
  QObject::connect(&runner, &app::DemoRunner::finished, [&] {
    done = true;
    // Right after the edit: either the new design's values, or "computing" (what `inspect` waits on).
    staleShownAsReady = !w.teaching()->computing() && inspector->values() &&
                        !(inspector->values()->spec == w.model().currentSpec());
  });
  runner.start();
  ASSERT_TRUE(waitFor([&] { return done; }, 10000));
  EXPECT_FALSE(staleShownAsReady) << "the old design's values passed for the new design's";
  ASSERT_TRUE(w.model().currentSpec().slots.differential);
  ASSERT_TRUE(waitFor([&] {
    return inspector->values() && inspector->values()->spec == w.model().currentSpec() && !w.teaching()->computing();
  }, 20000));
  EXPECT_EQ(w.model().currentRun().name, name) << "the same run";
  const QString caption = inspector->captionText();
  EXPECT_TRUE(caption.startsWith(name + " · differential attention (Diff Transformer)")) << caption.toStdString();
  EXPECT_EQ(app::InspectorDocks::whose(name, w.model().currentSpec()),
            name + " · " + QString::fromStdString(spec::nameDesigns(w.model().currentSpec()).front().name));
}

TEST(DesignSlots, TheDemoSlotCommandEditsAsAUserDoes) {
  app::MainWindow w(testOptions());
  const auto play = [&](const char* text) {
    app::DemoRunner runner(w.demoParts(), app::parseDemoScript(text, "demo.txt"));
    bool done = false;
    QObject::connect(&runner, &app::DemoRunner::finished, [&] { done = true; });
    runner.start();
    EXPECT_TRUE(waitFor([&] { return done; }, 10000));
    return runner.exitCode();
  };
  EXPECT_EQ(play("run 0\npreset mla\nslot slots.latent.order absorbed\nslot slots.latent.q_rank 16\nquit\n"), 0);
  EXPECT_EQ(w.model().currentSpec().slots.latent.order, spec::LatentOrder::Absorbed);
  EXPECT_EQ(w.model().currentSpec().slots.latent.q_rank, 16);
  EXPECT_EQ(w.model().undoStack()->undoText(), "MLA query rank 16");
  EXPECT_EQ(play("preset mhsa\nslot slots.kv_groups 2\nslot slots.pre_mix on\nquit\n"), 0);
  EXPECT_EQ(w.model().currentSpec().slots.kv_groups, 2);
  EXPECT_TRUE(w.model().currentSpec().slots.pre_mix);
  EXPECT_NE(play("slot slots.kv_groups 3\nquit\n"), 0) << "3 does not divide H = 4: no such choice";
  EXPECT_NE(play("slot slots.nothing 1\nquit\n"), 0);
  EXPECT_NE(play("run 1\nslot slots.pre_mix on\nquit\n"), 0) << "THSA has no slots";
  EXPECT_THROW(app::parseDemoScript("slot slots.pre_mix\n", "demo.txt"), std::invalid_argument);
}
