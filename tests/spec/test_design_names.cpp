// tensorscope spec name: designs named from a spec's structure, not its preset label.

#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <string>

#include "spec/attention_spec.h"
#include "spec/core_spec.h"
#include "spec/design_names.h"
#include "spec/slot_values.h"
#include "spec/validation.h"

namespace tensorscope::spec {
namespace {

std::string first(const AttentionSpec& s) {
  const auto names = nameDesigns(s);
  EXPECT_FALSE(names.empty());
  return names.empty() ? "" : names.front().name;
}

bool contains(const AttentionSpec& s, const std::string& name) {
  for (const auto& n : nameDesigns(s))
    if (n.name == name) return true;
  return false;
}

}  // namespace

TEST(DesignNames, EveryPresetIsNamedAndEqualsItsFirstName) {
  for (const auto& preset : specPresetNames()) {
    const auto s = makeSpecPreset(preset);
    ASSERT_TRUE(validate(s).empty()) << preset;
    const auto names = nameDesigns(s);
    ASSERT_FALSE(names.empty()) << preset;
    EXPECT_TRUE(names.front().equals) << preset << ": " << names.front().name;
    for (const auto& n : names) EXPECT_FALSE(n.why.empty()) << preset << ": " << n.name;
  }
  EXPECT_EQ(first(makeSpecPreset("mhsa")), "MHSA");
  EXPECT_EQ(first(makeSpecPreset("mqa")), "MQA");
  EXPECT_EQ(first(makeSpecPreset("gqa")), "GQA-2");
  EXPECT_EQ(first(makeSpecPreset("talking_heads")), "talking heads");
  EXPECT_EQ(first(makeSpecPreset("gated")), "gated attention (elementwise)");
  EXPECT_EQ(first(makeSpecPreset("gated_headwise")), "gated attention (headwise)");
  EXPECT_EQ(first(makeSpecPreset("diff")), "differential attention (Diff Transformer)");
  EXPECT_EQ(first(makeSpecPreset("mla")), "multi-head latent attention (DeepSeek MLA)");
  EXPECT_EQ(first(makeSpecPreset("tpa")), "Tensor Product Attention (TPA)");
  EXPECT_EQ(first(makeSpecPreset("tpa_kv_only")), "TPA, keys and values only (T6-KVonly)");
  EXPECT_EQ(first(makeSpecPreset("mta")), "multi-token attention (MTA)");
  EXPECT_EQ(first(makeSpecPreset("tp")), "TP-attention");
  EXPECT_EQ(first(makeSpecPreset("fixed_head")), "fixed head size (Low-Rank Bottleneck)");
  EXPECT_EQ(first(makeSpecPreset("skip_right")), "talking heads, pre-softmax half");
  EXPECT_EQ(first(makeSpecPreset("trainable_heads_only")), "talking heads, pre-softmax half");
  EXPECT_EQ(first(makeSpecPreset("skip_left")), "Tuformer skip-left");
  EXPECT_EQ(first(makeSpecPreset("thsa")), "THSA (Tuformer), dense core");
  EXPECT_EQ(first(makeSpecPreset("core:mhsa")), "MHSA (4 heads of size 16)");
  EXPECT_EQ(first(makeSpecPreset("heads_only")), "MHSA (4 heads of size 1)");
  EXPECT_EQ(first(makeSpecPreset("multilinear")), "multi-linear attention (Tensorized Transformer)");
  EXPECT_EQ(first(makeSpecPreset("dimwise")), "dimension-wise attention (TensorCoder)");
}

TEST(DesignNames, MtaIsNamedByItsConvolutionsAndItsHeadMixingsByTheirStructure) {
  auto s = makeSpecPreset("mta");
  ASSERT_EQ(nameDesigns(s).size(), 1u);
  EXPECT_NE(nameDesigns(s).front().why.find("6 x 11"), std::string::npos) << nameDesigns(s).front().why;
  // Only the post-softmax convolution: still MTA.
  s.slots.mta.q_kernel = s.slots.mta.k_kernel = 0;
  EXPECT_EQ(first(s), "multi-token attention (MTA)");
  // No convolution: RAM's talking-heads baseline (pre_sm_linear_head and a head convolution over
  // all H heads) is talking heads, whatever the slot that holds the mixing.
  s.slots.mta.post_q_kernel = s.slots.mta.post_k_kernel = 0;
  s.slots.mta.group_norm = false;
  s.slots.mta.out_gate = Gate::None;
  ASSERT_TRUE(validate(s).empty());
  EXPECT_EQ(first(s), "talking heads");
  s.slots.post_mix = false;
  s.slots.mta.head_group = 2;  // groups of 2 of the 4 heads
  EXPECT_EQ(first(s), "talking heads, post-softmax half in groups");
  s.slots.pre_mix = false;
  EXPECT_EQ(first(s), "grouped head mixing (MTA head convolution)");
  s.slots.mta.head_group = 0;
  s.slots.mta.group_norm = true;
  EXPECT_EQ(first(s), "gated head norm (MTA)");
}

TEST(DesignNames, NonContextualTpaIsNamedByItsRanks) {
  // Paper §4: MHA is non-contextual TPA with every rank H (a_r = H·e_r); key and value ranks G < H
  // contain GQA-G (MQA at 1).
  auto s = makeSpecPreset("tpa");
  const int H = s.sizes.H;
  s.slots.tpa.contextual_a = false;
  s.slots.tpa.q_rank = s.slots.tpa.k_rank = s.slots.tpa.v_rank = H;
  s.slots.tpa.rope = false;
  ASSERT_TRUE(validate(s).empty()) << formatIssues(validate(s));
  EXPECT_EQ(first(s), "MHSA");
  s.slots.tpa.rope = true;
  EXPECT_EQ(first(s), "MHSA with rotary positions (RoPE)");
  s.slots.tpa.q_rank = 0;  // MHSA queries, keys and values of rank H
  EXPECT_EQ(first(s), "MHSA with rotary positions (RoPE)");
  s.slots.tpa.k_rank = s.slots.tpa.v_rank = 1;
  EXPECT_EQ(first(s), "non-contextual TPA");
  EXPECT_TRUE(contains(s, "MQA"));
  s.slots.tpa.k_rank = s.slots.tpa.v_rank = 2;
  EXPECT_TRUE(contains(s, "GQA-2"));
  s.slots.tpa.contextual_a = true;  // contextual factors: TPA whatever the ranks
  EXPECT_EQ(first(s), "TPA, keys and values only (T6-KVonly)");
  s.slots.tpa.q_rank = H;
  EXPECT_EQ(first(s), "Tensor Product Attention (TPA)");
  s.slots.tpa.group_norm = true;  // T6's head norm keeps the name, the reason says it
  EXPECT_EQ(first(s), "Tensor Product Attention (TPA)");
  EXPECT_NE(nameDesigns(s).front().why.find("using_groupnorm"), std::string::npos);
}

TEST(DesignNames, ConstantFeatureFactorsAreNamedByTheirRanks) {
  // Table 1's "TPA (Non-contextual B)": with every rank ≥ D each head's projection (1/R)·bᵀ·W_A,h is
  // any matrix (b = R·I gives MHSA's); below D it is its own design.
  auto s = makeSpecPreset("tpa");
  const int D = s.sizes.D;
  s.slots.tpa.contextual_b = false;
  ASSERT_TRUE(validate(s).empty()) << formatIssues(validate(s));
  EXPECT_EQ(first(s), "TPA with constant feature factors (non-contextual B)");
  s.slots.tpa.q_rank = s.slots.tpa.k_rank = s.slots.tpa.v_rank = D;
  EXPECT_EQ(first(s), "MHSA with rotary positions (RoPE)");
  s.slots.tpa.rope = false;
  EXPECT_EQ(first(s), "MHSA");
  s.slots.tpa.group_norm = true;
  EXPECT_EQ(first(s), "MHSA with a head RMSNorm");
  s.slots.tpa.q_rank = 0;  // MHSA queries
  EXPECT_EQ(first(s), "MHSA with a head RMSNorm");
  s.slots.tpa.v_rank = D - 1;
  EXPECT_EQ(first(s), "TPA with constant feature factors (non-contextual B)");
}

TEST(DesignNames, HandBuiltEquivalentsAreNamedByStructureNotLabel) {
  // K and V tied over 4 groups, written by hand on an mhsa spec with 8 heads: GQA-4.
  auto gqa = makeSpecPreset("mhsa");
  gqa.sizes.H = 8;
  gqa.sizes.D = 8;
  gqa.slots.kv_groups = 4;
  EXPECT_EQ(first(gqa), "GQA-4");
  gqa.slots.kv_groups = 8;  // a group per head: no tie, MHSA
  EXPECT_EQ(first(gqa), "MHSA");
  // A frozen Kronecker core A ⊗ 11ᵀ with a non-diagonal A, labelled "custom".
  auto th = makeSpecPreset("skip_right");
  th.core->preset = "custom";
  th.core->a.kind = FactorKind::Fixed;
  const int H = th.sizes.H;
  th.core->a.values.assign(static_cast<size_t>(H) * H, 0.1);
  for (int h = 0; h < H; ++h) th.core->a.values[static_cast<size_t>(h) * H + h] = 1.0;
  ASSERT_TRUE(validate(th).empty()) << formatIssues(validate(th));
  EXPECT_EQ(first(th), "talking heads, pre-softmax half");
  // The same frozen core written out densely is still talking heads (values, not the label).
  auto dense = th;
  dense.core->structure = CoreStructure::Dense;
  dense.core->dense_values = effectiveCore(th);
  dense.core->trainable_mask.assign(dense.core->dense_values.size(), 0);
  ASSERT_TRUE(validate(dense).empty()) << formatIssues(validate(dense));
  EXPECT_EQ(first(dense), "talking heads, pre-softmax half");
  // A dense frozen √H·I ⊗ 11ᵀ is MHSA; a diagonal A of other values is MHSA with temperatures.
  dense.core->dense_values = effectiveCore(makeSpecPreset("core:mhsa"));
  EXPECT_EQ(first(dense), "MHSA (4 heads of size 16)");
  EXPECT_TRUE(nameDesigns(dense).front().equals);
  for (auto& v : dense.core->dense_values) v *= 2.0;
  EXPECT_FALSE(nameDesigns(dense).front().equals);
  // fixed_head with D = F/H is MHSA.
  auto fixed = makeSpecPreset("fixed_head");
  fixed.sizes.D = fixed.sizes.F / fixed.sizes.H;
  EXPECT_EQ(first(fixed), "MHSA");
}

TEST(DesignNames, CombinedSlotsNameTheWholeAndContainEachPart) {
  auto s = makeSpecPreset("mhsa");
  s.slots.kv_groups = 2;
  s.slots.pre_mix = true;
  s.slots.gate = Gate::Headwise;
  const auto names = nameDesigns(s);
  ASSERT_GE(names.size(), 4u);
  EXPECT_EQ(names.front().name, "GQA-2 + talking heads, pre-softmax half + gated attention (headwise)");
  EXPECT_TRUE(names.front().equals);
  EXPECT_TRUE(contains(s, "GQA-2"));
  EXPECT_TRUE(contains(s, "talking heads, pre-softmax half"));
  EXPECT_TRUE(contains(s, "gated attention (headwise)"));
  for (size_t i = 1; i < names.size(); ++i) EXPECT_FALSE(names[i].equals) << names[i].name;
}

}  // namespace tensorscope::spec

namespace tensorscope::spec {
namespace {

/// The same C written as a frozen dense core: named from its materialised values (the oracle).
AttentionSpec asDenseCore(AttentionSpec s) {
  CoreSpec dense;
  dense.preset = "custom";
  dense.structure = CoreStructure::Dense;
  dense.dense_values = effectiveCore(s);
  dense.trainable_mask.assign(dense.dense_values.size(), 0);
  s.core = dense;
  return s;
}

CoreFactor fixedFactor(std::vector<double> values) {
  CoreFactor f;
  f.kind = FactorKind::Fixed;
  f.values = std::move(values);
  return f;
}

}  // namespace

// A frozen Kronecker core is named from its factors (a user's H = 1024 made C 2 GiB: a minute a
// name); the names must be those of the materialised C, for every shape the naming tells apart.
TEST(DesignNames, AFrozenKroneckerCoreIsNamedAsItsMaterialisedC) {
  const int H = 3, D = 2;
  const CoreFactor I{FactorKind::Identity, {}, true}, ones{FactorKind::Ones, {}, true};
  CoreFactor rank1{FactorKind::Rank1, {1.0, 2.0, 0.5, -1.0}, false};
  CoreFactor constant = fixedFactor({0.7, 0.7, 0.7, 0.7});
  CoreFactor almost = fixedFactor({0.7, 0.7, 0.7, 0.7 + 1e-6});
  CoreFactor diagB = fixedFactor({2.0, 0.0, 0.0, 3.0});
  CoreFactor fullB = fixedFactor({1.0, 2.0, 3.0, 4.0});
  std::vector<CoreFactor> As = {
      I, ones, fixedFactor({1.5, 0, 0, 0, 1.5, 0, 0, 0, 1.5}), fixedFactor({1, 0, 0, 0, 2, 0, 0, 0, 3}),
      fixedFactor({1, 0.2, 0, 0, 1, 0, 0, 0, 1}), fixedFactor(std::vector<double>(9, 0.0)),
      fixedFactor({std::sqrt(3.0), 0, 0, 0, std::sqrt(3.0), 0, 0, 0, std::sqrt(3.0)})};
  std::vector<CoreFactor> Bs = {I, ones, rank1, constant, almost, diagB, fullB};
  int shapes = 0;
  std::set<std::string> reached;
  for (double scale : {1.0, 0.5, std::sqrt(3.0)})
    for (const auto& a : As)
      for (const auto& b : Bs) {
        AttentionSpec s = makeSpecPreset("core:mhsa");
        s.sizes.H = H;
        s.sizes.D = D;
        s.sizes.R = H * D;
        s.sizes.F = 12;
        CoreSpec c;
        c.preset = "custom";
        c.structure = CoreStructure::Kronecker;
        c.scale = scale;
        c.a = a;
        c.b = b;
        s.core = c;
        ASSERT_TRUE(c.isFrozen());
        const auto factored = nameDesigns(s), materialised = nameDesigns(asDenseCore(s));
        ASSERT_EQ(factored.size(), materialised.size()) << first(s) << " vs " << first(asDenseCore(s));
        for (size_t i = 0; i < factored.size(); ++i) {
          EXPECT_EQ(factored[i].name, materialised[i].name) << "scale " << scale << ", shape " << shapes;
          EXPECT_EQ(factored[i].equals, materialised[i].equals) << factored[i].name;
          EXPECT_EQ(factored[i].why, materialised[i].why) << factored[i].name;
        }
        reached.insert(first(s).substr(0, first(s).find(" (")));
        ++shapes;
      }
  // Every kind of name the naming gives a frozen core is among them.
  for (const char* name : {"MHSA", "talking heads, pre-softmax half", "single-head attention", "Tuformer skip-left",
                           "THSA"})
    EXPECT_TRUE(reached.count(name)) << name;
  AttentionSpec big = makeSpecPreset("core:mhsa");
  big.sizes.H = 1024;
  big.sizes.D = 16;
  big.sizes.R = 16384;
  big.sizes.F = 16384;
  big.core = makeCorePreset("mhsa", 1024, 16);
  EXPECT_EQ(first(big), "MHSA (1024 heads of size 16)") << "named from its 1024 x 1024 and 16 x 16 factors";
}

}  // namespace tensorscope::spec

namespace tensorscope::spec {

TEST(DesignNames, AMixingFrozenAtTheIdentityMixesNothing) {
  // spec/slot_values.h: C′ drawn as the identity with every entry frozen is MHSA's weights, exactly.
  auto s = makeSpecPreset("talking_heads");
  s.slots.post_mixing = makeMixingPreset("identity_frozen", s.sizes.H);
  EXPECT_EQ(first(s), "talking heads, pre-softmax half");
  s.slots.pre_mixing = makeMixingPreset("identity_frozen", s.sizes.H);
  EXPECT_EQ(first(s), "MHSA");
  // Frozen elsewhere, or trained on the diagonal: still a mixing.
  s.slots.pre_mixing = makeMixingPreset("diagonal_only", s.sizes.H);
  EXPECT_EQ(first(s), "talking heads, pre-softmax half");
  s.slots.pre_mixing = canonicalMixing(std::vector<double>(16, 0.25), std::vector<unsigned char>(16, 0), s.sizes.H);
  EXPECT_EQ(first(s), "talking heads, pre-softmax half");
}

}  // namespace tensorscope::spec
