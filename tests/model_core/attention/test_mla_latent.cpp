// MLA's absorbed-order inputs (mlaAbsorbedInputs: the fused CPU function of kernels/mla_latent.h
// with the W^UK products) against the equations written entry by entry in float64, against its
// ATen formulation (mlaAbsorbedInputsAten) with gradients for every input, finite differences, both
// layouts (the stacked projection read in place, and separate query and KV rows), strided inputs,
// outputs left out of the loss, float32, thread counts, and the errors it gives.

#include <ATen/Parallel.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "attention/fused_attention.h"
#include "attention/mla.h"
#include "reference.h"

namespace tensorscope::model_core::test {
namespace {

constexpr double kEps = 1e-6, kTheta = 10000.0;

struct Sizes {
  int64_t B = 2, N = 5, H = 3, D = 4, L = 6, r = 4;
};

struct Inputs {
  torch::Tensor q, kv, wUK, g;  // kv undefined: q holds the KV rows after the queries
};

/// Random inputs; `stacked` puts the KV rows after the queries in one tensor; `strided` makes the
/// rows a view of a wider tensor (features contiguous, rows further apart).
Inputs makeInputs(const Sizes& s, bool stacked, bool strided, std::uint64_t seed, torch::ScalarType dtype = torch::kDouble) {
  torch::manual_seed(seed);
  const auto opts = torch::TensorOptions().dtype(dtype);
  const int64_t qWidth = s.H * (s.D + s.r), kvWidth = s.L + s.r;
  const auto rows = [&](int64_t width) {
    if (!strided) return torch::randn({s.B, s.N, width}, opts);
    return torch::randn({s.B, s.N, width + 5}, opts).narrow(2, 2, width);
  };
  Inputs in;
  in.q = rows(stacked ? qWidth + kvWidth : qWidth);
  if (!stacked) in.kv = rows(kvWidth);
  in.wUK = torch::randn({s.H, s.D, s.L}, opts) * 0.5;
  in.g = 1.0 + 0.3 * torch::randn({s.L}, opts);
  return in;
}

/// The equations entry by entry: q̃[h, c] = Σ_d q_nope[h, d]·W^UK[h, d, c]; the interleaved turn of
/// pair j at position n by n·θ^(−2j/r); RMSNorm(c) = c·(mean c² + ε)^−½ ⊙ g.
MlaAbsorbedInputs fromEquations(const Inputs& in, const Sizes& s) {
  const int64_t qWidth = s.H * (s.D + s.r);
  const auto q = in.q.to(torch::kDouble).contiguous();
  const auto kv = (in.kv.defined() ? in.kv : in.q.narrow(2, qWidth, s.L + s.r)).to(torch::kDouble).contiguous();
  const auto w = in.wUK.to(torch::kDouble).contiguous();
  const auto g = in.g.to(torch::kDouble).contiguous();
  auto query = torch::zeros({s.B, s.N, s.H, s.L + s.r}, torch::kDouble);
  auto key = torch::zeros({s.B, s.N, 1, s.L + s.r}, torch::kDouble);
  auto value = torch::zeros({s.B, s.N, 1, s.L}, torch::kDouble);
  auto Q = q.accessor<double, 3>();
  auto KV = kv.accessor<double, 3>();
  auto W = w.accessor<double, 3>();
  auto G = g.accessor<double, 1>();
  auto QO = query.accessor<double, 4>();
  auto KO = key.accessor<double, 4>();
  auto VO = value.accessor<double, 4>();
  const auto turn = [&](double a, double b, int64_t n, int64_t j, double& ya, double& yb) {
    const double angle = double(n) * std::pow(kTheta, -2.0 * double(j) / double(s.r));
    ya = a * std::cos(angle) - b * std::sin(angle);
    yb = a * std::sin(angle) + b * std::cos(angle);
  };
  for (int64_t b = 0; b < s.B; ++b)
    for (int64_t n = 0; n < s.N; ++n) {
      for (int64_t h = 0; h < s.H; ++h) {
        const int64_t base = h * (s.D + s.r);
        for (int64_t c = 0; c < s.L; ++c) {
          double sum = 0;
          for (int64_t d = 0; d < s.D; ++d) sum += Q[b][n][base + d] * W[h][d][c];
          QO[b][n][h][c] = sum;
        }
        for (int64_t j = 0; j < s.r / 2; ++j)
          turn(Q[b][n][base + s.D + 2 * j], Q[b][n][base + s.D + 2 * j + 1], n, j, QO[b][n][h][s.L + 2 * j],
               QO[b][n][h][s.L + 2 * j + 1]);
      }
      double ms = 0;
      for (int64_t c = 0; c < s.L; ++c) ms += KV[b][n][c] * KV[b][n][c] / double(s.L);
      const double rs = 1.0 / std::sqrt(ms + kEps);
      for (int64_t c = 0; c < s.L; ++c) KO[b][n][0][c] = VO[b][n][0][c] = KV[b][n][c] * rs * G[c];
      for (int64_t j = 0; j < s.r / 2; ++j)
        turn(KV[b][n][s.L + 2 * j], KV[b][n][s.L + 2 * j + 1], n, j, KO[b][n][0][s.L + 2 * j],
             KO[b][n][0][s.L + 2 * j + 1]);
    }
  return {query, key, value};
}

struct Run {
  std::vector<torch::Tensor> outputs, grads;  // grads: q, kv (when separate), wUK, g
};

/// Outputs and the gradients of Σ out_i ⊙ W_i (the outputs in `used` only) for every input.
template <typename F>
Run runWithGradients(F&& f, const Inputs& base, const std::vector<bool>& used, std::uint64_t seed) {
  Inputs in;
  in.q = base.q.detach().clone().requires_grad_(true);
  if (base.kv.defined()) in.kv = base.kv.detach().clone().requires_grad_(true);
  in.wUK = base.wUK.detach().clone().requires_grad_(true);
  in.g = base.g.detach().clone().requires_grad_(true);
  const auto out = f(in);
  const std::vector<torch::Tensor> outs = {out.query, out.key, out.value};
  torch::manual_seed(seed);
  torch::Tensor loss = torch::zeros({}, base.q.options());
  for (size_t i = 0; i < outs.size(); ++i)
    if (used[i]) loss = loss + (outs[i] * torch::randn(outs[i].sizes(), torch::kDouble).to(outs[i].scalar_type())).sum();
  loss.backward();
  Run r;
  for (const auto& o : outs) r.outputs.push_back(o.detach());
  r.grads.push_back(in.q.grad());
  if (in.kv.defined()) r.grads.push_back(in.kv.grad());
  r.grads.push_back(in.wUK.grad());
  r.grads.push_back(in.g.grad());
  return r;
}

MlaAbsorbedInputs fused(const Inputs& in, const Sizes& s) {
  return mlaAbsorbedInputs(in.q, in.kv, in.wUK, in.g, s.r, kEps, kTheta);
}
MlaAbsorbedInputs aten(const Inputs& in, const Sizes& s) {
  return mlaAbsorbedInputsAten(in.q, in.kv, in.wUK, in.g, s.r, kEps, kTheta);
}

TEST(MlaAbsorbedInputs, FusedEqualsTheEquationsAndItsAtenFormulationWithGradients) {
  std::uint64_t seed = 10;
  for (int64_t r : {int64_t(4), int64_t(0)})
    for (bool stacked : {true, false})
      for (bool strided : {false, true}) {
        Sizes s;
        s.r = r;
        const std::string what = std::string(stacked ? "stacked" : "separate") + (strided ? " strided" : "") +
                                 " r=" + std::to_string(r);
        SCOPED_TRACE(what);
        const auto in = makeInputs(s, stacked, strided, seed++);
        const auto eq = fromEquations(in, s);
        const auto a = runWithGradients([&](const Inputs& i) { return fused(i, s); }, in, {true, true, true}, seed);
        const auto b = runWithGradients([&](const Inputs& i) { return aten(i, s); }, in, {true, true, true}, seed);
        const std::vector<torch::Tensor> want = {eq.query, eq.key, eq.value};
        for (size_t i = 0; i < 3; ++i) {
          expectClose(a.outputs[i], want[i], 1e-12, what + " output " + std::to_string(i) + " (equations)");
          expectClose(b.outputs[i], want[i], 1e-12, what + " ATen output " + std::to_string(i) + " (equations)");
        }
        ASSERT_EQ(a.grads.size(), b.grads.size());
        for (size_t i = 0; i < a.grads.size(); ++i)
          expectClose(a.grads[i], b.grads[i], 1e-11, what + " gradient " + std::to_string(i));
        ++seed;
      }
}

TEST(MlaAbsorbedInputs, OutputsLeftOutOfTheLossGiveTheSameGradients) {
  // The attention kernel may hand back no gradient for an output (undefined): those are zeros.
  Sizes s;
  std::uint64_t seed = 40;
  for (const std::vector<bool>& used : {std::vector<bool>{false, true, false}, std::vector<bool>{true, false, false},
                                        std::vector<bool>{false, false, true}})
    for (bool stacked : {true, false}) {
      const std::string what = std::string("used ") + (used[0] ? "q" : "-") + (used[1] ? "k" : "-") +
                               (used[2] ? "v" : "-") + (stacked ? " stacked" : " separate");
      SCOPED_TRACE(what);
      const auto in = makeInputs(s, stacked, false, seed++);
      const auto a = runWithGradients([&](const Inputs& i) { return fused(i, s); }, in, used, seed);
      const auto b = runWithGradients([&](const Inputs& i) { return aten(i, s); }, in, used, seed);
      for (size_t i = 0; i < a.grads.size(); ++i) {
        ASSERT_TRUE(a.grads[i].defined()) << what << " gradient " << i;
        const auto want = b.grads[i].defined() ? b.grads[i] : torch::zeros_like(a.grads[i]);
        expectClose(a.grads[i], want, 1e-11, what + " gradient " + std::to_string(i));
      }
    }
}

TEST(MlaAbsorbedInputs, GradientsMatchFiniteDifferences) {
  Sizes s;
  const double h = 1e-6;
  for (bool stacked : {true, false}) {
    SCOPED_TRACE(stacked ? "stacked" : "separate");
    const auto in = makeInputs(s, stacked, true, 70);
    const auto run = runWithGradients([&](const Inputs& i) { return fused(i, s); }, in, {true, true, true}, 71);
    // The same loss without autograd, at a perturbed input.
    const auto loss = [&](const Inputs& p) {
      torch::NoGradGuard noGrad;
      const auto out = fused(p, s);
      torch::manual_seed(71);
      double sum = 0;
      for (const auto& o : {out.query, out.key, out.value})
        sum += (o * torch::randn(o.sizes(), torch::kDouble)).sum().item<double>();
      return sum;
    };
    std::vector<torch::Tensor*> targets;
    Inputs p = {in.q.detach().clone(), in.kv.defined() ? in.kv.detach().clone() : torch::Tensor(),
                in.wUK.detach().clone(), in.g.detach().clone()};
    targets.push_back(&p.q);
    if (p.kv.defined()) targets.push_back(&p.kv);
    targets.push_back(&p.wUK);
    targets.push_back(&p.g);
    ASSERT_EQ(targets.size(), run.grads.size());
    for (size_t t = 0; t < targets.size(); ++t) {
      auto flat = targets[t]->view({-1});
      const auto grad = run.grads[t].reshape({-1});
      for (int64_t i : {int64_t(0), flat.numel() / 3, flat.numel() / 2 + 1, flat.numel() - 1}) {
        const double numeric = centralDifference(flat, i, h, [&] { return loss(p); });
        EXPECT_NEAR(grad[i].item<double>(), numeric, 1e-6 * (1 + std::abs(numeric))) << "input " << t << " [" << i << "]";
      }
    }
  }
}

TEST(MlaAbsorbedInputs, Float32MatchesFloat64) {
  Sizes s;
  s.B = 3, s.N = 70, s.H = 4, s.D = 32, s.L = 64, s.r = 16;  // the benchmark's proportions, past a 64-token block
  const auto in64 = makeInputs(s, true, false, 90);
  const Inputs in32 = {in64.q.to(torch::kFloat), torch::Tensor(), in64.wUK.to(torch::kFloat), in64.g.to(torch::kFloat)};
  const auto a = runWithGradients([&](const Inputs& i) { return fused(i, s); }, in32, {true, true, true}, 91);
  const auto b = runWithGradients([&](const Inputs& i) { return fused(i, s); }, in64, {true, true, true}, 91);
  for (size_t i = 0; i < 3; ++i) expectClose(a.outputs[i].to(torch::kDouble), b.outputs[i], 2e-5, "output " + std::to_string(i));
  // Relative to the gradients' size: ∂g sums over 210 tokens and ∂W^UK over as many products.
  for (size_t i = 0; i < a.grads.size(); ++i) {
    const double scale = b.grads[i].abs().max().item<double>();
    expectClose(a.grads[i].to(torch::kDouble) / scale, b.grads[i] / scale, 2e-5, "gradient " + std::to_string(i));
  }
}

TEST(MlaAbsorbedInputs, ResultsDoNotDependOnTheThreadCount) {
  Sizes s;
  s.B = 4, s.N = 50;  // 200 tokens: several 64-token blocks for ∂g's partial sums
  const auto in = makeInputs(s, true, false, 110);
  const int before = at::get_num_threads();
  at::set_num_threads(1);
  const auto one = runWithGradients([&](const Inputs& i) { return fused(i, s); }, in, {true, true, true}, 111);
  at::set_num_threads(2);
  const auto two = runWithGradients([&](const Inputs& i) { return fused(i, s); }, in, {true, true, true}, 111);
  at::set_num_threads(before);
  for (size_t i = 0; i < 3; ++i) EXPECT_TRUE(torch::equal(one.outputs[i], two.outputs[i])) << "output " << i;
  for (size_t i = 0; i < one.grads.size(); ++i) EXPECT_TRUE(torch::equal(one.grads[i], two.grads[i])) << "gradient " << i;
}

TEST(MlaAbsorbedInputs, FusedKernelsOffTakesTheAtenFormulation) {
  Sizes s;
  const auto in = makeInputs(s, true, false, 130);
  setFusedAttentionEnabled(false);
  const auto off = fused(in, s);
  setFusedAttentionEnabled(true);
  const auto want = aten(in, s);
  expectClose(off.key, want.key, 0.0, "key");
}

TEST(MlaAbsorbedInputs, RejectsInconsistentShapesWithAMessage) {
  Sizes s;
  const auto in = makeInputs(s, true, false, 150);
  const auto message = [&](const std::function<void()>& f) {
    try {
      f();
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  EXPECT_NE(message([&] { fused({in.q.narrow(2, 0, 20), {}, in.wUK, in.g}, s); }).find("the query rows have 20 features"),
            std::string::npos);
  EXPECT_NE(message([&] { mlaAbsorbedInputs(in.q, {}, in.wUK, in.g, 3, kEps, kTheta); }).find("even"), std::string::npos);
  const auto separate = makeInputs(s, false, false, 151);
  EXPECT_NE(message([&] { fused({separate.q, separate.kv.narrow(2, 0, 7), separate.wUK, separate.g}, s); })
                .find("kv must be [B, N, L + r]"),
            std::string::npos);
}

}  // namespace
}  // namespace tensorscope::model_core::test
