// Issue 36, second part: the rest of the design space in the Design dock — TPA's ranks and factors,
// the model's rotary positions with the layers that refuse them, λ of differential attention, the
// budget matcher — and the window around it: the cost beside C where a design has no C, a run
// named by its design renamed with it, the Design layout at 1280 x 800.
#include <gtest/gtest.h>

#include <QCheckBox>
#include <QComboBox>
#include <QDockWidget>
#include <QDoubleSpinBox>
#include <QLabel>
#include <QPushButton>
#include <QScrollArea>
#include <QScrollBar>
#include <QSpinBox>
#include <QStandardItemModel>
#include <QTableWidget>
#include <QTest>

#include <algorithm>
#include <cmath>

#include "gui/design/design_panel.h"
#include "gui/shell/demo_runner.h"
#include "gui/shell/demo_script.h"
#include "gui/shell/dock_layouts.h"
#include "model_core/learned_lambda.h"
#include "spec/budget_match.h"
#include "spec/cost_model.h"
#include "spec/design_names.h"
#include "spec/validation.h"
#include "window_test_util.h"

using namespace tensorscope;
using namespace tensorscope::test;

namespace {

/// A light run 0: one layer, batch 4, one thread (it trains a few steps in a test).
/// The design preset `name` as the demo's `preset` sets it on the current run (its causality and N).
void preset(app::MainWindow& w, const char* name) {
  const auto before = w.model().currentSpec();
  auto s = spec::makeSpecPreset(name);
  s.causal = before.causal;
  s.sizes.seq_len = before.sizes.seq_len;
  w.model().editDesign(s, QString("preset ") + name);
}

}  // namespace

TEST(DesignSpace, TpaRanksAndFactorsAreEditedWithUndoAndRefusedCombinationsNamed) {
  app::MainWindow w(testOptions());
  w.model().select(0);  // MHSA, never trained: edited in place
  auto* p = w.designPanel();
  auto* undo = w.model().undoStack();
  const auto before = w.model().currentSpec();
  auto* kRank = slot<QSpinBox>(p, "slots.tpa.k_rank");
  ASSERT_TRUE(kRank);
  EXPECT_EQ(kRank->specialValueText(), "off");
  for (const char* f : {"slots.tpa.v_rank", "slots.tpa.q_rank", "slots.tpa.contextual_a", "slots.tpa.contextual_b",
                        "slots.tpa.rope", "slots.tpa.rope_base", "slots.tpa.group_norm"})
    EXPECT_TRUE(p->slotWidget(f)->isHidden()) << f << ": one TPA row while it is off";

  // R_K from off: TPA on with R_V = R_K (T6), queries as MHSA: T6's keys-and-values-only form.
  kRank->setValue(2);
  auto t = w.model().currentSpec().slots.tpa;
  EXPECT_EQ(t.k_rank, 2);
  EXPECT_EQ(t.v_rank, 2);
  EXPECT_EQ(t.q_rank, 0);
  EXPECT_TRUE(t.contextual_a && t.rope);
  EXPECT_EQ(undo->undoText(), "TPA key rank R_K 2");
  EXPECT_TRUE(p->isValid()) << p->problemsText().toStdString();
  EXPECT_TRUE(p->designNameText().startsWith(
      QString::fromStdString("Equals " + spec::nameDesigns(w.model().currentSpec()).front().name)))
      << p->designNameText().toStdString();
  EXPECT_TRUE(p->designNameText().contains("T6-KVonly")) << p->designNameText().toStdString();
  for (const char* f : {"slots.tpa.v_rank", "slots.tpa.q_rank", "slots.tpa.contextual_a", "slots.tpa.contextual_b",
                        "slots.tpa.rope", "slots.tpa.rope_base", "slots.tpa.group_norm"})
    EXPECT_FALSE(p->slotWidget(f)->isHidden()) << f;

  slot<QSpinBox>(p, "slots.tpa.q_rank")->setValue(6);
  slot<QSpinBox>(p, "slots.tpa.v_rank")->setValue(3);
  EXPECT_EQ(undo->undoText(), "TPA value rank R_V 3");
  t = w.model().currentSpec().slots.tpa;
  EXPECT_EQ(t.q_rank, 6);
  EXPECT_EQ(t.v_rank, 3);
  EXPECT_EQ(t.k_rank, 2) << "an R_V edit leaves R_K";
  EXPECT_TRUE(p->designNameText().startsWith("Equals Tensor Product Attention (TPA)")) << p->designNameText().toStdString();
  slot<QCheckBox>(p, "slots.tpa.contextual_a")->setChecked(false);
  EXPECT_FALSE(w.model().currentSpec().slots.tpa.contextual_a);
  EXPECT_EQ(undo->undoText(), "TPA head factors depend on the token off");
  EXPECT_TRUE(p->designNameText().contains("non-contextual TPA")) << p->designNameText().toStdString();
  slot<QCheckBox>(p, "slots.tpa.rope")->setChecked(false);
  EXPECT_FALSE(w.model().currentSpec().slots.tpa.rope);
  EXPECT_TRUE(p->slotWidget("slots.tpa.rope_base")->isHidden()) << "no base without the rotary";
  slot<QCheckBox>(p, "slots.tpa.rope")->setChecked(true);
  auto* base = slot<QDoubleSpinBox>(p, "slots.tpa.rope_base");
  base->setValue(500000);
  EXPECT_DOUBLE_EQ(w.model().currentSpec().slots.tpa.rope_base, 500000);
  EXPECT_EQ(undo->undoText(), "TPA rotary base 500000");
  EXPECT_TRUE(p->isValid()) << p->problemsText().toStdString();

  // Refused combinations are kept as drawn and named by the validator, not clamped.
  base->setValue(1);
  EXPECT_DOUBLE_EQ(w.model().currentSpec().slots.tpa.rope_base, 1) << "not clamped";
  EXPECT_FALSE(p->isValid());
  EXPECT_TRUE(p->problemsText().contains("slots.tpa.rope_base: rope_base must be above 1")) << p->problemsText().toStdString();
  EXPECT_TRUE(p->designNameText().isEmpty());
  undo->undo();
  EXPECT_TRUE(p->isValid());
  auto* groups = slot<QComboBox>(p, "slots.kv_groups");
  groups->setCurrentIndex(groups->findData(2));
  EXPECT_EQ(w.model().currentSpec().slots.kv_groups, 2) << "kept as drawn";
  EXPECT_FALSE(p->isValid());
  const auto issues = spec::validate(w.model().currentSpec());
  ASSERT_FALSE(issues.empty());
  EXPECT_TRUE(p->problemsText().contains(QString::fromStdString(issues.front().message))) << p->problemsText().toStdString();
  EXPECT_TRUE(p->problemsText().contains("tensor product attention takes no other slot")) << p->problemsText().toStdString();
  undo->undo();
  EXPECT_TRUE(p->isValid());

  // Constant feature factors (Table 1's non-contextual B) need contextual head factors: with both
  // constant the validator names the field; head factors back on make it valid. T6's head norm.
  slot<QCheckBox>(p, "slots.tpa.contextual_b")->setChecked(false);
  EXPECT_FALSE(w.model().currentSpec().slots.tpa.contextual_b) << "kept as drawn";
  EXPECT_FALSE(p->isValid());
  EXPECT_TRUE(p->problemsText().contains("slots.tpa.contextual_b: with constant head factors")) << p->problemsText().toStdString();
  slot<QCheckBox>(p, "slots.tpa.contextual_a")->setChecked(true);
  EXPECT_TRUE(p->isValid()) << p->problemsText().toStdString();
  EXPECT_TRUE(p->designNameText().contains("constant feature factors")) << p->designNameText().toStdString();
  slot<QCheckBox>(p, "slots.tpa.group_norm")->setChecked(true);
  EXPECT_TRUE(w.model().currentSpec().slots.tpa.group_norm);
  EXPECT_EQ(undo->undoText(), "TPA head norm (T6 using_groupnorm) on");
  for (int i = 0; i < 3; ++i) undo->undo();
  EXPECT_TRUE(w.model().currentSpec().slots.tpa.contextual_b);
  EXPECT_FALSE(w.model().currentSpec().slots.tpa.group_norm);
  EXPECT_TRUE(slot<QCheckBox>(p, "slots.tpa.contextual_b")->isChecked()) << "the box follows undo";

  // R_K off turns TPA off as a whole: MHSA again, one undo step.
  const auto tpa = w.model().currentSpec();
  kRank->setValue(0);
  EXPECT_TRUE(w.model().currentSpec().slots.isMhsa());
  EXPECT_EQ(undo->undoText(), "TPA key rank R_K off");
  EXPECT_EQ(p->designNameText(), "Equals MHSA");
  undo->undo();
  EXPECT_EQ(w.model().currentSpec(), tpa);
  EXPECT_EQ(kRank->value(), 2);
  EXPECT_EQ(slot<QSpinBox>(p, "slots.tpa.q_rank")->value(), 6) << "the controls follow undo";
  while (undo->canUndo()) undo->undo();
  EXPECT_EQ(w.model().currentSpec(), before);
  EXPECT_EQ(kRank->value(), 0);
  EXPECT_TRUE(p->slotWidget("slots.tpa.q_rank")->isHidden());
}

TEST(DesignSpace, MatchBudgetSolvesTheFreeSizeShowsTheResidualAndAppliesItAsOneUndoStep) {
  app::MainWindow w(testOptions());
  w.model().select(0);
  preset(w, "mla");
  auto* p = w.designPanel();
  auto* undo = w.model().undoStack();
  const auto mla = w.model().currentSpec();
  const int steps = undo->count();
  auto* apply = p->costPanel()->findChild<QPushButton*>("matchApply");
  ASSERT_TRUE(apply);
  EXPECT_FALSE(apply->isEnabled()) << "nothing to apply before a match";

  // MLA's latent size solved to MHSA's parameters at the same F, H, D: what the matcher gives.
  auto mhsa = spec::makeSpecPreset("mhsa");
  mhsa.sizes.seq_len = mla.sizes.seq_len;
  mhsa.causal = mla.causal;
  const auto expected = spec::matchBudget(mla, mhsa, spec::BudgetCost::Parameters, "kv_rank", 0.01, 4096);
  ASSERT_TRUE(expected.found) << expected.reason;
  ASSERT_NE(expected.best.value, mla.slots.latent.kv_rank);
  const QString said = p->matchBudget("params", "mhsa", "kv_rank");
  EXPECT_TRUE(said.startsWith(QString("kv_rank: %1 → %2.").arg(mla.slots.latent.kv_rank).arg(expected.best.value)))
      << said.toStdString();
  EXPECT_TRUE(said.contains(QString("residual %1 %").arg(QString::number(100 * expected.best.residual, 'f', 2))))
      << said.toStdString();
  EXPECT_EQ(w.model().currentSpec(), mla) << "Match alone changes nothing";
  EXPECT_EQ(undo->count(), steps);
  EXPECT_TRUE(apply->isEnabled());
  ASSERT_TRUE(p->applyMatchedBudget());
  auto matched = expected.matched;
  matched.causal = mla.causal;
  EXPECT_EQ(w.model().currentSpec(), matched);
  EXPECT_EQ(w.model().currentSpec().slots.latent.kv_rank, expected.best.value);
  EXPECT_EQ(undo->count(), steps + 1) << "one undo step";
  EXPECT_EQ(undo->undoText(), QString("match parameters to MHSA: kv_rank %1").arg(expected.best.value));
  EXPECT_FALSE(apply->isEnabled());
  EXPECT_NEAR(double(p->costs().parameters) / double(spec::parameterCount(mhsa)), 1.0, 0.01)
      << "the cost section shows the matched design";
  undo->undo();
  EXPECT_EQ(w.model().currentSpec(), mla);

  // Another cost and baseline, any free size: the dock says what the matcher says.
  preset(w, "gqa");
  const auto gqa = w.model().currentSpec();
  auto gqaCausal = gqa;
  gqaCausal.causal = true;
  auto mqa = spec::makeSpecPreset("mqa");
  mqa.sizes.seq_len = gqa.sizes.seq_len;
  mqa.causal = true;
  const auto kv = spec::matchBudget(gqaCausal, mqa, spec::BudgetCost::KvCache, "", 0.01, 4096);
  const QString kvSaid = p->matchBudget("kv", "mqa", "");
  if (kv.found)
    EXPECT_TRUE(kvSaid.startsWith(QString::fromStdString(kv.best.size) + QString(": %1 → %2.").arg(kv.best.from).arg(kv.best.value)))
        << kvSaid.toStdString();
  else
    EXPECT_EQ(kvSaid, "No match: " + QString::fromStdString(kv.reason));

  // Refusals say why: linear THSA keeps a fixed state, not a KV cache.
  preset(w, "thsa_linear");
  const QString refused = p->matchBudget("kv", "mhsa", "");
  EXPECT_TRUE(refused.startsWith("Refused: ") && refused.contains("fixed state")) << refused.toStdString();
  EXPECT_FALSE(apply->isEnabled());
  // A stale match is never applied: an edit after Match asks for a new one.
  preset(w, "mla");
  p->matchBudget("params", "mhsa", "kv_rank");
  EXPECT_TRUE(apply->isEnabled());
  preset(w, "mqa");
  EXPECT_FALSE(apply->isEnabled());
  EXPECT_EQ(p->matchResultText(), "(the design changed: press Match again)");
  EXPECT_FALSE(p->applyMatchedBudget());
}

TEST(DesignSpace, RotaryPositionsAreAModelChoiceWithUndoAndTheLayersThatRefuseThemSayWhy) {
  app::MainWindow w(testOptions());
  w.model().select(0);  // MHSA, D = 16
  auto* p = w.designPanel();
  auto* undo = w.model().undoStack();
  QComboBox* positions = p->positionsBox();
  ASSERT_TRUE(positions);
  EXPECT_EQ(positions->currentData().toString(), "learned");
  EXPECT_TRUE(p->positionsNote().isEmpty()) << "MHSA takes rotary positions";
  positions->setCurrentIndex(positions->findData("rotary"));
  EXPECT_EQ(w.model().currentRun().config.model.positions, "rotary");
  EXPECT_EQ(undo->undoText(), "Positions rotary, half pairs");
  positions->setCurrentIndex(positions->findData("rotary_interleaved"));
  EXPECT_EQ(w.model().currentRun().config.model.positions, "rotary_interleaved");
  undo->undo();
  EXPECT_EQ(w.model().currentRun().config.model.positions, "rotary");
  EXPECT_EQ(positions->currentData().toString(), "rotary") << "the box follows undo";
  undo->undo();
  EXPECT_EQ(w.model().currentRun().config.model.positions, "learned");
  undo->redo();
  EXPECT_EQ(w.model().currentRun().config.model.positions, "rotary");
  undo->undo();

  // MLA turns its own rotary part: the rotary choices are greyed, with the validator's reason.
  preset(w, "mla");
  const QString why = app::SessionModel::positionsRefusal(w.model().currentRun().config, "rotary");
  ASSERT_FALSE(why.isEmpty());
  EXPECT_TRUE(why.contains("multi-head latent attention turns only its own decoupled rotary key part")) << why.toStdString();
  // The note gives the validator's reason without the field path the form already says.
  const QString reason = why.section(": ", 2);
  EXPECT_TRUE(reason.startsWith("multi-head latent attention")) << reason.toStdString();
  EXPECT_EQ(p->positionsNote(), "No rotary positions here: " + reason);
  auto* items = qobject_cast<QStandardItemModel*>(positions->model());
  ASSERT_TRUE(items);
  EXPECT_FALSE(items->item(positions->findData("rotary"))->isEnabled());
  EXPECT_FALSE(items->item(positions->findData("rotary_interleaved"))->isEnabled());
  EXPECT_TRUE(items->item(positions->findData("sinusoidal"))->isEnabled());
  // Chosen anyway (a script, a keyboard): refused with the reason, nothing changed, nothing to undo.
  QStringList refusals;
  QObject::connect(&w.model(), &app::SessionModel::refused, [&](const QString& r) { refusals << r; });
  const int steps = undo->count();
  positions->setCurrentIndex(positions->findData("rotary"));
  EXPECT_EQ(w.model().currentRun().config.model.positions, "learned");
  EXPECT_EQ(positions->currentData().toString(), "learned") << "the box shows the run's own positions again";
  ASSERT_EQ(refusals.size(), 1);
  EXPECT_TRUE(refusals.front().contains(why)) << refusals.front().toStdString();
  EXPECT_EQ(undo->count(), steps);
  // TPA and odd head sizes are refused the same way; sinusoidal is always a choice.
  preset(w, "tpa");
  EXPECT_TRUE(p->positionsNote().contains("tensor product attention turns its own feature factors")) << p->positionsNote().toStdString();
  positions->setCurrentIndex(positions->findData("sinusoidal"));
  EXPECT_EQ(w.model().currentRun().config.model.positions, "sinusoidal");
  // A variant without per-token products (dimwise) never takes rotary positions.
  preset(w, "dimwise");
  EXPECT_TRUE(p->positionsNote().contains("dimwise attention's softmax runs over features")) << p->positionsNote().toStdString();
}

TEST(DesignSpace, DifferentialAttentionShowsItsLambdaScheduleAndTheLearnedLambdaOfATrainedRun) {
  auto o = testOptions();
  o.confirm = [](const QString&) { return true; };
  app::MainWindow w(o);
  lightRun0(w);
  auto* p = w.designPanel();
  EXPECT_TRUE(p->lambdaText().isEmpty()) << "MHSA has no λ";
  preset(w, "diff");
  QString text = p->lambdaText();
  EXPECT_TRUE(text.contains("not trained yet")) << text.toStdString();
  EXPECT_TRUE(text.contains(QString("layer 0: λ_init %1").arg(QString::number(spec::diffLambdaInit(0), 'f', 3))))
      << text.toStdString();
  EXPECT_EQ(text.contains("layer 1:"), w.model().currentRun().config.model.layers > 1) << "one row per layer";
  // Trained three steps: the λ its checkpoint holds, per layer.
  trainStopped(w, 3);
  ASSERT_TRUE(w.model().hasCheckpoint(0));
  const auto learned = model_core::learnedDiffLambdas(w.model().run(0).runDir.toStdString());
  ASSERT_EQ(learned.size(), 1u);
  ASSERT_TRUE(learned[0].has_value());
  EXPECT_TRUE(std::isfinite(*learned[0]));
  text = p->lambdaText();
  EXPECT_TRUE(text.contains("learned at step")) << text.toStdString();
  EXPECT_TRUE(text.contains("learned " + QString::number(*learned[0], 'f', 3))) << text.toStdString();
}

TEST(DesignSpace, ARunNamedByItsDesignIsRenamedWithItAndAForkOfATrainedRunGetsTheNewName) {
  auto o = testOptions();
  o.confirm = [](const QString&) { return true; };
  app::MainWindow w(o);
  lightRun0(w);
  auto* undo = w.model().undoStack();
  ASSERT_EQ(w.model().currentRun().name, "MHSA");
  preset(w, "mla");
  EXPECT_EQ(w.model().currentRun().name, "MLA") << "no 'MHSA' label over an MLA design";
  preset(w, "gqa");
  EXPECT_EQ(w.model().currentRun().name, "GQA-2");
  // An invalid design on the way keeps the name; the next valid one names the run.
  auto bad = w.model().currentSpec();
  bad.sizes.D = 15;
  bad.slots = {};
  bad.slots.latent.kv_rank = 8;
  bad.slots.latent.rope_dim = 3;
  w.model().editDesign(bad, "odd rotary part");
  ASSERT_FALSE(spec::validate(w.model().currentSpec()).empty());
  EXPECT_EQ(w.model().currentRun().name, "GQA-2");
  preset(w, "mqa");
  EXPECT_EQ(w.model().currentRun().name, "MQA");
  while (undo->canUndo()) undo->undo();
  EXPECT_EQ(w.model().currentRun().name, "MHSA") << "undo brings the name back with the design";
  // A name of the user's own stays.
  w.model().select(2);
  const QString own = w.model().currentRun().name;
  preset(w, "mla");
  EXPECT_EQ(w.model().currentRun().name, own);
  // The sample's "THSA" run is named by its design too ("THSA (Tuformer), dense core" opens with
  // the acronym), so an MTA design does not train under a THSA label.
  w.model().select(1);
  ASSERT_EQ(w.model().currentRun().name, "THSA");
  preset(w, "mta");
  EXPECT_EQ(w.model().currentRun().name, "MTA");
  // A trained MHSA run stays MHSA; its fork carries the edit and the new name.
  w.model().select(0);
  trainStopped(w, 3);
  const int runs = w.model().count();
  preset(w, "tpa");
  ASSERT_EQ(w.model().count(), runs + 1) << "the edit forked the trained run";
  EXPECT_EQ(w.model().run(0).name, "MHSA");
  EXPECT_TRUE(w.model().run(0).config.model.attention.front().slots.isMhsa());
  EXPECT_TRUE(w.model().currentRun().name.startsWith("TPA fork@")) << w.model().currentRun().name.toStdString();
  EXPECT_TRUE(w.model().currentSpec().slots.tpa.enabled());
}

TEST(DesignSpace, ATrainedRunForksOnATpaEditAndOnAPositionsEdit) {
  QStringList asked;
  app::MainWindow w(answeringOptions(asked, true));
  lightRun0(w);
  trainStopped(w, 3);
  const auto original = w.model().run(0);
  int runs = w.model().count();
  slot<QSpinBox>(w.designPanel(), "slots.tpa.k_rank")->setValue(2);
  ASSERT_EQ(w.model().count(), runs + 1);
  EXPECT_EQ(w.model().run(0).config.model.attention, original.config.model.attention) << "the trained run stays";
  EXPECT_EQ(w.model().currentRun().forkParent, original.id);
  EXPECT_EQ(w.model().currentSpec().slots.tpa.k_rank, 2);
  EXPECT_EQ(w.model().undoStack()->undoText(), "TPA key rank R_K 2") << "undoable on the fork";
  // Positions of the trained run: a fork with rotary positions, the run keeps its table.
  w.model().select(0);
  runs = w.model().count();
  QComboBox* positions = w.designPanel()->positionsBox();
  positions->setCurrentIndex(positions->findData("rotary"));
  ASSERT_EQ(w.model().count(), runs + 1);
  EXPECT_EQ(w.model().run(0).config.model.positions, "learned");
  EXPECT_EQ(w.model().currentRun().config.model.positions, "rotary");
  EXPECT_EQ(w.model().currentRun().forkParent, original.id);
  EXPECT_EQ(asked.size(), 2);
}

TEST(DesignSpace, TheCostIsBesideCWhereADesignHasNoCAndFitsAt1280x800) {
  app::MainWindow w(testOptions());
  w.resize(1280, 800);
  w.show();
  ASSERT_TRUE(QTest::qWaitForWindowExposed(&w));
  settle();
  w.model().select(1);  // THSA: C
  app::applyDockLayout(w, app::DockLayout::Design, w.defaultLayout());
  settle();
  QDockWidget *core = w.dock("Core matrix C"), *cost = w.dock("Cost");
  ASSERT_TRUE(core && cost);
  EXPECT_TRUE(onScreen(core));
  EXPECT_FALSE(onScreen(cost));
  w.model().select(0);  // MHSA: no C, the cost in its place
  settle();
  EXPECT_TRUE(onScreen(cost));
  EXPECT_FALSE(onScreen(core));
  preset(w, "mla");
  settle();
  // The whole cost section and the matcher in view without scrolling.
  auto* area = qobject_cast<QScrollArea*>(cost->widget());
  ASSERT_TRUE(area);
  EXPECT_EQ(area->verticalScrollBar()->maximum(), 0) << "the cost needs scrolling at 1280 x 800 (dock "
                                                     << cost->height() << " px high)";
  EXPECT_TRUE(w.designPanel()->costText().contains("KV cache per token"));
  // C again for a design with C.
  w.model().select(1);
  settle();
  EXPECT_TRUE(onScreen(core));
  // The Design layout gives the form the window's height (it was about 230 px at 1280 x 800).
  EXPECT_GE(w.dock("Design")->height(), 420);
  // A raised Inspector stays raised when the design loses its C.
  w.dock("Inspector")->raise();
  settle();
  w.model().select(0);
  settle();
  EXPECT_TRUE(onScreen(w.dock("Inspector")));
  screenshotIfAsked(w, "design-space-cost-dock");
}

TEST(DesignSpace, TheCostTableUsesTheCostDocksHeightAndAgreesWithTheCostLines) {
  app::MainWindow w(testOptions());
  w.resize(1600, 1000);
  w.show();
  ASSERT_TRUE(QTest::qWaitForWindowExposed(&w));
  settle();
  app::applyDockLayout(w, app::DockLayout::Design, w.defaultLayout());
  w.model().select(0);  // MHSA: no C, the Cost dock in front
  preset(w, "mla");
  settle();
  QDockWidget* cost = w.dock("Cost");
  ASSERT_TRUE(onScreen(cost));
  auto* p = w.designPanel();
  QTableWidget* table = p->costTable();
  ASSERT_TRUE(table);
  // This design, MHSA, then every design preset at this F, H, D.
  const auto& presets = spec::designPresetNames();
  ASSERT_EQ(table->rowCount(), 2 + static_cast<int>(presets.size()));
  EXPECT_EQ(table->item(0, 0)->text(), "this design");
  EXPECT_EQ(table->item(1, 0)->text(), "mhsa");
  for (size_t i = 0; i < presets.size(); ++i)  // MLA's row says its order: its cache is the naive order's
    EXPECT_EQ(table->item(2 + static_cast<int>(i), 0)->text().toStdString(), presets[i] + (presets[i] == "mla" ? " (naive)" : ""));
  // Its ratios are the cost lines' (the same cost model, the same baseline): MLA's KV cache.
  const auto k = p->costs();
  ASSERT_TRUE(k.valid && k.hasBaseline);
  const auto ratioText = [](double v, double b) { return QString::number(v / b, 'g', 3) + "×"; };
  EXPECT_EQ(table->item(0, 1)->text(), ratioText(double(k.parameters), double(k.mhsaParameters)));
  EXPECT_EQ(table->item(0, 2)->text(), ratioText(k.kvCacheBytesPerToken, k.mhsaKvCacheBytesPerToken));
  EXPECT_EQ(table->item(0, 3)->text(), ratioText(k.trainingFlopsPerToken, k.mhsaTrainingFlopsPerToken));
  EXPECT_EQ(table->item(0, 4)->text(), ratioText(k.decodeFlops, k.mhsaDecodeFlops));
  for (int c = 1; c <= 4; ++c) EXPECT_EQ(table->item(1, c)->text(), "1×") << "MHSA against itself";
  // The mla row is the preset at this width: the design's own numbers (it is the mla preset).
  const int mlaRow = 2 + static_cast<int>(std::find(presets.begin(), presets.end(), "mla") - presets.begin());
  EXPECT_EQ(table->item(mlaRow, 0)->text(), "mla (naive)") << "the row says which order its cache is";
  for (int c = 1; c <= 4; ++c) EXPECT_EQ(table->item(mlaRow, c)->text(), table->item(0, c)->text());
  // MQA's cache: one key and one value head of H = 4.
  const int mqaRow = 2 + static_cast<int>(std::find(presets.begin(), presets.end(), "mqa") - presets.begin());
  EXPECT_EQ(table->item(mqaRow, 2)->text(), "0.25×");
  EXPECT_FALSE(table->item(mqaRow, 2)->toolTip().isEmpty()) << "the absolute value";
  // The dock's height is used: every row in view, no blank band under the matcher.
  settle();
  EXPECT_EQ(table->verticalScrollBar()->maximum(), 0) << "rows hidden at 1600 x 1000 (table " << table->height()
                                                      << " px)";
  auto* match = p->costPanel()->findChild<QWidget*>("matchBudget");
  ASSERT_TRUE(match);
  const int below = p->costPanel()->height() - (match->geometry().bottom() + 1);
  EXPECT_LE(below, 12) << "blank room under Match budget";
  // A change of precision or L refreshes the table with the lines.
  p->setContext(1024);
  EXPECT_EQ(table->item(0, 4)->text(), ratioText(p->costs().decodeFlops, p->costs().mhsaDecodeFlops));
  screenshotIfAsked(w, "design-space-cost-table");
}

TEST(DesignSpace, TheDemoMatchAndPositionsCommandsDriveTheDockAsAUserDoes) {
  app::MainWindow w(testOptions());
  const auto play = [&](const char* text) {
    app::DemoRunner runner(w.demoParts(), app::parseDemoScript(text, "demo.txt"));
    bool done = false;
    QObject::connect(&runner, &app::DemoRunner::finished, [&] { done = true; });
    runner.start();
    EXPECT_TRUE(waitFor([&] { return done; }, 10000));
    return runner.exitCode();
  };
  EXPECT_EQ(play("run 0\npreset mla\nmatch params mhsa kv_rank apply\npositions sinusoidal\nquit\n"), 0);
  EXPECT_NE(w.model().currentSpec().slots.latent.kv_rank, spec::makeSpecPreset("mla").slots.latent.kv_rank);
  EXPECT_EQ(w.model().currentRun().config.model.positions, "sinusoidal");
  EXPECT_EQ(w.model().undoStack()->undoText(), "Positions sinusoidal");
  EXPECT_NE(play("positions rotary\nquit\n"), 0) << "MLA refuses rotary positions";
  EXPECT_EQ(w.model().currentRun().config.model.positions, "sinusoidal");
  EXPECT_NE(play("preset thsa_linear\nmatch kv mhsa\nquit\n"), 0) << "no KV cache to match";
  EXPECT_NE(play("match params nothing\nquit\n"), 0);
}
