// Collaborative attention (docs/attention-variants.md §8.9; Cordonnier, Loukas, Jaggi 2020,
// epfml/collaborative-attention): the equivalences that place it in the one network, its spec, its
// cost. Module against the float64 reference, finite-difference gradients and causal no-leak run
// over coveredCases (reference.cpp) with every other variant.

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <set>

#include "attention/attention_module.h"
#include "attention/fused_attention.h"
#include "attention/rotary_rule.h"
#include "reference.h"
#include "spec/attention_spec.h"
#include "spec/budget_match.h"
#include "spec/cost_model.h"
#include "spec/design_names.h"
#include "spec/spec_json.h"
#include "spec/validation.h"

namespace tensorscope::model_core::test {
namespace {

using spec::Variant;

spec::AttentionSpec collaborative(int F, int H, int D, int Dk, bool contentBias, bool causal, bool bias) {
  auto s = headed(F, H, D, causal, bias);
  s.slots.collaborative.key_dim = Dk;
  s.slots.collaborative.content_bias = contentBias;
  return s;
}

}  // namespace

TEST(AttentionCollaborative, ConcatenatedMixingWithoutContentBiasIsMhsa) {
  // D̃ = H·D and m_h = ones on the h-th block of D: (q̃ ⊙ m_h)·k̃ = q_h·k_h, and √(D̃/H) = √D
  // (the paper's §3.1: MHSA is the collaborative layer with the concatenation mixing).
  for (bool causal : {false, true}) {
    const int F = 7, H = 3, D = 2;
    auto cs = collaborative(F, H, D, H * D, false, causal, false);
    cs.slots.collaborative.init = spec::MixingInit::Concatenate;
    AttentionModule c = buildDouble(cs, 1);
    auto w = parametersOf(*c);
    const auto expected = torch::kron(torch::eye(H, torch::kDouble), torch::ones({1, D}, torch::kDouble));
    ASSERT_TRUE(torch::equal(w.at("mixing"), expected)) << "the concatenate init is I_H ⊗ 1_Dᵀ";
    perturbParameters(*c, 2);
    assign(*c, {{"mixing", expected}});  // perturbParameters moved it too
    w = parametersOf(*c);
    AttentionModule m = buildDouble(headed(F, H, D, causal, false), 3);
    assign(*m, {{"wq.weight", w.at("wq.weight")}, {"wk.weight", w.at("wk.weight")},
                {"wv.weight", w.at("wv.weight")}, {"wo.weight", w.at("wo.weight")}});
    const auto x = randomInput(2, 5, F, 4);
    expectClose(run(*c, x), run(*m, x), 1e-13, std::string("collaborative vs MHSA, causal ") + (causal ? "on" : "off"));
  }
}

TEST(AttentionCollaborative, ContentBiasIsMhsasQueryBiasTerm) {
  // MHSA with biases: (q + b_q)·(k + b_k) = q·k + b_q·(W_K x_m) + terms constant over the keys m,
  // which the softmax removes. So MHSA with query and key biases is the collaborative layer with
  // the concatenation mixing and the content bias w^c_h = b_{q,h}ᵀ·W_{K,h} (the paper's
  // re-parameterisation of a pretrained layer, §3.2).
  for (bool causal : {false, true}) {
    const int F = 6, H = 2, D = 3;
    AttentionModule m = buildDouble(headed(F, H, D, causal, true), 5);
    perturbParameters(*m, 6);
    const auto w = parametersOf(*m);
    auto cs = collaborative(F, H, D, H * D, true, causal, true);
    AttentionModule c = buildDouble(cs, 7);
    const auto bq = w.at("wq.bias").view({H, 1, D});
    const auto Wk = w.at("wk.weight").view({H, D, F});
    const auto contentBias = torch::matmul(bq, Wk).view({H, F});  // w^c_h = Σ_d b_q[h,d]·W_K[h·D+d, :]
    assign(*c, {{"wq.weight", w.at("wq.weight")}, {"wk.weight", w.at("wk.weight")},
                {"wv.weight", w.at("wv.weight")}, {"wv.bias", w.at("wv.bias")},
                {"wo.weight", w.at("wo.weight")}, {"wo.bias", w.at("wo.bias")},
                {"mixing", torch::kron(torch::eye(H, torch::kDouble), torch::ones({1, D}, torch::kDouble))},
                {"content_bias.weight", contentBias}});
    const auto x = randomInput(2, 6, F, 8);
    expectClose(run(*c, x), run(*m, x), 1e-12,
                std::string("collaborative with content bias vs MHSA with biases, causal ") + (causal ? "on" : "off"));
  }
}

TEST(AttentionCollaborative, IsThsaWithARectangularCoreTiedWithinEachHead) {
  // With D̃ = R = H·D the collaborative logits Σ_c q̃[n,c]·M[h,c]·k̃[m,c] are THSA's
  // Σ_s C[r,s]·q[n,s]·k[m,s] with C[r, s] = M[h(r), s]·√H (THSA scales by 1/√R, collaborative
  // attention by 1/√(D̃/H) = 1/√D): the core's rows are tied within each head.
  for (bool causal : {false, true}) {
    const int F = 5, H = 2, D = 2, R = H * D;
    AttentionModule c = buildDouble(collaborative(F, H, D, R, false, causal, false), 9);
    perturbParameters(*c, 10);
    const auto w = parametersOf(*c);
    const auto M = w.at("mixing");  // [H, R]
    // The dense core parameter set exactly (a spec's core values pass through float32).
    AttentionModule t = buildDouble(thsaPresetSpec(Variant::Thsa, "thsa", F, H, D, causal, false), 11);
    assign(*t, {{"wq.weight", w.at("wq.weight")}, {"wk.weight", w.at("wk.weight")},
                {"wv.weight", w.at("wv.weight")}, {"wo.weight", w.at("wo.weight")},
                {"core.dense", M.repeat_interleave(D, 0) * std::sqrt(double(H))}});  // C[r, s] = √H·M[r / D, s]
    const auto x = randomInput(2, 5, F, 12);
    expectClose(run(*c, x), run(*t, x), 1e-12, std::string("collaborative vs THSA, causal ") + (causal ? "on" : "off"));
    // The spec names say so.
    bool rectangular = false, mhsa = false;
    for (const auto& n : spec::nameDesigns(collaborative(F, H, D, R, false, causal, false))) {
      rectangular = rectangular || (n.name == "THSA with a rectangular core" && !n.equals);
      mhsa = mhsa || (n.name == "MHSA" && !n.equals);
    }
    EXPECT_TRUE(rectangular && mhsa);
  }
}

TEST(AttentionCollaborative, ParametersAndCostFollowTheOfficialModule) {
  // The design table's row (F = 256, H = 8, D = 32, D̃ = 128): W^Q, W^K 2·F·D̃, W^V and W^O 2·F·H·D,
  // the mixing H·D̃ and the content bias F·H: 199,680 without biases.
  auto s = collaborative(256, 8, 32, 128, true, true, false);
  EXPECT_EQ(spec::parameterCount(s), 199680);
  // It caches the shared key (D̃), its content bias per head (H) and the values (H·D) per token.
  const auto decode = spec::estimateDecodeCost(s, 100);
  EXPECT_EQ(decode.cache_elements_per_token, 128 + 8 + 256);
  s.slots.collaborative.content_bias = false;
  EXPECT_EQ(spec::parameterCount(s), 199680 - 256 * 8);
  EXPECT_EQ(spec::estimateDecodeCost(s, 100).cache_elements_per_token, 128 + 256);
  // With biases only W^V and W^O have them (the official query and key have none).
  for (bool contentBias : {true, false})
    for (bool bias : {false, true}) {
      auto small = collaborative(6, 3, 2, 5, contentBias, false, bias);
      AttentionModule m = buildDouble(small, 13);
      EXPECT_EQ(m->trainableParameterCount(), spec::parameterCount(small)) << contentBias << bias;
      const auto w = parametersOf(*m);
      EXPECT_EQ(w.count("wq.bias") + w.count("wk.bias") + w.count("content_bias.bias"), 0u);
      EXPECT_EQ(w.count("wv.bias") + w.count("wo.bias"), bias ? 2u : 0u);
    }
  // The training FLOPs grow with D̃ in the logits, not with H·D.
  auto narrow = collaborative(64, 4, 16, 16, true, true, false), wide = narrow;
  wide.slots.collaborative.key_dim = 64;
  const double logits = 2.0 * 4 * 32 * 32 * (64 - 16);  // 2·H·N·M·ΔD̃ for B = 1, N = 32
  const double projections = 2.0 * 2 * 32 * 64 * (64 - 16) + 4.0 * 32 * (64 - 16);  // W^Q, W^K and the mixed queries
  EXPECT_DOUBLE_EQ(spec::estimateCost(wide, 1, 32).forward_flops - spec::estimateCost(narrow, 1, 32).forward_flops,
                   logits + projections);
  // The budget matcher solves D̃: MHSA's 4·F² = 16,384 parameters at F = 64 are 2·F·D̃ + H·D̃ + F·H +
  // 2·F·H·D = 132·D̃ + 8,448, so D̃ = 60 (16,368, −0.1%).
  const auto m = spec::matchBudget(spec::makeSpecPreset("collaborative"), spec::makeSpecPreset("mhsa"),
                                   spec::BudgetCost::Parameters, "key_dim", 0.01);
  ASSERT_TRUE(m.found) << m.reason;
  EXPECT_EQ(m.best.value, 60);
  EXPECT_EQ(spec::parameterCount(m.matched), 16368);
  // On a layer without the slot, key_dim is off and not a size to solve.
  const auto off = spec::matchBudget(spec::makeSpecPreset("gqa"), spec::makeSpecPreset("mhsa"),
                                     spec::BudgetCost::Parameters, "key_dim", 0.01);
  EXPECT_FALSE(off.found);
  EXPECT_NE(off.reason.find("key_dim is 0 (off)"), std::string::npos) << off.reason;
}

TEST(AttentionCollaborative, PresetSpecJsonAndValidation) {
  auto s = spec::makeSpecPreset("collaborative");
  EXPECT_TRUE(spec::validate(s).empty()) << spec::formatIssues(spec::validate(s));
  EXPECT_EQ(s.slots.collaborative.key_dim, s.sizes.H * s.sizes.D / 2);
  EXPECT_TRUE(s.slots.collaborative.content_bias);
  EXPECT_EQ(s.slots.collaborative.init, spec::MixingInit::Normal);
  EXPECT_EQ(spec::fromJson(spec::toJson(s)), s);
  s.slots.collaborative.content_bias = false;
  s.slots.collaborative.init = spec::MixingInit::Concatenate;
  EXPECT_EQ(spec::fromJson(spec::toJson(s)), s);
  // Written only when set: the other presets' files hold no "collaborative".
  for (const char* name : {"mqa", "gated", "mta"})
    EXPECT_EQ(spec::toJson(spec::makeSpecPreset(name)).find("collaborative"), std::string::npos) << name;
  // The official default mixing N(0, 0.2²).
  {
    torch::manual_seed(3);
    auto wide = collaborative(8, 8, 16, 128, true, false, false);
    AttentionModule m = makeAttentionModule(wide);
    const auto mix = parametersOf(*m).at("mixing");
    EXPECT_NEAR(mix.std().item<double>(), 0.2, 0.02);
    EXPECT_NEAR(mix.mean().item<double>(), 0.0, 0.02);
  }
  // The name comes from the structure.
  const auto names = spec::nameDesigns(spec::makeSpecPreset("collaborative"));
  ASSERT_FALSE(names.empty());
  EXPECT_EQ(names[0].name, "collaborative attention (D̃ = 32)");
  EXPECT_TRUE(names[0].equals);
  for (const auto& n : names) EXPECT_NE(n.name, "MHSA") << "D̃ < H·D cannot hold MHSA's heads";
  // Each problem is named by its field.
  auto bad = spec::makeSpecPreset("collaborative");
  bad.slots.collaborative.key_dim = -2;
  bad.slots.kv_groups = 2;
  std::set<std::string> fields;
  for (const auto& i : spec::validate(bad)) fields.insert(i.field);
  EXPECT_EQ(fields, (std::set<std::string>{"slots.collaborative.key_dim", "slots.collaborative"}));
  auto thsa = spec::makeSpecPreset("thsa");
  thsa.slots.collaborative.key_dim = 8;
  bool named = false;
  for (const auto& i : spec::validate(thsa)) named = named || i.field == "slots";
  EXPECT_TRUE(named) << "THSA has no slots";
  // The reader: unknown keys, a missing key_dim and an unknown init are refused with their fields.
  const auto text = spec::toJson(spec::makeSpecPreset("collaborative"));
  for (const auto& [from, to] : std::vector<std::pair<std::string, std::string>>{
           {"\"key_dim\"", "\"key_dmi\""}, {"\"normal\"", "\"uniform\""}, {"\"content_bias\": true", "\"content_bias\": 1"}}) {
    auto broken = text;
    ASSERT_NE(broken.find(from), std::string::npos) << from;
    broken.replace(broken.find(from), from.size(), to);
    try {
      spec::fromJson(broken);
      ADD_FAILURE() << "read " << to;
    } catch (const spec::SpecError& e) {
      EXPECT_NE(std::string(e.what()).find("slots.collaborative"), std::string::npos) << e.what();
    }
  }
  // Rotary positions are refused with the reason.
  EXPECT_NE(rotaryProblem(spec::makeSpecPreset("collaborative")).find("collaborative attention"), std::string::npos);
}

TEST(AttentionCollaborative, FusedKernelEqualsTheAtenFormulation) {
  // The CPU path (queries [q̃ ⊙ m_h, e_h] against the expanded key [k̃, x·W^Cᵀ] on the fused kernel)
  // against the ATen formulation it replaces: outputs, maps and every parameter's gradient.
  for (bool contentBias : {true, false})
    for (bool causal : {false, true}) {
      auto s = collaborative(7, 3, 2, 5, contentBias, causal, true);
      s.slots.gate = contentBias ? spec::Gate::Headwise : spec::Gate::None;
      const auto x = randomInput(2, 6, 7, 16);
      const std::string what = std::string(contentBias ? "content bias" : "no content bias") + (causal ? ", causal" : "");
      expectSameRun(runWithGradients(s, x, true, 17), runWithGradients(s, x, false, 17), 1e-12, what);
    }
}

TEST(AttentionCollaborative, GradientsReachTheMixingAndTheContentBias) {
  auto s = collaborative(6, 2, 3, 5, true, true, false);
  AttentionModule m = buildDouble(s, 14);
  const auto x = randomInput(2, 4, 6, 15);
  m->forward(x, {}).y.pow(2).sum().backward();
  for (auto& p : m->named_parameters(true)) {
    ASSERT_TRUE(p.value().grad().defined()) << p.key();
    EXPECT_GT(p.value().grad().abs().max().item<double>(), 0.0) << p.key();
  }
}

}  // namespace tensorscope::model_core::test
