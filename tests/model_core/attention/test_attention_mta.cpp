// Multi-token attention (docs/attention-variants.md §8.8; facebookresearch/RAM
// projects/mta/mta_transformer.py). The module against the loop reference also runs in every suite
// over coveredCases (reference, gradients, no-leak, weights); these tests are MTA's own.

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <set>

#include "attention/attention_module.h"
#include "attention/mta.h"
#include "reference.h"
#include "spec/attention_spec.h"
#include "spec/cost_model.h"
#include "spec/slot_values.h"
#include "spec/spec_json.h"
#include "spec/validation.h"

namespace tensorscope::model_core::test {
namespace {

spec::AttentionSpec mtaSpec(int F, int H, int D, bool causal) {
  spec::AttentionSpec s = spec::makeSpecPreset("mta");
  s.sizes.F = F;
  s.sizes.H = H;
  s.sizes.D = D;
  s.causal = causal;
  return s;
}

}  // namespace

TEST(AttentionMta, PresetIsAnMtaLayerOfThe300MConfig) {
  const auto s = spec::makeSpecPreset("mta");
  EXPECT_TRUE(spec::validate(s).empty()) << spec::formatIssues(spec::validate(s));
  const auto& m = s.slots.mta;
  EXPECT_EQ(m.q_kernel, 6);
  EXPECT_EQ(m.k_kernel, 11);
  EXPECT_EQ(m.post_q_kernel, 6);
  EXPECT_EQ(m.post_k_kernel, 11);
  EXPECT_EQ(m.pad, spec::MtaPad::Both);
  EXPECT_EQ(m.head_group, 0);  // head_kernel_size = n_heads: the full mixing post_mix
  EXPECT_TRUE(m.group_norm);
  EXPECT_FALSE(m.norm_rescale);
  EXPECT_EQ(m.out_gate, spec::Gate::Headwise);
  EXPECT_TRUE(s.slots.pre_mix);
  EXPECT_TRUE(s.slots.post_mix);
  EXPECT_TRUE(s.causal);
  EXPECT_EQ(spec::fromJson(spec::toJson(s)), s);
}

TEST(AttentionMta, IdentityKernelsAndMixingsAreMhsa) {
  // A new MTA layer (identity kernels, identity head mixings; no norm or gate) computes MHSA with
  // the same wq, wk, wv, wo, for every pad, full and causal, with odd sizes.
  for (bool causal : {false, true})
    for (auto pad : {spec::MtaPad::Both, spec::MtaPad::Left, spec::MtaPad::Right}) {
      auto s = mtaSpec(7, 3, 5, causal);
      s.slots.mta.group_norm = false;
      s.slots.mta.out_gate = spec::Gate::None;
      s.slots.mta.pad = pad;
      s.slots.mta.k_kernel = 5;
      s.slots.mta.post_q_kernel = 2;
      s.slots.mta.post_k_kernel = 3;
      s.bias = true;
      ASSERT_TRUE(spec::validate(s).empty()) << spec::formatIssues(spec::validate(s));
      AttentionModule mta = buildDouble(s, 11);
      spec::AttentionSpec plain = s;
      plain.slots = spec::Slots{};
      AttentionModule mhsa = buildDouble(plain, 12);
      std::map<std::string, torch::Tensor> w;
      for (const auto& p : mhsa->named_parameters(true)) w[p.key()] = p.value().detach().clone();
      assign(*mta, w);
      const auto x = randomInput(2, 9, 7, 13);
      torch::NoGradGuard noGrad;
      const auto a = mta->forward(x, {true}), b = mhsa->forward(x, {true});
      const std::string what = std::string(causal ? "causal" : "full") + " pad " + std::string(spec::toString(pad));
      expectClose(a.y, b.y, 1e-12, "y, identity MTA vs MHSA, " + what);
      expectClose(a.maps, b.maps, 1e-12, "maps, identity MTA vs MHSA, " + what);
    }
}

TEST(AttentionMta, ModuleEqualsTheLoopReferenceInFloat64AndFloat32) {
  // The preset's structure at odd sizes (H = 3, D = 5, N = 13 > c_k), general weights, with
  // the norm rescale and shared keys and values in a second configuration.
  for (bool causal : {true, false})
    for (int variant = 0; variant < 2; ++variant) {
      auto s = mtaSpec(7, 3, 5, causal);
      if (variant == 1) {
        s.sizes.H = 4;
        s.slots.post_mix = false;
        s.slots.mta.head_group = 2;
        s.slots.kv_groups = 2;
        s.slots.mta.norm_rescale = true;
        s.slots.mta.out_gate = spec::Gate::Elementwise;
        s.slots.mta.q_kernel = 3;
        s.slots.mta.k_kernel = 4;
        s.slots.mta.pad = spec::MtaPad::Left;
      }
      SCOPED_TRACE(spec::toJson(s));
      AttentionModule m = buildDouble(s, 21);
      perturbParameters(*m, 22);
      const auto x = randomInput(2, 13, 7, 23);
      const Reference ref = referenceForward(s, weightsOf(*m), x);
      {
        torch::NoGradGuard noGrad;
        const auto out = m->forward(x, {true});
        expectClose(out.y, ref.y, 1e-11, "y float64");
        expectClose(out.maps, ref.maps, 1e-11, "maps float64");
      }
      m->to(torch::kFloat);
      torch::NoGradGuard noGrad;
      const auto out32 = m->forward(x.to(torch::kFloat), {true});
      EXPECT_EQ(out32.y.scalar_type(), torch::kFloat);
      expectClose(out32.y.to(torch::kDouble), ref.y, 2e-5, "y float32");
      expectClose(out32.maps.to(torch::kDouble), ref.maps, 2e-5, "maps float32");
    }
}

TEST(AttentionMta, GradientsMatchFiniteDifferences) {
  // Every parameter of the preset's structure (odd sizes) and the input: autograd vs central
  // differences of L = Σ y·r in float64, a few entries of each tensor.
  for (bool causal : {true, false}) {
    auto s = mtaSpec(5, 3, 3, causal);
    s.slots.mta.k_kernel = 3;
    s.slots.mta.post_k_kernel = 3;
    s.slots.mta.q_kernel = 2;
    s.slots.mta.post_q_kernel = 3;
    AttentionModule m = buildDouble(s, 31);
    perturbParameters(*m, 32);
    auto x = randomInput(1, 6, 5, 33).requires_grad_(true);
    torch::manual_seed(34);
    const auto r = torch::randn({1, 6, 5}, torch::kDouble);
    auto loss = [&] { return (m->forward(x, {}).y * r).sum(); };
    m->zero_grad();
    loss().backward();
    std::vector<std::pair<std::string, torch::Tensor>> tensors = {{"x", x}};
    for (const auto& p : m->named_parameters(true)) tensors.emplace_back(p.key(), p.value());
    for (auto& [name, t] : tensors) {
      const auto grad = t.grad().clone();
      const auto flat = t.detach().view(-1);
      const int64_t n = flat.numel();
      for (int64_t i : {int64_t(0), n / 2, n - 1}) {
        const double h = 1e-6, old = flat[i].item<double>();
        double plus, minus;
        {
          torch::NoGradGuard noGrad;
          flat[i] = old + h;
          plus = loss().item<double>();
          flat[i] = old - h;
          minus = loss().item<double>();
          flat[i] = old;
        }
        const double fd = (plus - minus) / (2 * h), ad = grad.view(-1)[i].item<double>();
        EXPECT_NEAR(ad, fd, 1e-6 * std::max(1.0, std::abs(fd))) << name << "[" << i << "] causal " << causal;
      }
    }
  }
}

TEST(AttentionMta, CausalLayerDoesNotReadLaterTokens) {
  // With pad both the key convolution reads keys up to (c_k − 1)/2 after m: still no token after
  // the query, since entries with m > n are zeroed before the convolution.
  auto s = mtaSpec(6, 2, 4, true);
  AttentionModule m = buildDouble(s, 41);
  perturbParameters(*m, 42);
  const auto x = randomInput(2, 10, 6, 43);
  torch::NoGradGuard noGrad;
  const auto base = m->forward(x, {true});
  for (int64_t i = 0; i + 1 < 10; ++i) {
    auto x2 = x.clone();
    x2.narrow(1, i + 1, 10 - i - 1).add_(2.0);
    const auto moved = m->forward(x2, {true});
    expectClose(moved.y.narrow(1, 0, i + 1), base.y.narrow(1, 0, i + 1), 1e-12, "outputs <= " + std::to_string(i));
    expectClose(moved.maps.narrow(2, 0, i + 1), base.maps.narrow(2, 0, i + 1), 1e-12, "map rows <= " + std::to_string(i));
  }
  // The hidden weights stay zero after the post-softmax convolution and the head mixing.
  EXPECT_EQ(base.maps.masked_select(torch::ones({10, 10}, torch::kBool).triu(1)).abs().max().item<double>(), 0.0);
}

TEST(AttentionMta, ConvolutionReadsEarlierQueriesAndPaddedKeys) {
  // A single 1 at (n0, m0) moved by a kernel with one entry at (i, j): it lands at
  // (n0 + c_q − 1 − i, m0 + p − j), p the left key padding of each pad.
  const int64_t N = 9, cq = 3, ck = 5, n0 = 4, m0 = 4;
  for (auto pad : {spec::MtaPad::Both, spec::MtaPad::Left, spec::MtaPad::Right}) {
    const int64_t p = pad == spec::MtaPad::Both ? 2 : pad == spec::MtaPad::Left ? 4 : 0;
    for (int64_t i = 0; i < cq; ++i)
      for (int64_t j = 0; j < ck; ++j) {
        auto maps = torch::zeros({1, 1, N, N}, torch::kDouble);
        maps[0][0][n0][m0] = 1.0;
        auto kernel = torch::zeros({1, cq, ck}, torch::kDouble);
        kernel[0][i][j] = 1.0;
        const auto out = mtaConvolution(maps, kernel, pad, false);
        const int64_t n = n0 + cq - 1 - i, m = m0 + p - j;
        auto expected = torch::zeros({1, 1, N, N}, torch::kDouble);
        if (n >= 0 && n < N && m >= 0 && m < N) expected[0][0][n][m] = 1.0;
        expectClose(out, expected, 0.0, "impulse, pad " + std::string(spec::toString(pad)));
      }
    // The identity kernel leaves any map unchanged.
    const auto any = torch::randn({2, 3, N, N}, torch::kDouble);
    expectClose(mtaConvolution(any, mtaIdentityKernel(3, cq, ck, pad).to(torch::kDouble), pad, false), any, 0.0,
                "identity kernel");
  }
}

TEST(AttentionMta, NormRescaleFollowsTheBlockIndex) {
  auto s = mtaSpec(6, 2, 4, true);
  s.slots.mta.norm_rescale = true;
  s.slots.mta.out_gate = spec::Gate::None;
  torch::manual_seed(51);
  AttentionModule first = makeAttentionModule(s, 0);
  torch::manual_seed(51);
  AttentionModule fourth = makeAttentionModule(s, 3);
  first->to(torch::kDouble);
  fourth->to(torch::kDouble);
  const auto x = randomInput(1, 5, 6, 52);
  torch::NoGradGuard noGrad;
  // y is linear in the normalised heads (no bias): the ratio is (1 − λ_init(3)) / (1 − λ_init(0)).
  const double ratio = (1.0 - spec::diffLambdaInit(3)) / (1.0 - spec::diffLambdaInit(0));
  expectClose(fourth->forward(x, {}).y, first->forward(x, {}).y * ratio, 1e-12, "block 3 vs block 0");
}

TEST(AttentionMta, SpecValidationNamesEveryProblemAndJsonRoundTrips) {
  auto s = spec::makeSpecPreset("mta");
  s.slots.mta.pad = spec::MtaPad::Right;
  s.slots.mta.k_kernel = 4;
  s.slots.mta.norm_rescale = true;
  s.slots.mta.out_gate = spec::Gate::Elementwise;
  s.slots.kv_groups = 2;
  EXPECT_TRUE(spec::validate(s).empty()) << spec::formatIssues(spec::validate(s));
  EXPECT_EQ(spec::fromJson(spec::toJson(s)), s);
  // Written only when set: the other presets' files hold no "mta".
  for (const char* name : {"gqa", "talking_heads", "tpa"})
    EXPECT_EQ(spec::toJson(spec::makeSpecPreset(name)).find("mta"), std::string::npos) << name;
  auto bad = spec::makeSpecPreset("mta");
  bad.slots.mta.k_kernel = 10;         // even with pad both
  bad.slots.mta.post_q_kernel = 0;     // one of the two post-softmax sizes
  bad.slots.mta.post_k_kernel = 3;
  bad.slots.mta.head_group = 3;        // does not divide H = 4
  // post_mix (the preset's) with the head convolution
  bad.slots.mta.norm_rescale = true;
  bad.slots.mta.group_norm = false;    // rescale without the norm
  bad.slots.gate = spec::Gate::Headwise;
  bad.slots.differential = true;
  std::set<std::string> fields;
  const auto issues = spec::validate(bad);
  for (const auto& i : issues) fields.insert(i.field);
  for (const char* f : {"slots.mta.k_kernel", "slots.mta.post_q_kernel", "slots.mta.head_group", "slots.mta.norm_rescale",
                        "slots.gate", "slots.mta"})
    EXPECT_TRUE(fields.count(f)) << f << " not named in:\n" << spec::formatIssues(issues);
  // head_group twice: it does not divide H, and post_mix is set with it.
  EXPECT_EQ(std::count_if(issues.begin(), issues.end(), [](const auto& i) { return i.field == "slots.mta.head_group"; }), 2)
      << spec::formatIssues(issues);
  auto range = spec::makeSpecPreset("mta");
  range.slots.mta.q_kernel = -1;
  range.slots.mta.k_kernel = 300;
  fields.clear();
  for (const auto& i : spec::validate(range)) fields.insert(i.field);
  EXPECT_TRUE(fields.count("slots.mta.q_kernel") && fields.count("slots.mta.k_kernel"));
  // The reader refuses an unknown key, an unknown pad and an unknown gate.
  const auto text = spec::toJson(spec::makeSpecPreset("mta"));
  for (const auto& [from, to] : std::vector<std::pair<std::string, std::string>>{
           {"\"q_kernel\"", "\"q_kernle\""}, {"\"both\"", "\"middle\""}, {"\"headwise\"", "\"tokenwise\""}}) {
    auto broken = text;
    broken.replace(broken.find(from), from.size(), to);
    EXPECT_THROW(spec::fromJson(broken), spec::SpecError) << to;
  }
  // A non-headed variant takes no MTA slot.
  auto thsa = spec::makeSpecPreset("thsa");
  thsa.slots.mta.q_kernel = 2;
  thsa.slots.mta.k_kernel = 3;
  bool named = false;
  for (const auto& i : spec::validate(thsa)) named = named || i.field == "slots";
  EXPECT_TRUE(named);
}

TEST(AttentionMta, ParameterCountAndTheCostModelAgreeWithTheModule) {
  for (const char* name : {"mta"})
    for (bool bias : {false, true}) {
      auto s = spec::makeSpecPreset(name);
      s.bias = bias;
      AttentionModule m = buildDouble(s, 61);
      EXPECT_EQ(m->trainableParameterCount(), spec::parameterCount(s));
      // H·c_q·c_k twice, H·H for the pre- and the post-softmax mixings,
      // D for the norm, D + 1 for the gate.
      const std::int64_t H = 4, D = 16, F = 64;
      const std::int64_t expected = 4 * F * H * D + 2 * H * 6 * 11 + 2 * H * H + D + D + 1 + (bias ? 3 * H * D + F : 0);
      EXPECT_EQ(spec::parameterCount(s), expected);
    }
  // Decoding keeps each token's key and value and its entries of the last c_q − 1 logit and
  // weight rows.
  const auto d = spec::estimateDecodeCost(spec::makeSpecPreset("mta"), 100);
  EXPECT_TRUE(d.supported);
  EXPECT_EQ(d.cache_elements_per_token, 2 * 4 * 16 + (5 + 5) * 4);
  // The convolution terms scale with c_q·c_k.
  auto small = spec::makeSpecPreset("mta");
  small.slots.mta.q_kernel = small.slots.mta.post_q_kernel = 1;
  small.slots.mta.k_kernel = small.slots.mta.post_k_kernel = 1;
  const auto big = spec::estimateCost(spec::makeSpecPreset("mta"), 2, 32), one = spec::estimateCost(small, 2, 32);
  EXPECT_NEAR(big.forward_flops - one.forward_flops, 2.0 * (2 * 6 * 11 - 2) * 2 * 4 * 32 * 32, 1e-6);
}

TEST(AttentionMta, KernelsStartAsDrawnAndTheSpecsIdentityIsTheModules) {
  // spec::mtaKernelValues (what the Design dock draws and the JSON omits when unchanged) is the
  // module's own identity init for every pad; drawn kernels are where the module starts.
  for (const auto pad : {spec::MtaPad::Both, spec::MtaPad::Left, spec::MtaPad::Right}) {
    auto s = mtaSpec(8, 2, 4, true);
    s.slots.mta.pad = pad;
    s.slots.mta.k_kernel = 5;
    s.slots.mta.post_q_kernel = 3;
    s.slots.mta.post_k_kernel = 3;
    ASSERT_TRUE(spec::validate(s).empty()) << spec::formatIssues(spec::validate(s));
    const auto w = parametersOf(*buildDouble(s, 62));
    const auto id = [&](bool post, int64_t cq, int64_t ck) {
      return torch::tensor(spec::mtaKernelValues(s.slots.mta, 2, post), torch::kDouble).view({2, cq, ck});
    };
    expectClose(w.at("mta_kernel"), id(false, 6, 5), 0, "pre-softmax identity, pad " + std::string(spec::toString(pad)));
    expectClose(w.at("mta_kernel_after_sm"), id(true, 3, 3), 0, "post-softmax identity");
    expectClose(w.at("mta_kernel"), mtaIdentityKernel(2, 6, 5, pad).to(torch::kDouble), 0, "mtaIdentityKernel");
    spec::setMtaKernelValues(s.slots.mta, 2, false, spec::makeMtaKernelPreset("key_blur", s.slots.mta, 2, false));
    spec::setMtaKernelValues(s.slots.mta, 2, true, spec::makeMtaKernelPreset("average", s.slots.mta, 2, true));
    const auto drawn = parametersOf(*buildDouble(s, 63));
    expectClose(drawn.at("mta_kernel"), id(false, 6, 5), 1e-7, "drawn pre-softmax kernel");
    expectClose(drawn.at("mta_kernel_after_sm"), id(true, 3, 3), 1e-7, "drawn post-softmax kernel");
    EXPECT_NEAR(drawn.at("mta_kernel_after_sm").sum().item<double>(), 2.0, 1e-6) << "two heads of 1/9 × 9";
  }
}

TEST(AttentionMta, MemoryEstimateCountsTheMapsItKeeps) {
  // The activations grow with the [B, H, N, N] maps each step keeps: more than MHSA's two, so the
  // memory guard (estimateTrainingMemory) refuses a long-sequence MTA run before MHSA's.
  auto s = spec::makeSpecPreset("mta");
  auto plain = s;
  plain.slots = spec::Slots{};
  const double maps = 4.0 * 2 * 4 * 1024.0 * 1024.0;  // bytes of one float32 [2, 4, 1024, 1024] map
  const auto a = spec::estimateCost(s, 2, 1024), b = spec::estimateCost(plain, 2, 1024);
  EXPECT_GE(a.activation_bytes - b.activation_bytes, 6 * maps);
}

}  // namespace tensorscope::model_core::test
