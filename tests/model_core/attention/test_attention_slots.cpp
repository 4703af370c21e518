// The slots of section 8 (docs/attention-variants.md): the equivalences that make MQA, GQA,
// talking heads and gated attention points of one network with MHSA and THSA.

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <cstdio>
#include <set>

#include "attention/attention_module.h"
#include "attention/fused_attention.h"
#include "attention/talking_heads.h"
#include "attention/mla.h"
#include "attention/rotary.h"
#include "attention/tpa.h"
#include "reference.h"
#include "spec/attention_spec.h"
#include "spec/cost_model.h"
#include "spec/design_names.h"
#include "spec/slot_values.h"
#include "spec/spec_json.h"
#include "spec/validation.h"

namespace tensorscope::model_core::test {
using spec::Variant;

namespace {
/// The gradient of parameter `name` after a backward pass (undefined when it takes none).
torch::Tensor parametersOfGrad(AttentionModuleImpl& m, const std::string& name) {
  const auto params = m.named_parameters();  // find() points into it: keep it alive
  const auto* p = params.find(name);
  if (!p || !p->requires_grad()) return {};
  return p->grad().defined() ? p->grad().detach().clone() : torch::zeros_like(*p);
}

/// TPA's rotary: the project's applyRotary, half-split pairs turned backward (T6's sign).
torch::Tensor tpaRotary(const torch::Tensor& x, double base) {
  return applyRotary(x, x.size(-1), RotaryPairs::Half, base, RotaryTurn::Backward);
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
  assignShared(*b, parametersOf(*a));
  const auto x = randomInput(2, 7, th.sizes.F, 7);
  expectClose(run(*a, x), run(*b, x), 1e-12, "talking heads with identity mixings vs MHSA");
}

TEST(AttentionSlots, TalkingHeadsStartFromTheDrawnMixingsAndFrozenEntriesKeepTheirValues) {
  // slots.pre_mixing / post_mixing (spec/slot_values.h): the layer starts from the drawn values; a
  // frozen entry of C′ is the drawn value whatever its parameter holds (weight decay moves it),
  // takes no gradient, is saved as drawn and must read back as drawn.
  const int H = 3, D = 2, F = 6;
  auto s = headed(F, H, D, /*causal=*/true, /*bias=*/false);
  s.slots.pre_mix = s.slots.post_mix = true;
  s.slots.pre_mixing = spec::canonicalMixing({1, 0.25, 0, -0.5, 1, 0.125, 0, 0.75, 1}, {1, 1, 1, 1, 1, 1, 1, 1, 1}, H);
  s.slots.post_mixing = spec::canonicalMixing({0.5, 0.5, 0, 0, 1, 0, 0.25, 0, 0.75}, {1, 0, 1, 0, 1, 0, 1, 1, 0}, H);
  ASSERT_TRUE(spec::validate(s).empty()) << spec::formatIssues(spec::validate(s));
  AttentionModule m = buildDouble(s, 31);
  const auto drawnPost = torch::tensor(s.slots.post_mixing.values, torch::kDouble).view({H, H});
  const auto drawnPre = torch::tensor(s.slots.pre_mixing.values, torch::kDouble).view({H, H});
  auto params = parametersOf(*m);
  expectClose(params.at("mix_post"), drawnPost, 1e-7, "C′ starts as drawn");
  expectClose(params.at("mix_pre"), drawnPre, 1e-7, "C^pre starts as drawn");
  EXPECT_EQ(m->trainableParameterCount(), spec::parameterCount(s)) << "five frozen entries are not counted";
  // The parameter moved everywhere (as weight decay and a bad step would): the frozen entries of
  // the mixing the layer applies, and of what it saves, stay as drawn.
  perturbParameters(*m, 32);
  const auto mask = torch::tensor(std::vector<double>{1, 0, 1, 0, 1, 0, 1, 1, 0}, torch::kDouble).view({H, H});
  const auto moved = parametersOf(*m).at("mix_post");
  const auto saved = weightsOf(*m).at("mix_post");
  expectClose(saved, mask * moved + (1 - mask) * drawnPost, 1e-7, "saved C′: trained entries moved, frozen as drawn");
  // The layer against the float64 reference, which reads the weights as saved.
  const auto x = randomInput(2, 5, F, 33);
  expectClose(run(*m, x), referenceHeaded(s, weightsOf(*m), x).y, 1e-10, "drawn, partly frozen talking heads");
  // Gradients: none at a frozen entry; at a trained one, that of the layer whose C′ trains everywhere.
  auto open = s;
  open.slots.post_mixing.trainable_mask.assign(9, 1);
  AttentionModule all = buildDouble(open, 34);
  auto w = parametersOf(*m);
  w["mix_post"] = saved;
  assign(*all, w);
  const auto seed = torch::randn({2, 5, F}, torch::kDouble);
  for (auto* layer : {&m, &all}) {
    (*layer)->zero_grad();
    ((*layer)->forward(x, {}).y * seed).sum().backward();
  }
  const auto gFrozen = parametersOfGrad(*m, "mix_post"), gAll = parametersOfGrad(*all, "mix_post");
  expectClose(gFrozen, gAll * mask, 1e-10, "C′ gradient: the open layer's, zero where frozen");
  EXPECT_GT(gAll.mul(1 - mask).abs().max().item<double>(), 1e-6) << "the frozen entries would have moved";
  // Loading: the frozen entries of a weight file must be the drawn values.
  auto pairs = weightPairs(*m, false);
  for (auto& [name, t] : pairs)
    if (name == "mix_post") t = t.clone(), t[0][1] += 0.5;  // entry (0, 1) is frozen
  try {
    m->loadWeights(pairs);
    ADD_FAILURE() << "a frozen entry other than drawn was loaded";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("'mix_post' disagrees with the spec"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(m->loadWeights(weightPairs(*m, false)));
  // Every entry frozen at the identity: exactly MHSA, with nothing of C′ trained.
  auto still = headed(F, H, D, true, false);
  still.slots.post_mix = true;
  still.slots.post_mixing = spec::makeMixingPreset("identity_frozen", H);
  AttentionModule frozen = buildDouble(still, 35);
  EXPECT_FALSE(parametersOfGrad(*frozen, "mix_post").defined());
  perturbParameters(*frozen, 36);
  AttentionModule plain = buildDouble(headed(F, H, D, true, false), 37);
  assignShared(*plain, parametersOf(*frozen));
  expectClose(run(*frozen, x), run(*plain, x), 1e-12, "C′ frozen at the identity is MHSA");
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
    assignShared(*m, w);
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
  // MQA/GQA, gates, differential attention and TPA (once its q, k, v are formed) run on the fused
  // CPU kernel (K and V repeated per group); the ATen path is
  // its oracle, in float32 as in training.
  for (const char* preset : {"mqa", "gqa", "gated", "gated_headwise", "diff", "tpa", "tpa_kv_only"}) {
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

TEST(AttentionSlots, TalkingHeadsRecomputedInBackwardHasTheAtenGradients) {
  // The checkpointed core (talking_heads.h) against autograd through the ATen formulation, float64,
  // with either mixing or both, causal or not.
  torch::manual_seed(91);
  const int64_t B = 2, H = 3, N = 5, D = 4;
  for (bool causal : {false, true})
    for (int which : {1, 2, 3}) {
      const auto opts = torch::TensorOptions().dtype(torch::kDouble).requires_grad(true);
      const auto q = torch::randn({B, H, N, D}, opts), k = torch::randn({B, H, N, D}, opts),
                 v = torch::randn({B, H, N, D}, opts);
      const auto pre = (which & 1) ? torch::randn({H, H}, opts) : torch::Tensor();
      const auto post = (which & 2) ? torch::randn({H, H}, opts) : torch::Tensor();
      const auto seed = torch::randn({B, H, N, D}, torch::kDouble);
      std::vector<torch::Tensor> leaves = {q, k, v};
      if (pre.defined()) leaves.push_back(pre);
      if (post.defined()) leaves.push_back(post);
      const auto fast = talkingHeadsRecomputed(q, k, v, pre, post, 0.5, causal);
      const auto slow = torch::matmul(talkingHeadsWeights(q, k, pre, post, 0.5, causal), v);
      expectClose(fast, slow, 1e-13, "talking heads output");
      const auto gFast = torch::autograd::grad({(fast * seed).sum()}, leaves);
      const auto gSlow = torch::autograd::grad({(slow * seed).sum()}, leaves);
      for (size_t i = 0; i < leaves.size(); ++i)
        expectClose(gFast[i], gSlow[i], 1e-12, "gradient " + std::to_string(i) + " (mixings " + std::to_string(which) + ")");
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

/// Differential attention written by hand with ATen from §8.5, given λ and λ_init: o_h =
/// (1 − λ_init)·γ ⊙ RMSNorm((P_{h,0} − λ·P_{h,1})·V_h). Maps (h, i) are rows (2h + i)·D of wq, wk.
torch::Tensor differentialByHand(const std::map<std::string, torch::Tensor>& w, const torch::Tensor& x, int H, int D,
                                 bool causal, double lambda, double lambdaInit) {
  const int64_t B = x.size(0), N = x.size(1);
  const auto proj = [&](const char* name) { return torch::linear(x, w.at(std::string(name) + ".weight")); };
  const auto q = proj("wq").view({B, N, H, 2, D}), k = proj("wk").view({B, N, H, 2, D});
  const auto v = proj("wv").view({B, N, H, 2 * D});
  auto logits = torch::einsum("bnhid,bmhid->bhinm", {q, k}) / std::sqrt(double(D));
  if (causal) logits = logits.masked_fill(torch::ones({N, N}, torch::kBool).triu(1), -INFINITY);
  const auto P = torch::softmax(logits, -1);
  const auto A = P.select(2, 0) - lambda * P.select(2, 1);
  auto o = torch::einsum("bhnm,bmhe->bnhe", {A, v});
  o = o / torch::sqrt(o.pow(2).mean(-1, true) + 1e-5) * w.at("subln.weight") * (1.0 - lambdaInit);
  return torch::linear(o.reshape({B, N, 2 * H * D}), w.at("wo.weight"));
}

TEST(AttentionSlots, DifferentialWithLambdaZeroIsOneMapPerHeadThenTheHeadNorm) {
  // λ = e^{λq1·λk1} − e^{λq2·λk2} + λ_init = 0 when λq1·λk1 = ln(1 − λ_init) and λq2·λk2 = 0: each head
  // is its first softmax map followed by the head norm, whatever the second map's weights are.
  for (bool causal : {false, true}) {
    const int H = 3, D = 2, F = 7;
    auto s = headed(F, H, D, causal, false);
    s.slots.differential = true;
    AttentionModule m = buildDouble(s, 71);
    perturbParameters(*m, 72);
    auto w = parametersOf(*m);
    const double lambdaInit = spec::diffLambdaInit(0);
    EXPECT_NEAR(lambdaInit, 0.2, 1e-15);
    w["lambda_q1"] = torch::full({D}, 1.0, torch::kDouble);
    w["lambda_k1"] = torch::full({D}, std::log(1.0 - lambdaInit) / D, torch::kDouble);
    w["lambda_q2"] = torch::zeros({D}, torch::kDouble);
    assignShared(*m, w);
    const auto x = randomInput(2, 6, F, 73);
    const auto y = run(*m, x);
    expectClose(y, differentialByHand(w, x, H, D, causal, 0.0, lambdaInit), 1e-12, "diff at λ = 0 vs first map + norm");
    // The second map's query weights no longer matter.
    auto changed = w;
    changed["wq.weight"] = w.at("wq.weight").clone().view({H, 2, D, F});
    changed["wq.weight"].select(1, 1).normal_();
    changed["wq.weight"] = changed["wq.weight"].reshape({2 * H * D, F});
    assign(*m, changed);
    expectClose(run(*m, x), y, 1e-12, "diff at λ = 0 with another second query map");
    EXPECT_EQ(m->trainableParameterCount(), spec::parameterCount(s));
    EXPECT_EQ(spec::parameterCount(s), 8LL * F * H * D + 6LL * D);
  }
}

TEST(AttentionSlots, DifferentialWithSharedKeysAndValuesIsTheUnsharedLayerWithRepeatedRows) {
  // G shared K/V heads equal the unshared layer whose key map j = 2h + i has the rows of shared key
  // map ⌊j/(H/G)⌋ and whose value head h those of ⌊h/(H/G)⌋ (the official repeat_kv).
  for (const int G : {1, 2}) {
    const int H = 4, D = 2, F = 6, rep = H / G;
    auto shared = headed(F, H, D, true, true);
    shared.slots.differential = true;
    shared.slots.kv_groups = G;
    auto plain = shared;
    plain.slots.kv_groups = 0;
    AttentionModule a = buildDouble(shared, 90 + G), b = buildDouble(plain, 95);
    perturbParameters(*a, 96);
    auto w = parametersOf(*a);
    const auto idxK = torch::arange(2 * H, torch::kLong).div(rep, "floor");
    const auto idxV = torch::arange(H, torch::kLong).div(rep, "floor");
    w["wk.weight"] = w.at("wk.weight").view({2 * G, D, F}).index_select(0, idxK).reshape({2 * H * D, F});
    w["wk.bias"] = w.at("wk.bias").view({2 * G, D}).index_select(0, idxK).reshape({2 * H * D});
    w["wv.weight"] = w.at("wv.weight").view({G, 2 * D, F}).index_select(0, idxV).reshape({2 * H * D, F});
    w["wv.bias"] = w.at("wv.bias").view({G, 2 * D}).index_select(0, idxV).reshape({2 * H * D});
    assign(*b, w);
    const auto x = randomInput(2, 5, F, 97);
    expectClose(run(*a, x), run(*b, x), 1e-12, "diff with G = " + std::to_string(G) + " vs repeated rows");
    EXPECT_EQ(a->trainableParameterCount(), spec::parameterCount(shared));
  }
}

TEST(AttentionSlots, DifferentialLambdaInitFollowsTheBlockIndex) {
  // λ_init(l) = 0.8 − 0.6·e^{−0.3·l} (the official lambda_init_fn); with the λ vectors at zero λ = λ_init.
  const int H = 2, D = 2, F = 5;
  auto s = headed(F, H, D, true, false);
  s.slots.differential = true;
  const auto x = randomInput(1, 5, F, 81);
  for (int layer : {0, 1, 5}) {
    torch::manual_seed(82);
    AttentionModule m = makeAttentionModule(s, layer);
    m->to(torch::kDouble);
    auto w = parametersOf(*m);
    for (const char* name : {"lambda_q1", "lambda_k1", "lambda_q2", "lambda_k2"}) w[name] = torch::zeros({D}, torch::kDouble);
    assignShared(*m, w);
    const double init = 0.8 - 0.6 * std::exp(-0.3 * layer);
    EXPECT_NEAR(spec::diffLambdaInit(layer), init, 1e-15);
    expectClose(run(*m, x), differentialByHand(w, x, H, D, true, init, init), 1e-12,
                "diff in block " + std::to_string(layer));
  }
}

TEST(AttentionSlots, DifferentialRejectsTheSlotsItCannotCombineWith) {
  auto s = spec::makeSpecPreset("diff");
  EXPECT_TRUE(spec::validate(s).empty());
  EXPECT_EQ(s.sizes.H, 2);
  s.slots.kv_groups = 1;  // shared K/V heads are allowed (the official repeat_kv)
  EXPECT_TRUE(spec::validate(s).empty());
  s.slots.pre_mix = true;
  s.slots.gate = spec::Gate::Headwise;
  const auto issues = spec::validate(s);
  ASSERT_EQ(issues.size(), 2u) << spec::formatIssues(issues);
  for (const auto& i : issues) EXPECT_EQ(i.field, "slots.differential");
  // Written with "differential" only when set: an older slots file is unchanged.
  const auto gqa = spec::toJson(spec::makeSpecPreset("gqa"));
  EXPECT_EQ(gqa.find("differential"), std::string::npos);
  EXPECT_NE(spec::toJson(spec::makeSpecPreset("diff")).find("\"differential\": true"), std::string::npos);
}

spec::AttentionSpec latentSpec(int F, int H, int D, bool causal, int kvRank, int qRank, int rope,
                               spec::LatentOrder order) {
  spec::Sizes z;
  z.F = F;
  z.H = H;
  z.D = D;
  auto s = makeSpec(Variant::FixedHead, z, causal, false);
  s.slots.latent = {kvRank, qRank, rope, order};
  return s;
}

TEST(AttentionSlots, MlaAbsorbedOrderEqualsTheNaiveOrder) {
  // The absorbed order (W^UK folded into the query, the latent as the one key/value head, W^UV
  // after the softmax) is the naive order's function: the same weights give the same y and maps.
  double worst64 = 0.0, worst32 = 0.0;
  for (bool causal : {false, true})
    for (int qRank : {0, 3})
      for (int rope : {0, 4}) {
        const auto naiveSpec = latentSpec(9, 3, 2, causal, 5, qRank, rope, spec::LatentOrder::Naive);
        auto absorbedSpec = naiveSpec;
        absorbedSpec.slots.latent.order = spec::LatentOrder::Absorbed;
        AttentionModule naive = buildDouble(naiveSpec, 91), absorbed = buildDouble(absorbedSpec, 92);
        perturbParameters(*naive, 93);
        assign(*absorbed, parametersOf(*naive));
        const auto x = randomInput(2, 7, 9, 94);
        torch::NoGradGuard noGrad;
        const auto a = naive->forward(x, {true, false}), b = absorbed->forward(x, {true, false});
        const std::string what = "absorbed vs naive q_rank=" + std::to_string(qRank) + " rope=" + std::to_string(rope);
        expectClose(b.y, a.y, 1e-12, what);
        expectClose(b.maps, a.maps, 1e-12, what + " maps");
        worst64 = std::max(worst64, (b.y - a.y).abs().max().item<double>());
        // In float32 the two orders round differently but stay within float tolerance.
        naive->to(torch::kFloat);
        absorbed->to(torch::kFloat);
        const auto y32n = naive->forward(x.to(torch::kFloat), {}).y, y32a = absorbed->forward(x.to(torch::kFloat), {}).y;
        expectClose(y32a.to(torch::kDouble), y32n.to(torch::kDouble), 1e-5, what + " float32");
        worst32 = std::max(worst32, (y32a - y32n).abs().max().item<double>());
      }
  std::printf("MLA absorbed vs naive: max |Δy| float64 %.3g, float32 %.3g\n", worst64, worst32);
}

TEST(AttentionSlots, MlaWithoutRotaryIsMhsaWithLowRankKeysAndValuesOnTheNormalisedLatent) {
  // rope_dim = 0: MLA is MHSA whose W^K_h = W^UK_h·diag(γ_kv)·W^DKV and W^V_h = W^UV_h·diag(γ_kv)·W^DKV
  // (rank ≤ kv_rank products), acting on the token divided by the RMS of its latent,
  // ρ_m = (mean((W^DKV x_m)²) + ε)^½ — the norm is one positive scale a token. The queries likewise:
  // W^Q = W^Q_b·diag(γ_q)·W^Q_a on x_n/ρq_n (q_rank > 0), or W^Q itself. The MHSA here reads
  // z_n = [x_n/ρq_n, x_m/ρ_m] (2F wide) with its weights zero on the other half, W^O padded with F zero rows.
  for (bool causal : {false, true})
    for (int qRank : {0, 3}) {
      const int F = 7, H = 3, D = 2, L = 4;
      auto s = latentSpec(F, H, D, causal, L, qRank, 0, spec::LatentOrder::Naive);
      AttentionModule mla = buildDouble(s, 101);
      perturbParameters(*mla, 102);
      const auto w = parametersOf(*mla);
      const auto x = randomInput(2, 6, F, 103);
      const auto rho = [](const torch::Tensor& t) { return torch::sqrt(t.pow(2).mean(-1, true) + spec::kMlaNormEps); };
      const auto Wdkv = w.at("wkv_a.weight");                                   // [L, F]
      const auto Wb = w.at("wkv_b.weight").view({H, 2 * D, L}) * w.at("kv_norm.weight");  // W^UKV_h·diag(γ)
      const auto Wk = torch::matmul(Wb.narrow(1, 0, D), Wdkv).reshape({H * D, F});
      const auto Wv = torch::matmul(Wb.narrow(1, D, D), Wdkv).reshape({H * D, F});
      torch::Tensor Wq, xq = x;
      if (qRank == 0) {
        Wq = w.at("wq.weight");
      } else {
        Wq = torch::matmul(w.at("wq_b.weight") * w.at("q_norm.weight"), w.at("wq_a.weight"));
        xq = x / rho(torch::linear(x, w.at("wq_a.weight")));
      }
      const auto xkv = x / rho(torch::linear(x, Wdkv));
      EXPECT_LE(torch::linalg_matrix_rank(Wk).item<int64_t>(), L);
      spec::Sizes z;
      z.F = 2 * F;
      z.H = H;
      z.D = D;
      AttentionModule mhsa = buildDouble(makeSpec(Variant::FixedHead, z, causal, false), 104);
      const auto zeros = torch::zeros({H * D, F}, torch::kDouble);
      assign(*mhsa, {{"wq.weight", torch::cat({Wq, zeros}, 1)},
                     {"wk.weight", torch::cat({zeros, Wk}, 1)},
                     {"wv.weight", torch::cat({zeros, Wv}, 1)},
                     {"wo.weight", torch::cat({w.at("wo.weight"), torch::zeros({F, H * D}, torch::kDouble)}, 0)}});
      const auto y = run(*mla, x);
      // The MHSA's output is 2F wide (its W^O's second F rows are zero): its first F features are MLA's.
      const auto expected = run(*mhsa, torch::cat({xq, xkv}, -1)).narrow(-1, 0, F);
      expectClose(y, expected, 1e-12, "MLA (rope 0) vs MHSA with low-rank W^K, W^V");
      std::printf("MLA rope 0 q_rank %d vs MHSA: max |Δy| %.3g\n", qRank, (y - expected).abs().max().item<double>());
    }
}

TEST(AttentionSlots, MlaRotaryIsTheOfficialComplexTurn) {
  // DeepSeek-V3's apply_rotary_emb: view_as_complex on consecutive pairs times polar(1, n·θ^(−2j/r)).
  const int64_t B = 2, N = 5, H = 3, r = 6;
  torch::manual_seed(111);
  const auto x = torch::randn({B, N, H, r}, torch::kDouble);
  const auto freqs = 1.0 / torch::pow(10000.0, torch::arange(0, r, 2, torch::kDouble) / double(r));
  const auto angles = torch::outer(torch::arange(N, torch::kDouble), freqs);
  const auto cis = torch::polar(torch::ones_like(angles), angles).view({1, N, 1, r / 2});
  const auto official = torch::view_as_real(torch::view_as_complex(x.view({B, N, H, r / 2, 2})) * cis).flatten(3);
  expectClose(mlaRotary(x, spec::kMlaRopeTheta), official, 1e-14, "rotary vs complex turn");
  // The shared key [B, M, r] turns the same way.
  expectClose(mlaRotary(x.select(2, 1), spec::kMlaRopeTheta), official.select(2, 1), 1e-14, "rotary of the shared key");
  // Turning preserves each pair's norm, and position 0 is the identity.
  expectClose(mlaRotary(x, 1e4).select(1, 0), x.select(1, 0), 1e-15, "position 0");
}

TEST(AttentionSlots, MlaSpecValidationAndJson) {
  auto s = spec::makeSpecPreset("mla");
  EXPECT_TRUE(spec::validate(s).empty()) << spec::formatIssues(spec::validate(s));
  EXPECT_EQ(s.slots.latent.kv_rank, 32);
  EXPECT_EQ(s.slots.latent.rope_dim, 8);
  EXPECT_EQ(s.slots.latent.q_rank, 0);
  // Round trip, with the order.
  s.slots.latent.order = spec::LatentOrder::Absorbed;
  s.slots.latent.q_rank = 24;
  EXPECT_EQ(spec::fromJson(spec::toJson(s)), s);
  const auto text = spec::toJson(s);
  EXPECT_NE(text.find("\"order\": \"absorbed\""), std::string::npos) << text;
  // Written only when set: the other presets' files hold no "latent".
  for (const char* name : {"gqa", "diff", "gated"})
    EXPECT_EQ(spec::toJson(spec::makeSpecPreset(name)).find("latent"), std::string::npos) << name;
  // Each problem is named by its field.
  auto bad = spec::makeSpecPreset("mla");
  bad.slots.latent.rope_dim = 3;
  bad.slots.latent.kv_rank = 0;
  bad.slots.latent.q_rank = -1;
  bad.slots.gate = spec::Gate::Headwise;
  bad.bias = true;
  const auto issues = spec::validate(bad);
  std::set<std::string> fields;
  for (const auto& i : issues) fields.insert(i.field);
  EXPECT_EQ(fields, (std::set<std::string>{"slots.latent.kv_rank", "slots.latent.q_rank", "slots.latent.rope_dim",
                                           "slots.latent", "bias"}))
      << spec::formatIssues(issues);
  // An unknown order and an unknown key are refused by the reader.
  const std::string withOrder = spec::toJson(spec::makeSpecPreset("mla"));
  auto replaced = withOrder;
  replaced.replace(replaced.find("\"naive\""), 7, "\"fast\"");
  EXPECT_THROW(spec::fromJson(replaced), spec::SpecError);
  // The module's trainable count equals the cost model's.
  AttentionModule m = buildDouble(s, 1);
  EXPECT_EQ(m->trainableParameterCount(), spec::parameterCount(s));
}

/// A TPA spec (§8.7) on an mhsa layer: ranks R_Q (0: MHSA queries), R_K, R_V.
static spec::AttentionSpec tpaSpec(int F, int H, int D, bool causal, int rq, int rk, int rv, bool contextual, bool rope) {
  auto s = headed(F, H, D, causal, false);
  s.slots.tpa.q_rank = rq;
  s.slots.tpa.k_rank = rk;
  s.slots.tpa.v_rank = rv;
  s.slots.tpa.contextual_a = contextual;
  s.slots.tpa.rope = rope;
  return s;
}

TEST(AttentionSlots, TpaNonContextualRankHWithScaledIdentityFactorsIsMhsa) {
  // Paper §4: MHA is non-contextual TPA with R = H and a_r = H·e_r. With A = H·I the factor sum
  // (1/H)·Σ_r H·δ_hr·B_r is B_h, so W_B_q, W_B_k, W_B_v are MHSA's wq, wk, wv, head by head. The
  // queries of T6_kvonly (R_Q = 0) are MHSA's already.
  for (bool causal : {false, true})
    for (int rq : {3, 0}) {
      const int F = 7, H = 3, D = 4;
      auto s = tpaSpec(F, H, D, causal, rq, H, H, false, false);
      AttentionModule tpa = buildDouble(s, 301);
      perturbParameters(*tpa, 302);
      const auto eye = torch::eye(H, torch::kDouble) * double(H);
      std::map<std::string, torch::Tensor> a = {{"A_k", eye}, {"A_v", eye}};
      if (rq > 0) a["A_q"] = eye;
      assign(*tpa, a);
      const auto w = parametersOf(*tpa);
      AttentionModule mhsa = buildDouble(headed(F, H, D, causal, false), 303);
      assign(*mhsa, {{"wq.weight", rq > 0 ? w.at("W_B_q.weight") : w.at("wq.weight")},
                     {"wk.weight", w.at("W_B_k.weight")},
                     {"wv.weight", w.at("W_B_v.weight")},
                     {"wo.weight", w.at("wo.weight")}});
      const auto x = randomInput(2, 5, F, 304);
      torch::NoGradGuard noGrad;
      const auto a1 = tpa->forward(x, {true}), a2 = mhsa->forward(x, {true});
      expectClose(a1.y, a2.y, 1e-12, "non-contextual TPA (R = H, A = H·I) vs MHSA");
      expectClose(a1.maps, a2.maps, 1e-12, "maps");
      // Any other scale of the identity is another layer (the 1/R matters).
      auto wrong = a;
      for (auto& kv : wrong) kv.second = kv.second / double(H);
      assign(*tpa, wrong);
      EXPECT_GT((run(*tpa, x) - a2.y).abs().max().item<double>(), 1e-6);
    }
}

TEST(AttentionSlots, TpaConstantFeatureFactorsOfRankDWithScaledIdentityAreMhsa) {
  // The dual of paper §4's reading (Table 1, "TPA (Non-contextual B)"): with constant feature
  // factors b = D·I of rank D, (1/D)·Σ_r A[n,h,r]·D·δ_rd = A[n,h,d], so W_A_q, W_A_k, W_A_v
  // ([H·D, F], row h·D + d) are MHSA's wq, wk, wv.
  for (bool causal : {false, true})
    for (int rq : {4, 0}) {
      const int F = 7, H = 3, D = 4;
      auto s = tpaSpec(F, H, D, causal, rq, D, D, true, false);
      s.slots.tpa.contextual_b = false;
      AttentionModule tpa = buildDouble(s, 311);
      perturbParameters(*tpa, 312);
      const auto eye = torch::eye(D, torch::kDouble) * double(D);
      std::map<std::string, torch::Tensor> b = {{"B_k", eye}, {"B_v", eye}};
      if (rq > 0) b["B_q"] = eye;
      assign(*tpa, b);
      const auto w = parametersOf(*tpa);
      AttentionModule mhsa = buildDouble(headed(F, H, D, causal, false), 313);
      assign(*mhsa, {{"wq.weight", rq > 0 ? w.at("W_A_q.weight") : w.at("wq.weight")},
                     {"wk.weight", w.at("W_A_k.weight")},
                     {"wv.weight", w.at("W_A_v.weight")},
                     {"wo.weight", w.at("wo.weight")}});
      const auto x = randomInput(2, 5, F, 314);
      torch::NoGradGuard noGrad;
      const auto a1 = tpa->forward(x, {true}), a2 = mhsa->forward(x, {true});
      expectClose(a1.y, a2.y, 1e-12, "TPA with constant B = D·I of rank D vs MHSA");
      expectClose(a1.maps, a2.maps, 1e-12, "maps");
      auto wrong = b;  // b = I: every head scaled by 1/D, another layer
      for (auto& kv : wrong) kv.second = kv.second / double(D);
      assign(*tpa, wrong);
      EXPECT_GT((run(*tpa, x) - a2.y).abs().max().item<double>(), 1e-6);
      EXPECT_EQ(spec::nameDesigns(s).front().name, "MHSA");
    }
}

TEST(AttentionSlots, TpaConstantFeatureFactorsTurnAsTheirSums) {
  // The rotary is linear, so turning the constant b per position and summing equals turning each
  // head's sum (1/R)·A·b: with b = D·I the queries are T6_kvonly's turned MHSA queries. Checked
  // through the maps of a layer whose keys are the same (constant B = D·I) on both sides.
  const int F = 6, H = 2, D = 4;
  auto s = tpaSpec(F, H, D, true, D, D, D, true, true);
  s.slots.tpa.contextual_b = false;
  auto kvOnly = tpaSpec(F, H, D, true, 0, D, D, true, true);
  kvOnly.slots.tpa.contextual_b = false;
  AttentionModule a = buildDouble(s, 321), b = buildDouble(kvOnly, 322);
  perturbParameters(*a, 323);
  const auto eye = torch::eye(D, torch::kDouble) * double(D);
  assign(*a, {{"B_q", eye}});
  auto w = parametersOf(*a);
  w["wq.weight"] = w.at("W_A_q.weight");
  w.erase("W_A_q.weight");
  w.erase("B_q");
  assign(*b, w);
  const auto x = randomInput(2, 6, F, 324);
  torch::NoGradGuard noGrad;
  expectClose(a->forward(x, {true}).maps, b->forward(x, {true}).maps, 1e-12, "turned constant b vs turned queries");
  expectClose(run(*a, x), run(*b, x), 1e-12, "outputs");
}

TEST(AttentionSlots, TpaFusedFactorKernelEqualsTheAtenFormulation) {
  // The CPU path (one stacked projection GEMM, the factor sums and T6's rotary in one pass of
  // kernels/tpa_factors.h, then the fused attention kernel) against the ATen formulation it replaces
  // (T6's order: each factor projection, the turned feature factors, the factor products): outputs,
  // maps and every parameter's gradient. Factorised and MHSA queries, the rotary on and off (another
  // base), odd ranks, the head norm, and the preset's proportions (R_Q·H·D ≥ 400).
  struct FusedCase {
    int F, H, D, rq, rk, rv;
    bool rope, norm;
    double base;
  };
  for (const FusedCase& c : {FusedCase{7, 3, 4, 3, 2, 1, true, false, 10000.0}, FusedCase{7, 3, 4, 0, 1, 3, true, true, 50.0},
                             FusedCase{6, 2, 3, 2, 3, 2, false, false, 10000.0},
                             FusedCase{9, 4, 32, 6, 2, 2, true, false, 10000.0}})
    for (bool causal : {false, true}) {
      auto s = tpaSpec(c.F, c.H, c.D, causal, c.rq, c.rk, c.rv, true, c.rope);
      s.slots.tpa.group_norm = c.norm;
      s.slots.tpa.rope_base = c.base;
      const auto x = randomInput(2, 5, c.F, 341);
      expectSameRun(runWithGradients(s, x, true, 342), runWithGradients(s, x, false, 342), 1e-12,
                    spec::toJson(s, -1));
    }
  // The kernel refuses what it cannot read, with the reason.
  const auto proj = torch::zeros({1, 2, 10}, torch::kDouble);
  EXPECT_THROW(tpaFactorQkv(proj, 2, 3, {1, 1, 1}, false, 10000.0), std::invalid_argument);  // W is 15
  EXPECT_THROW(tpaFactorQkv(torch::zeros({1, 2, 15}, torch::kDouble), 2, 3, {1, 1, 1}, true, 10000.0),
               std::invalid_argument);  // odd D with the rotary
}

TEST(AttentionSlots, TpaHeadNormIsT6sSublnOfEachHead) {
  // T6's using_groupnorm (model/T6.py L157–161, L179–181): RMSNorm(head_dim, eps 1e-5) of each
  // head's output with one weight γ [D], before c_proj. With W^O = I (F = H·D) the layer's output
  // is the heads' outputs themselves, so the normed layer equals the plain one normalised here.
  const int H = 2, D = 3, F = H * D;
  for (bool contextualB : {true, false}) {
    auto plain = tpaSpec(F, H, D, true, 2, 2, 3, true, false);
    plain.slots.tpa.contextual_b = contextualB;
    auto normed = plain;
    normed.slots.tpa.group_norm = true;
    AttentionModule a = buildDouble(plain, 331), b = buildDouble(normed, 332);
    perturbParameters(*a, 333);
    auto w = parametersOf(*a);
    w["wo.weight"] = torch::eye(F, torch::kDouble);
    assign(*a, w);
    const auto gamma = torch::tensor({0.5, -1.25, 2.0}, torch::kDouble);
    w["subln.weight"] = gamma;
    assign(*b, w);
    const auto x = randomInput(2, 5, F, 334);
    const auto o = run(*a, x).view({2, 5, H, D});
    const auto expected = o / torch::sqrt(o.pow(2).mean(-1, true) + 1e-5) * gamma;
    expectClose(run(*b, x), expected.view({2, 5, F}), 1e-12, "head norm");
    EXPECT_EQ(b->trainableParameterCount(), a->trainableParameterCount() + D);
    EXPECT_EQ(b->trainableParameterCount(), spec::parameterCount(normed));
  }
}

TEST(AttentionSlots, TpaConstantKeyAndValueFactorsOfRankGAreGqa) {
  // Paper §4.2: GQA with G groups is non-contextual TPA with R_K = R_V = G and a_j = G·mask_j (ones on
  // the heads of group j); MQA is G = 1, a = 1_H. The queries as MHSA's (R_Q = H, A_q = H·I). Group j
  // holds heads ⌊h/(H/G)⌋ = j, as slots.kv_groups does.
  for (bool causal : {false, true})
    for (int G : {1, 2, 4}) {
      const int F = 6, H = 4, D = 2;
      auto s = tpaSpec(F, H, D, causal, H, G, G, false, false);
      AttentionModule tpa = buildDouble(s, 311);
      perturbParameters(*tpa, 312);
      auto mask = torch::zeros({H, G}, torch::kDouble);
      for (int h = 0; h < H; ++h) mask[h][h / (H / G)] = double(G);
      assign(*tpa, {{"A_q", torch::eye(H, torch::kDouble) * double(H)}, {"A_k", mask}, {"A_v", mask}});
      const auto w = parametersOf(*tpa);
      auto m = headed(F, H, D, causal, false);
      m.slots.kv_groups = G;
      AttentionModule gqa = buildDouble(m, 313);
      assign(*gqa, {{"wq.weight", w.at("W_B_q.weight")},
                    {"wk.weight", w.at("W_B_k.weight")},
                    {"wv.weight", w.at("W_B_v.weight")},
                    {"wo.weight", w.at("wo.weight")}});
      const auto x = randomInput(2, 5, F, 314);
      expectClose(run(*tpa, x), run(*gqa, x), 1e-12, "TPA R_K = R_V = G, a_j = G·mask_j vs GQA-G");
    }
}

TEST(AttentionSlots, TpaFactorContractionEqualsFormingQueriesKeysAndValues) {
  // FlashTPA's order (paper Algorithm 2): the R_Q·R_K feature-factor products P[n,m,r,s] = B_q[n,r]·B_k[m,s]
  // (turned), mixed into each head by the head factors, S[h,n,m] = Σ_rs A_q[n,h,r]·A_k[m,h,s]·P[n,m,r,s]
  // / (R_Q·R_K); the values likewise contracted factor by factor. The module forms q, k, v first.
  for (bool causal : {false, true})
    for (bool contextual : {true, false}) {
      const int F = 5, H = 3, D = 4, Rq = 2, Rk = 3, Rv = 2;
      auto s = tpaSpec(F, H, D, causal, Rq, Rk, Rv, contextual, true);
      AttentionModule tpa = buildDouble(s, 321);
      perturbParameters(*tpa, 322);
      const auto w = parametersOf(*tpa);
      const int64_t B = 2, N = 6;
      const auto x = randomInput(B, N, F, 323);
      auto factorA = [&](const std::string& v, int64_t R) {
        return contextual ? torch::linear(x, w.at("W_A_" + v + ".weight")).view({B, N, H, R})
                          : w.at("A_" + v).view({1, 1, H, R}).expand({B, N, H, R});
      };
      auto factorB = [&](const std::string& v, int64_t R) { return torch::linear(x, w.at("W_B_" + v + ".weight")).view({B, N, R, D}); };
      const auto Bq = tpaRotary(factorB("q", Rq), 1e4), Bk = tpaRotary(factorB("k", Rk), 1e4), Bv = factorB("v", Rv);
      const auto Pf = torch::einsum("bnrd,bmsd->bnmrs", {Bq, Bk});
      const auto logits = torch::einsum("bnhr,bmhs,bnmrs->bhnm", {factorA("q", Rq), factorA("k", Rk), Pf}) / double(Rq * Rk);
      auto scaled = logits / std::sqrt(double(D));
      if (causal) scaled = scaled.masked_fill(torch::ones({N, N}, torch::kBool).triu(1), -INFINITY);
      const auto P = torch::softmax(scaled, -1);
      // o[n,h,d] = (1/R_V)·Σ_t Σ_m P[h,n,m]·A_v[m,h,t]·B_v[m,t,d]
      const auto o = torch::einsum("bhnm,bmht,bmtd->bnhd", {P, factorA("v", Rv), Bv}) / double(Rv);
      const auto y = torch::linear(o.reshape({B, N, H * D}), w.at("wo.weight"));
      torch::NoGradGuard noGrad;
      const auto out = tpa->forward(x, {true});
      expectClose(out.maps, P, 1e-12, "maps: factor contraction vs q, k, v first");
      expectClose(out.y, y, 1e-12, "y: factor contraction vs q, k, v first");
    }
}

TEST(AttentionSlots, TpaBroadcastFactorProductEqualsT6sBatchedProduct) {
  // The module forms contextual q, k, v as a broadcast product summed over the rank; T6 (and this
  // module before) as a batched matrix product per token, torch.bmm(A [BN, H, R], B [BN, R, D]) / R.
  // Same y and same gradients for x and every weight (float64), with the fused and the ATen path,
  // ranks on both sides of the size where LibTorch's bmm changes kernel (R·H·D = 400).
  for (bool causal : {false, true})
    for (int Rq : {0, 2, 7}) {
      const int F = 6, H = 4, D = 16, Rk = 3, Rv = 2;
      SCOPED_TRACE("causal " + std::to_string(causal) + ", R_Q " + std::to_string(Rq));
      auto s = tpaSpec(F, H, D, causal, Rq, Rk, Rv, true, true);
      AttentionModule tpa = buildDouble(s, 341);
      perturbParameters(*tpa, 342);
      const int64_t B = 2, N = 5;
      const auto x0 = randomInput(B, N, F, 343);
      // The oracle: T6's CPLinear.forward (bmm, div_ by rank) on the module's own weights.
      auto params = tpa->named_parameters(true);
      const auto xr = x0.clone().requires_grad_(true);
      auto factor = [&](const std::string& v, int64_t R, bool turn) {
        const auto A = torch::linear(xr, params["W_A_" + v + ".weight"]).view({B * N, H, R});
        auto Bf = torch::linear(xr, params["W_B_" + v + ".weight"]).view({B, N, R, D});
        if (turn) Bf = tpaRotary(Bf, 1e4);
        return torch::bmm(A, Bf.reshape({B * N, R, D})).div(double(R)).view({B, N, H, D});
      };
      const auto q = Rq == 0 ? tpaRotary(torch::linear(xr, params["wq.weight"]).view({B, N, H, D}), 1e4) : factor("q", Rq, true);
      const auto k = factor("k", Rk, true), v = factor("v", Rv, false);
      auto logits = torch::einsum("bnhd,bmhd->bhnm", {q, k}) / std::sqrt(double(D));
      if (causal) logits = logits.masked_fill(torch::ones({N, N}, torch::kBool).triu(1), -INFINITY);
      const auto o = torch::einsum("bhnm,bmhd->bnhd", {torch::softmax(logits, -1), v});
      const auto want = torch::linear(o.reshape({B, N, H * D}), params["wo.weight"]);
      const auto gy = torch::randn_like(want);
      const auto wantGrads = torch::autograd::grad({want}, {xr}, {gy}, true);
      std::map<std::string, torch::Tensor> wantWeightGrads;
      for (auto& p : params) {
        const auto g = torch::autograd::grad({want}, {p.value()}, {gy}, true, false, true)[0];
        wantWeightGrads[p.key()] = g.defined() ? g : torch::zeros_like(p.value());
      }
      for (bool fused : {true, false}) {
        SCOPED_TRACE(fused ? "fused kernel" : "ATen path");
        tpa->zero_grad();
        const auto x = x0.clone().requires_grad_(true);
        setFusedAttentionEnabled(fused);
        const auto y = tpa->forward(x, {}).y;
        setFusedAttentionEnabled(true);
        expectClose(y, want, 1e-12, "y");
        y.backward(gy);
        expectClose(x.grad(), wantGrads[0], 1e-11, "dL/dx");
        for (auto& p : tpa->named_parameters(true))
          expectClose(p.value().grad().defined() ? p.value().grad() : torch::zeros_like(p.value()), wantWeightGrads.at(p.key()),
                      1e-11, p.key());
      }
    }
}

TEST(AttentionSlots, TpaRotaryIsT6sHalfSplitTurn) {
  // T6's apply_rotary_emb (tensorgi/TPA model/T6.py lines 36-62): x1 = x[..., :D/2], x2 = x[..., D/2:],
  // (x1·cos + x2·sin, −x1·sin + x2·cos) with inv_freq = base^(−arange(0, D, 2)/D) and angles t·inv_freq.
  const int64_t B = 2, N = 5, R = 3, D = 6;
  torch::manual_seed(331);
  const auto x = torch::randn({B, N, R, D}, torch::kDouble);
  for (double base : {10000.0, 50.0}) {
    const auto inv = 1.0 / torch::pow(base, torch::arange(0, D, 2, torch::kDouble) / double(D));
    const auto ang = torch::outer(torch::arange(N, torch::kDouble), inv).view({1, N, 1, D / 2});
    const auto x1 = x.narrow(-1, 0, D / 2), x2 = x.narrow(-1, D / 2, D / 2);
    const auto official = torch::cat({x1 * ang.cos() + x2 * ang.sin(), -x1 * ang.sin() + x2 * ang.cos()}, -1);
    expectClose(tpaRotary(x, base), official, 1e-14, "T6 rotary");
  }
  // Turned queries and keys meet by their distance only: q_n·k_m = q_{n+1}·k_{m+1} for the same vectors.
  const auto u = torch::randn({1, 1, 1, D}, torch::kDouble).expand({1, N, 1, D});
  const auto v = torch::randn({1, 1, 1, D}, torch::kDouble).expand({1, N, 1, D});
  const auto tu = tpaRotary(u, 1e4), tv = tpaRotary(v, 1e4);
  const auto dot = [&](int n, int m) { return (tu.select(1, n) * tv.select(1, m)).sum().item<double>(); };
  EXPECT_NEAR(dot(3, 1), dot(4, 2), 1e-12);
  EXPECT_NEAR(dot(0, 0), (u.select(1, 0) * v.select(1, 0)).sum().item<double>(), 1e-12);
}

TEST(AttentionSlots, TpaSpecValidationAndJson) {
  for (const char* name : {"tpa", "tpa_kv_only"}) {
    auto s = spec::makeSpecPreset(name);
    EXPECT_TRUE(spec::validate(s).empty()) << name << spec::formatIssues(spec::validate(s));
    EXPECT_EQ(s.slots.tpa.k_rank, 2) << name;
    EXPECT_EQ(s.slots.tpa.v_rank, 2) << name;
    EXPECT_EQ(s.slots.tpa.q_rank, std::string(name) == "tpa" ? 6 : 0) << name;
    EXPECT_TRUE(s.slots.tpa.contextual_a && s.slots.tpa.rope) << name;
    EXPECT_EQ(spec::fromJson(spec::toJson(s)), s) << name;
    AttentionModule m = buildDouble(s, 1);
    EXPECT_EQ(m->trainableParameterCount(), spec::parameterCount(s)) << name;
  }
  auto s = spec::makeSpecPreset("tpa");
  s.slots.tpa.contextual_a = false;
  s.slots.tpa.rope = false;
  s.slots.tpa.rope_base = 500.0;
  EXPECT_EQ(spec::fromJson(spec::toJson(s)), s);
  // Constant feature factors and T6's head norm: read back, written only when set.
  EXPECT_EQ(spec::toJson(spec::makeSpecPreset("tpa")).find("contextual_b"), std::string::npos);
  EXPECT_EQ(spec::toJson(spec::makeSpecPreset("tpa")).find("group_norm"), std::string::npos);
  s.slots.tpa.contextual_a = true;
  s.slots.tpa.contextual_b = false;
  s.slots.tpa.group_norm = true;
  EXPECT_TRUE(spec::validate(s).empty()) << spec::formatIssues(spec::validate(s));
  EXPECT_EQ(spec::fromJson(spec::toJson(s)), s);
  {
    AttentionModule m = buildDouble(s, 1);
    EXPECT_EQ(m->trainableParameterCount(), spec::parameterCount(s));
  }
  // Both factors constant: the keys and values would not read the token.
  auto neither = s;
  neither.slots.tpa.contextual_a = false;
  std::set<std::string> neitherFields;
  for (const auto& i : spec::validate(neither)) neitherFields.insert(i.field);
  EXPECT_EQ(neitherFields, (std::set<std::string>{"slots.tpa.contextual_b"}));
  // Written only when set: the other presets' files hold no "tpa".
  for (const char* name : {"gqa", "diff", "mla"})
    EXPECT_EQ(spec::toJson(spec::makeSpecPreset(name)).find("tpa"), std::string::npos) << name;
  // Each problem is named by its field.
  auto bad = spec::makeSpecPreset("tpa");
  bad.sizes.D = 15;  // odd: the half-split rotary needs pairs
  bad.slots.tpa.q_rank = -1;
  bad.slots.tpa.k_rank = 0;
  bad.slots.tpa.v_rank = 5000;
  bad.slots.tpa.rope_base = 0.5;
  bad.slots.kv_groups = 2;
  bad.bias = true;
  const auto issues = spec::validate(bad);
  std::set<std::string> fields;
  for (const auto& i : issues) fields.insert(i.field);
  EXPECT_EQ(fields, (std::set<std::string>{"slots.tpa.q_rank", "slots.tpa.k_rank", "slots.tpa.v_rank", "slots.tpa.rope",
                                           "slots.tpa.rope_base", "slots.tpa", "bias"}))
      << spec::formatIssues(issues);
  // The reader refuses an unknown key and a tpa object without its ranks.
  auto text = spec::toJson(spec::makeSpecPreset("tpa"));
  auto unknown = text;
  unknown.replace(unknown.find("\"k_rank\""), 8, "\"k_rnak\"");
  EXPECT_THROW(spec::fromJson(unknown), spec::SpecError);
  // A MLA layer cannot also be TPA.
  auto both = spec::makeSpecPreset("tpa");
  both.slots.latent.kv_rank = 4;
  bool named = false;
  for (const auto& i : spec::validate(both)) named = named || i.field == "slots.tpa";
  EXPECT_TRUE(named);
}

}  // namespace tensorscope::model_core::test
