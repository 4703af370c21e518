// The slots of section 8 (docs/attention-variants.md): the equivalences that make MQA, GQA,
// talking heads and gated attention points of one network with MHSA and THSA.

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>

#include "attention/attention_module.h"
#include "attention/fused_attention.h"
#include "reference.h"
#include "spec/attention_spec.h"
#include "spec/cost_model.h"
#include "spec/spec_json.h"
#include "spec/validation.h"

namespace tensorscope::model_core::test {
namespace {

using spec::Variant;

spec::AttentionSpec headed(int F, int H, int D, bool causal, bool bias) {
  spec::Sizes z;
  z.F = F;
  z.H = H;
  z.D = D;
  return makeSpec(Variant::Mhsa, z, causal, bias);
}

/// Sets every weight of `target` named in `weights` (the rest keep their values).
void assign(AttentionModuleImpl& target, const std::map<std::string, torch::Tensor>& weights) {
  torch::NoGradGuard noGrad;
  for (auto& p : target.named_parameters(true)) {
    const auto it = weights.find(p.key());
    if (it != weights.end()) p.value().copy_(it->second);
  }
}

std::map<std::string, torch::Tensor> parametersOf(AttentionModuleImpl& m) {
  std::map<std::string, torch::Tensor> out;
  for (auto& p : m.named_parameters(true)) out[p.key()] = p.value().detach().clone();
  return out;
}

torch::Tensor run(AttentionModuleImpl& m, const torch::Tensor& x) {
  torch::NoGradGuard noGrad;
  return m.forward(x, {}).y;
}

}  // namespace

TEST(AttentionSlots, GqaEqualsMhsaWithKeyAndValueHeadsRepeatedPerGroup) {
  // K and V tied across each group is MHSA whose wk, wv rows of head h are group h/(H/G)'s:
  // a copy tensor on the head leg. G = 1 is MQA; G = H is MHSA itself.
  for (bool causal : {false, true})
    for (const int G : {1, 2, 3, 6}) {
      const int H = 6, D = 2, F = 7;
      auto gqaSpec = headed(F, H, D, causal, true);
      gqaSpec.slots.kv_groups = G;
      AttentionModule gqa = buildDouble(gqaSpec, 10 + G);
      perturbParameters(*gqa, 20 + G);
      AttentionModule mhsa = buildDouble(headed(F, H, D, causal, true), 30);
      auto w = parametersOf(*gqa);
      for (const char* name : {"wk", "wv"}) {
        const auto weight = w.at(std::string(name) + ".weight").view({G, D, F});
        const auto bias = w.at(std::string(name) + ".bias").view({G, D});
        w[std::string(name) + ".weight"] = weight.repeat_interleave(H / G, 0).reshape({H * D, F});
        w[std::string(name) + ".bias"] = bias.repeat_interleave(H / G, 0).reshape({H * D});
      }
      assign(*mhsa, w);
      const auto x = randomInput(2, 5, F, 40 + G);
      expectClose(run(*gqa, x), run(*mhsa, x), 1e-12, "GQA with G = " + std::to_string(G) + " vs tied MHSA");
      EXPECT_EQ(gqa->trainableParameterCount(), spec::parameterCount(gqaSpec));
    }
}

TEST(AttentionSlots, MqaIsGqaWithOneGroupAndGqaWithHGroupsIsMhsa) {
  const auto mqa = spec::makeSpecPreset("mqa");
  auto gqa1 = spec::makeSpecPreset("gqa");
  gqa1.slots.kv_groups = 1;
  EXPECT_EQ(mqa, gqa1);
  // G = H: the same weights, the same layer as MHSA.
  auto full = headed(8, 4, 2, true, false);
  full.slots.kv_groups = 4;
  AttentionModule a = buildDouble(full, 1), b = buildDouble(headed(8, 4, 2, true, false), 2);
  perturbParameters(*a, 3);
  assign(*b, parametersOf(*a));
  const auto x = randomInput(2, 6, 8, 4);
  expectClose(run(*a, x), run(*b, x), 1e-14, "GQA with G = H vs MHSA");
}

TEST(AttentionSlots, TalkingHeadsWithIdentityMixingsIsMhsa) {
  // A new talking-heads layer starts with identity mixings: it is MHSA until it learns to mix.
  auto th = spec::makeSpecPreset("talking_heads");
  th.causal = true;
  AttentionModule a = buildDouble(th, 5);
  auto plain = th;
  plain.slots = {};
  AttentionModule b = buildDouble(plain, 6);
  assign(*b, parametersOf(*a));
  const auto x = randomInput(2, 7, th.sizes.F, 7);
  expectClose(run(*a, x), run(*b, x), 1e-12, "talking heads with identity mixings vs MHSA");
}

TEST(AttentionSlots, TalkingHeadsPreSoftmaxIsThsaSkipRight) {
  // Tuformer's skip_right core C = C₁ ⊗ 1_D 1_Dᵀ with THSA's 1/√R scale mixes the per-head logits
  // q_h·k_hᵀ by C₁ before the softmax: talking-heads-pre with mix_pre = C₁·√D/√R = C₁/√H.
  for (bool causal : {false, true}) {
    const int H = 3, D = 2, F = 7;
    AttentionModule thsa = buildDouble(thsaPresetSpec(Variant::Thsa, "skip_right", F, H, D, causal, false), 8);
    perturbParameters(*thsa, 9);
    const torch::Tensor C = thsa->effectiveCore();  // [R, R], C[hD+d, h'D+d'] = C₁[h, h']
    auto preSpec = headed(F, H, D, causal, false);
    preSpec.slots.pre_mix = true;
    AttentionModule pre = buildDouble(preSpec, 10);
    auto w = parametersOf(*thsa);
    std::map<std::string, torch::Tensor> mapped;
    for (const char* name : {"wq.weight", "wk.weight", "wv.weight", "wo.weight"}) mapped[name] = w.at(name);
    mapped["mix_pre"] = C.index({torch::indexing::Slice(0, H * D, D), torch::indexing::Slice(0, H * D, D)}) /
                        std::sqrt(double(H));
    assign(*pre, mapped);
    const auto x = randomInput(2, 5, F, 11);
    expectClose(run(*pre, x), run(*thsa, x), 1e-12, std::string("talking-heads-pre vs skip_right, causal ") +
                                                       (causal ? "on" : "off"));
  }
}

TEST(AttentionSlots, GatedWithTheGateAtOneIsMhsa) {
  // σ(0·x + 40) = 1 − 4e-18: the gate passes every head's output as it is.
  for (const spec::Gate gate : {spec::Gate::Headwise, spec::Gate::Elementwise}) {
    auto gs = headed(6, 3, 2, true, true);
    gs.slots.gate = gate;
    AttentionModule g = buildDouble(gs, 12);
    perturbParameters(*g, 13);
    auto w = parametersOf(*g);
    w["wg.weight"].zero_();
    w["wg.bias"].fill_(40.0);
    assign(*g, w);
    AttentionModule m = buildDouble(headed(6, 3, 2, true, true), 14);
    assign(*m, w);
    const auto x = randomInput(2, 5, 6, 15);
    expectClose(run(*g, x), run(*m, x), 1e-14, std::string("gate ") + std::string(spec::toString(gate)) + " at 1");
    // And at 1/2 (wg = 0, no bias offset): exactly half of MHSA's head outputs, so y − b_o halves.
    w["wg.bias"].zero_();
    assign(*g, w);
    const auto half = run(*g, x) - w.at("wo.bias");
    expectClose(half, (run(*m, x) - w.at("wo.bias")) * 0.5, 1e-14, "gate at 1/2");
  }
}

TEST(AttentionSlots, FusedPathEqualsTheAtenFormulation) {
  // MQA/GQA and gates run on the fused CPU kernel (K and V repeated per group); the ATen path is
  // its oracle, in float32 as in training.
  for (const char* preset : {"mqa", "gqa", "gated", "gated_headwise"}) {
    auto s = spec::makeSpecPreset(preset);
    s.causal = true;
    torch::manual_seed(16);
    AttentionModule m = makeAttentionModule(s);
    m->eval();
    const auto x = torch::randn({2, 9, s.sizes.F});
    const auto fast = run(*m, x);
    setFusedAttentionEnabled(false);
    const auto slow = run(*m, x);
    setFusedAttentionEnabled(true);
    expectClose(fast, slow, 1e-5, std::string(preset) + ": fused vs ATen");
  }
}

TEST(AttentionSlots, SpecFilesWithoutSlotsReadAsBeforeAndSlotsRoundTrip) {
  // A spec written before the slots (no "slots" key) is MHSA; an MHSA spec is written without it.
  const auto mhsa = spec::makeSpecPreset("mhsa");
  EXPECT_EQ(spec::toJson(mhsa).find("slots"), std::string::npos);
  for (const auto& name : spec::designPresetNames()) {
    const auto s = spec::makeSpecPreset(name);
    EXPECT_TRUE(spec::validate(s).empty()) << name;
    EXPECT_EQ(spec::fromJson(spec::toJson(s)), s) << name;
  }
}

TEST(AttentionSlots, InvalidSlotsAreEachNamed) {
  auto s = spec::makeSpecPreset("gqa");
  s.slots.kv_groups = 3;  // does not divide H = 4
  auto issues = spec::validate(s);
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_EQ(issues[0].field, "slots.kv_groups");
  auto t = spec::makeSpecPreset("dimwise");
  t.slots.gate = spec::Gate::Headwise;
  issues = spec::validate(t);
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_EQ(issues[0].field, "slots");
  try {
    spec::fromJson(R"({"format": "tensorscope.attention_spec", "version": 1, "variant": "mhsa",
                       "slots": {"kv_groups": "two", "gate": "always", "extra": 1}})");
    ADD_FAILURE() << "a spec with bad slots was read";
  } catch (const spec::SpecError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("slots.kv_groups"), std::string::npos) << what;
    EXPECT_NE(what.find("unknown gate 'always'"), std::string::npos) << what;
    EXPECT_NE(what.find("slots.extra"), std::string::npos) << what;
  }
}

}  // namespace tensorscope::model_core::test
