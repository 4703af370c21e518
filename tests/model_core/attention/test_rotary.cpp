// Rotary positions as a model option (docs/attention-variants.md §9): every layer that takes them
// against the float64 reference with turnReference (loops from the equations), on the fused CPU
// kernels and on the ATen path, in float64 and float32; the relative-position property the turn
// exists for; finite-difference gradients; causal no-leak; the layers that refuse it and why.

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <string>
#include <vector>

#include "attention/attention_module.h"
#include "attention/fused_attention.h"
#include "attention/rotary.h"
#include "attention/rotary_rule.h"
#include "reference.h"
#include "spec/attention_spec.h"
#include "spec/core_spec.h"

namespace tensorscope::model_core::test {
namespace {

using spec::Variant;

Rotary rotaryOf(RotaryPairs pairs) {
  Rotary r;
  r.on = true;
  r.pairs = pairs;
  return r;
}

std::string pairsName(RotaryPairs p) { return p == RotaryPairs::Half ? "half" : "interleaved"; }

/// Every layer kind that takes rotary positions, small sizes, with `causal`.
std::vector<spec::AttentionSpec> rotaryLayers(bool causal) {
  std::vector<spec::AttentionSpec> out;
  spec::Sizes z;
  z.F = 8;
  z.H = 2;
  z.D = 4;
  out.push_back(makeSpec(Variant::Mhsa, z, causal, true));
  out.push_back(makeSpec(Variant::Tp, z, causal, false));
  spec::Sizes f = z;
  f.D = 6;  // fixed_head: a head size of its own
  out.push_back(makeSpec(Variant::FixedHead, f, causal, false));
  spec::Sizes w = z;
  w.H = 4;
  w.D = 2;
  for (const char* name : {"gqa", "mqa", "talking_heads", "gated", "gated_headwise", "diff"}) {
    spec::AttentionSpec s = spec::makeSpecPreset(name);
    s.sizes.F = 8;
    s.sizes.H = std::string(name) == "diff" ? 2 : 4;
    s.sizes.D = 2;
    s.causal = causal;
    out.push_back(s);
  }
  spec::AttentionSpec diffShared = spec::makeSpecPreset("diff");
  diffShared.sizes = w;
  diffShared.sizes.F = 16;  // 2·H·D
  diffShared.slots.kv_groups = 2;
  diffShared.causal = causal;
  out.push_back(diffShared);
  for (const auto& preset : spec::corePresetNames())  // heads_only presets have D = 1: nothing to pair
    if (preset != "heads_only" && preset != "trainable_heads_only")
      out.push_back(thsaPresetSpec(Variant::Thsa, preset, 8, 2, 4, causal, preset == "skip_left"));
  return out;
}

ForwardOptions withMaps() {
  ForwardOptions o;
  o.with_maps = true;
  return o;
}

/// The module (float64, perturbed weights) with `rotary` on against the reference, y and maps.
void expectModuleMatchesReference(const spec::AttentionSpec& s, const Rotary& rotary, std::uint64_t seed,
                                  double tol) {
  AttentionModule m = buildDouble(s, seed);
  perturbParameters(*m, seed + 1);
  m->setRotary(rotary);
  const torch::Tensor x = randomInput(2, 6, s.sizes.F, seed + 2);
  torch::NoGradGuard noGrad;
  const AttentionOutput out = m->forward(x, withMaps());
  const Reference ref = referenceForward(s, weightsOf(*m), x, rotary);
  expectClose(out.y, ref.y, tol, "y");
  expectClose(out.maps, ref.maps, tol, "maps");
}

TEST(RotaryPositions, EveryLayerThatTakesThemMatchesTheFloat64Reference) {
  std::uint64_t seed = 100;
  for (bool fused : {true, false}) {
    setFusedAttentionEnabled(fused);
    for (bool causal : {false, true})
      for (RotaryPairs pairs : {RotaryPairs::Half, RotaryPairs::Interleaved})
        for (const auto& s : rotaryLayers(causal)) {
          const std::string what = describe(s) + " " + pairsName(pairs) + (fused ? " fused" : " aten");
          SCOPED_TRACE(what);
          ASSERT_EQ(rotaryProblem(s), "") << what;
          guarded(what, [&] { expectModuleMatchesReference(s, rotaryOf(pairs), seed, 1e-10); });
          seed += 3;
        }
  }
  setFusedAttentionEnabled(true);
}

TEST(RotaryPositions, RotaryChangesTheLayerAndOffLeavesItAsItWas) {
  for (const auto& s : rotaryLayers(true)) {
    SCOPED_TRACE(describe(s));
    AttentionModule m = buildDouble(s, 7);
    perturbParameters(*m, 8);
    const torch::Tensor x = randomInput(1, 5, s.sizes.F, 9);
    torch::NoGradGuard noGrad;
    const torch::Tensor plain = m->forward(x, {}).y;
    m->setRotary(rotaryOf(RotaryPairs::Half));
    const torch::Tensor turned = m->forward(x, {}).y;
    // Token 0 is not turned (angle 0), every later one is.
    expectClose(turned.select(1, 0), plain.select(1, 0), 1e-12, "token 0");
    EXPECT_GT((turned - plain).abs().max().item<double>(), 1e-4) << "rotary left the layer unchanged";
    m->setRotary(Rotary{});
    expectClose(m->forward(x, {}).y, plain, 0.0, "rotary off again");
  }
}

TEST(RotaryPositions, TheTurnMakesQueryKeyProductsDependOnTheOffsetOnly) {
  // One query vector u and one key vector w at every position: after the turn, q_n·k_m must depend
  // on n − m only (RoFormer eq. 16), in both pairings; the reference turn agrees with the module's.
  torch::manual_seed(3);
  const int64_t N = 9, D = 8;
  const torch::Tensor u = torch::randn({D}, torch::kDouble), w = torch::randn({D}, torch::kDouble);
  for (RotaryPairs pairs : {RotaryPairs::Half, RotaryPairs::Interleaved}) {
    SCOPED_TRACE(pairsName(pairs));
    const Rotary r = rotaryOf(pairs);
    const torch::Tensor q = applyRotary(u.expand({1, N, D}).contiguous(), D, r);
    const torch::Tensor k = applyRotary(w.expand({1, N, D}).contiguous(), D, r);
    expectClose(q, turnReference(u.expand({1, N, D}).contiguous(), static_cast<int>(D), r), 1e-14, "reference turn");
    const torch::Tensor dots = torch::matmul(q[0], k[0].t());  // [N, N]
    for (int64_t n = 0; n + 1 < N; ++n)
      for (int64_t m = 0; m + 1 < N; ++m)
        EXPECT_NEAR(dots[n][m].item<double>(), dots[n + 1][m + 1].item<double>(), 1e-12) << n << "," << m;
    // The norms are kept: a turn.
    expectClose(q.norm(2, -1), u.norm().expand({1, N}), 1e-13, "norm kept");
  }
}

TEST(RotaryPositions, TheBackwardTurnIsTheInverseOfTheForwardOneInBothPairings) {
  // RotaryTurn::Backward turns by −n·θ_j: written out for one pair (T6's sign) and undoing the
  // forward turn exactly (a rotation and its transpose); the forward turn differs from it (control).
  torch::manual_seed(4);
  const int64_t B = 2, N = 6, D = 8;
  const torch::Tensor x = torch::randn({B, N, 3, D}, torch::kDouble);
  for (RotaryPairs pairs : {RotaryPairs::Half, RotaryPairs::Interleaved}) {
    SCOPED_TRACE(pairsName(pairs));
    const auto fwd = applyRotary(x, D, pairs, 500.0, RotaryTurn::Forward);
    const auto bwd = applyRotary(x, D, pairs, 500.0, RotaryTurn::Backward);
    expectClose(applyRotary(fwd, D, pairs, 500.0, RotaryTurn::Backward), x, 1e-13, "backward undoes forward");
    expectClose(applyRotary(bwd, D, pairs, 500.0, RotaryTurn::Forward), x, 1e-13, "forward undoes backward");
    EXPECT_GT((fwd - bwd).abs().max().item<double>(), 1e-2);
    // Pair j = 1 of token n = 4, written out: members a, b at (1, 1 + D/2) or (2, 3).
    const int64_t ia = pairs == RotaryPairs::Half ? 1 : 2, ib = pairs == RotaryPairs::Half ? 1 + D / 2 : 3;
    const double ang = -4.0 * std::pow(500.0, -2.0 / double(D));
    const double a = x[1][4][2][ia].item<double>(), b = x[1][4][2][ib].item<double>();
    EXPECT_NEAR(bwd[1][4][2][ia].item<double>(), a * std::cos(ang) - b * std::sin(ang), 1e-14);
    EXPECT_NEAR(bwd[1][4][2][ib].item<double>(), a * std::sin(ang) + b * std::cos(ang), 1e-14);
  }
}

TEST(RotaryPositions, FloatModulesMatchTheFloat64ReferenceWithinFloatTolerance) {
  std::uint64_t seed = 500;
  for (const auto& s : rotaryLayers(true)) {
    const std::string what = describe(s);
    SCOPED_TRACE(what);
    guarded(what, [&] {
      torch::manual_seed(seed);
      AttentionModule m = makeAttentionModule(s);
      m->eval();
      perturbParameters(*m, seed + 1);
      m->setRotary(rotaryOf(RotaryPairs::Half));
      const torch::Tensor x = randomInput(2, 7, s.sizes.F, seed + 2);
      torch::NoGradGuard noGrad;
      const AttentionOutput out = m->forward(x.to(torch::kFloat), {});
      expectClose(out.y.to(torch::kDouble), referenceForward(s, weightsOf(*m), x, rotaryOf(RotaryPairs::Half)).y, 2e-5,
                  "float32 y");
    });
    seed += 3;
  }
}

TEST(RotaryPositions, GradientsMatchFiniteDifferences) {
  const double eps = 1e-6;
  std::uint64_t seed = 900;
  for (const auto& s : rotaryLayers(true)) {
    const std::string what = describe(s);
    SCOPED_TRACE(what);
    guarded(what, [&] {
      AttentionModule m = buildDouble(s, seed);
      perturbParameters(*m, seed + 1, 0.2);
      m->setRotary(rotaryOf(RotaryPairs::Interleaved));
      m->train();  // dropout is 0: the training paths (fused kernels with their backward)
      const torch::Tensor x = randomInput(1, 5, s.sizes.F, seed + 2).requires_grad_(true);
      torch::manual_seed(seed + 3);
      const torch::Tensor G = torch::randn({1, 5, s.sizes.F}, torch::kDouble);
      m->zero_grad();
      (m->forward(x, {}).y * G).sum().backward();
      const auto loss = [&](const torch::Tensor& input) {
        torch::NoGradGuard noGrad;
        return (m->forward(input, {}).y * G).sum().item<double>();
      };
      const torch::Tensor xd = x.detach().clone();
      for (int64_t i : {int64_t(1), int64_t(13), int64_t(38)}) {
        const double numeric = centralDifference(xd.view({-1}), i, eps, [&] { return loss(xd); });
        EXPECT_NEAR(x.grad().view({-1})[i].item<double>(), numeric, 1e-6 * (1 + std::abs(numeric))) << "x[" << i << "]";
      }
      const auto wq = m->named_parameters()["wq.weight"];
      torch::Tensor flat = wq.detach().view({-1});
      for (int64_t i : {int64_t(0), int64_t(5), wq.numel() - 1}) {
        const double numeric = centralDifference(flat, i, eps, [&] { return loss(xd); });
        EXPECT_NEAR(wq.grad().view({-1})[i].item<double>(), numeric, 1e-6 * (1 + std::abs(numeric)))
            << "wq.weight[" << i << "]";
      }
    });
    seed += 5;
  }
}

TEST(RotaryPositions, CausalLayersStillSeeNoLaterToken) {
  for (const auto& s : rotaryLayers(true)) {
    SCOPED_TRACE(describe(s));
    AttentionModule m = buildDouble(s, 41);
    perturbParameters(*m, 42);
    m->setRotary(rotaryOf(RotaryPairs::Half));
    const torch::Tensor x = randomInput(1, 7, s.sizes.F, 43);
    torch::Tensor later = x.clone();
    later.narrow(1, 4, 3).add_(randomInput(1, 3, s.sizes.F, 44));
    torch::NoGradGuard noGrad;
    expectClose(m->forward(later, {}).y.narrow(1, 0, 4), m->forward(x, {}).y.narrow(1, 0, 4), 1e-12,
                "tokens 0..3 after changing 4..6");
  }
}

TEST(RotaryPositions, LayersThatDoNotTakeThemSayWhy) {
  const auto refused = [](const spec::AttentionSpec& s, const std::string& needle) {
    SCOPED_TRACE(describe(s));
    const std::string why = rotaryProblem(s);
    EXPECT_NE(why.find(needle), std::string::npos) << why;
    AttentionModule m = buildDouble(s, 1);
    try {
      m->setRotary(rotaryOf(RotaryPairs::Half));
      ADD_FAILURE() << "setRotary accepted " << describe(s);
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  spec::AttentionSpec mla = spec::makeSpecPreset("mla");
  refused(mla, "latent");
  refused(spec::makeSpecPreset("tpa"), "tensor product attention");
  spec::Sizes odd;
  odd.F = 6;
  odd.H = 2;
  odd.D = 3;
  refused(makeSpec(Variant::Mhsa, odd, true, false), "odd");
  refused(thsaPresetSpec(Variant::Thsa, "heads_only", 2, 2, 1, true, false), "odd");
  refused(thsaPresetSpec(Variant::ThsaLinear, "thsa", 8, 2, 4, true, false), "thsa_linear");
  refused(spec::makeSpecPreset("dimwise"), "features");
  refused(spec::makeSpecPreset("multilinear"), "multilinear");
  // Turning rotary off is always accepted.
  AttentionModule m = buildDouble(spec::makeSpecPreset("dimwise"), 2);
  EXPECT_NO_THROW(m->setRotary(Rotary{}));
}

}  // namespace
}  // namespace tensorscope::model_core::test

namespace tensorscope::model_core::test {
namespace {

/// The turn's value, its gradient against an upstream `g0` and the derivative of <gradient, h> in
/// the upstream gradient (the backward is itself differentiable: a double-backward user needs it),
/// from applyRotary (fused on the CPU) or its ATen formulation.
std::vector<torch::Tensor> turnWithGradients(const torch::Tensor& x0, const torch::Tensor& g0, const torch::Tensor& h,
                                             int64_t block, RotaryPairs pairs, RotaryTurn turn, bool aten) {
  const auto x = x0.clone().requires_grad_(true);
  const auto g = g0.clone().requires_grad_(true);
  // A view that is not contiguous (the first tokens of a larger tensor), as the layers pass.
  const auto view = x.narrow(1, 0, x.size(1) - 1);
  const auto y = aten ? applyRotaryAten(view, block, pairs, 300.0, turn) : applyRotary(view, block, pairs, 300.0, turn);
  const auto dx = torch::autograd::grad({(y * g).sum()}, {x}, {}, /*retain_graph=*/true, /*create_graph=*/true)[0];
  const auto ddx = torch::autograd::grad({(dx * h).sum()}, {g})[0];
  return {y.detach(), dx.detach(), ddx};
}

}  // namespace

TEST(RotaryPositions, TheFusedTurnEqualsTheAtenFormulationWithItsGradients) {
  // The fused CPU turn (one pass, its backward the opposite turn) against the ATen formulation it
  // replaced, its oracle: values, first and second derivatives, both pairings and turns, several
  // blocks per token, a strided input, float64 and float32.
  torch::manual_seed(11);
  for (const auto dtype : {torch::kDouble, torch::kFloat}) {
    const double tol = dtype == torch::kDouble ? 1e-13 : 2e-6;
    const auto x = torch::randn({3, 8, 2, 12}, dtype);  // 2·12 = 24 features a token
    const auto g = torch::randn({3, 7, 2, 12}, dtype);
    const auto h = torch::randn({3, 8, 2, 12}, dtype);
    for (RotaryPairs pairs : {RotaryPairs::Half, RotaryPairs::Interleaved})
      for (RotaryTurn turn : {RotaryTurn::Forward, RotaryTurn::Backward})
        for (int64_t block : {4, 6, 12}) {
          SCOPED_TRACE(pairsName(pairs) + (turn == RotaryTurn::Forward ? " forward" : " backward") + " block " +
                       std::to_string(block) + (dtype == torch::kDouble ? " float64" : " float32"));
          const auto fused = turnWithGradients(x, g, h, block, pairs, turn, false);
          const auto aten = turnWithGradients(x, g, h, block, pairs, turn, true);
          expectClose(fused[0], aten[0], tol, "turned");
          expectClose(fused[1], aten[1], tol, "gradient");
          expectClose(fused[2], aten[2], tol, "second derivative");
          EXPECT_GT(fused[1].abs().sum().item<double>(), 1.0) << "the gradient is not empty";
        }
  }
}

TEST(RotaryPositions, TheFusedStackedTurnTurnsQueriesAndKeysAndCopiesValues) {
  torch::manual_seed(12);
  const int64_t B = 2, N = 9, H = 3, D = 6;
  for (RotaryPairs pairs : {RotaryPairs::Half, RotaryPairs::Interleaved}) {
    SCOPED_TRACE(pairsName(pairs));
    const auto r = rotaryOf(pairs);
    const auto qkv0 = torch::randn({B, N, 3, H, D}, torch::kDouble);
    const auto g = torch::randn({B, N, 3, H, D}, torch::kDouble);
    auto run = [&](bool aten) {
      const auto qkv = qkv0.clone().requires_grad_(true);
      const auto y = aten ? applyRotaryQkAten(qkv, D, r) : applyRotaryQk(qkv, D, r);
      (y * g).sum().backward();
      return std::vector<torch::Tensor>{y.detach(), qkv.grad()};
    };
    const auto fused = run(false), aten = run(true);
    EXPECT_EQ(fused[0].sizes(), qkv0.sizes());
    expectClose(fused[0], aten[0], 1e-14, "q, k turned; v");
    expectClose(fused[1], aten[1], 1e-14, "gradient");
    EXPECT_TRUE(torch::equal(fused[0].select(2, 2), qkv0.select(2, 2))) << "v is copied as it is";
    EXPECT_TRUE(torch::equal(fused[1].select(2, 2), g.select(2, 2))) << "v's gradient passes through";
    // Each token is turned on its own: 1 to 3 threads give the same bits.
    const int threads = at::get_num_threads();
    for (int t : {1, 2, 3}) {
      at::set_num_threads(t);
      EXPECT_TRUE(torch::equal(applyRotaryQk(qkv0, D, r), fused[0])) << t << " threads";
    }
    at::set_num_threads(threads);
  }
  // With the fused kernels off, the ATen formulation runs (bit for bit).
  const auto x = torch::randn({2, 5, 8}, torch::kFloat);
  setFusedAttentionEnabled(false);
  const auto off = applyRotary(x, 4, RotaryPairs::Half, 10000.0);
  setFusedAttentionEnabled(true);
  EXPECT_TRUE(torch::equal(off, applyRotaryAten(x, 4, RotaryPairs::Half, 10000.0)));
  EXPECT_THROW(applyRotary(x, 3, RotaryPairs::Half, 10000.0), std::invalid_argument);
  EXPECT_THROW(applyRotaryQk(torch::zeros({2, 5, 3, 5}), 4, rotaryOf(RotaryPairs::Half)), std::invalid_argument);
}

}  // namespace tensorscope::model_core::test
