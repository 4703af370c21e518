// The low-rank bottleneck lab and the stable-rank lab (model_core/labs.h): Theorem 1's threshold,
// the optimiser on its own, input validation, determinism; cores of a chosen stable rank; the
// THSA / MHSA maps against a float64 reference written here from the layer contract.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "analysis_test_util.h"
#include "model_core/analysis.h"
#include "model_core/labs.h"
#include "spec/core_spec.h"
#include "spec/cost_model.h"

using namespace tensorscope::model_core;
using tensorscope::model_core::test::expectInvalid;
namespace spec = tensorscope::spec;

namespace {

HostTensor matrix(int rows, int cols, std::vector<float> values) {
  return HostTensor{{rows, cols}, std::move(values)};
}

/// P = softmax over rows of A·Bᵀ with A, B ∈ R^{n×k} Gaussian (times `gain`): rank-k logits.
HostTensor rankKPattern(int n, int k, unsigned seed, double gain) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> g(0.0, 1.0);
  std::vector<double> a(n * k), b(n * k);
  for (auto& v : a) v = gain * g(rng);
  for (auto& v : b) v = gain * g(rng);
  std::vector<float> p(n * n);
  for (int i = 0; i < n; ++i) {
    std::vector<double> row(n);
    double mx = -std::numeric_limits<double>::infinity();
    for (int j = 0; j < n; ++j) {
      double s = 0;
      for (int t = 0; t < k; ++t) s += a[i * k + t] * b[j * k + t];
      row[j] = s;
      mx = std::max(mx, s);
    }
    double z = 0;
    for (auto& v : row) z += (v = std::exp(v - mx));
    for (int j = 0; j < n; ++j) p[i * n + j] = static_cast<float>(row[j] / z);
  }
  return matrix(n, n, p);
}

std::vector<int> range(int lo, int hi) {
  std::vector<int> v;
  for (int i = lo; i <= hi; ++i) v.push_back(i);
  return v;
}

void expectRowStochastic(const HostTensor& maps, int rows, int cols) {
  ASSERT_EQ(static_cast<int>(maps.values.size()) % cols, 0);
  for (std::size_t r = 0; r < maps.values.size() / cols; ++r) {
    double sum = 0;
    for (int c = 0; c < cols; ++c) {
      EXPECT_GT(maps.values[r * cols + c], 0.0f);
      sum += maps.values[r * cols + c];
    }
    EXPECT_NEAR(sum, 1.0, 1e-6) << "row " << r;
  }
  (void)rows;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Random patterns
// ---------------------------------------------------------------------------------------------

TEST(LabsRandomPattern, PositiveRowStochasticAndSeeded) {
  const HostTensor p = randomAttentionPattern(8, 7, 1.5);
  ASSERT_EQ(p.shape, (std::vector<std::int64_t>{8, 8}));
  expectRowStochastic(p, 8, 8);
  EXPECT_EQ(randomAttentionPattern(8, 7, 1.5).values, p.values);
  EXPECT_NE(randomAttentionPattern(8, 8, 1.5).values, p.values);
  // Concentration 0 is the uniform pattern; concentration sharpens rows.
  for (float v : randomAttentionPattern(5, 1, 0.0).values) EXPECT_NEAR(v, 0.2f, 1e-7f);
  const auto peak = [](const HostTensor& t) { return *std::max_element(t.values.begin(), t.values.end()); };
  EXPECT_GT(peak(randomAttentionPattern(8, 7, 4.0)), peak(p));
}

TEST(LabsRandomPattern, RejectsBadArguments) {
  expectInvalid([] { randomAttentionPattern(0, 1, 1.0); }, "randomAttentionPattern", "n must be in [1, 256]");
  expectInvalid([] { randomAttentionPattern(257, 1, 1.0); }, "n must be in [1, 256]", "257");
  expectInvalid([] { randomAttentionPattern(4, 1, -0.5); }, "concentration must be in [0, 5]");
  expectInvalid([] { randomAttentionPattern(4, 1, 5.5); }, "concentration must be in [0, 5]");
  expectInvalid([] { randomAttentionPattern(4, 1, std::nan("")); }, "concentration");
}

// ---------------------------------------------------------------------------------------------
// Low-rank bottleneck: Theorem 1
// ---------------------------------------------------------------------------------------------

// Random P: reached exactly from d_p = N - 1 (the row-centred log P has rank N - 1; the softmax
// ignores a per-query constant, the theorem's D_0), so certainly in the theorem's d_p >= N; not
// below. The mean-row KL (the optimised objective) is non-increasing in d_p by construction (each
// d_p may start from the previous solution), up to 1e-15 of rounding; the primary error (max abs
// entry) may rise by optimiser noise, allowed up to 10 % between neighbours.
TEST(LabsBottleneck, ThresholdOfTheoremOne) {
  for (const int n : {8, 12}) {
    SCOPED_TRACE("N = " + std::to_string(n));
    const HostTensor p = randomAttentionPattern(n, 100 + n, 2.0);
    const BottleneckCurve curve = fitLowRankBottleneck(p, range(1, n + 1));
    EXPECT_EQ(curve.n, n);
    EXPECT_EQ(curve.required_rank, n - 1);
    ASSERT_EQ(curve.points.size(), static_cast<std::size_t>(n + 1));
    ASSERT_EQ(curve.log_p_singular_values.size(), static_cast<std::size_t>(n));
    EXPECT_LT(curve.log_p_singular_values.back(), 1e-9);  // the centred log P is singular
    for (const auto& pt : curve.points) {
      const int d = pt.head_size;
      SCOPED_TRACE("d_p = " + std::to_string(d));
      ASSERT_EQ(pt.fitted.shape, (std::vector<std::int64_t>{n, n}));
      expectRowStochastic(pt.fitted, n, n);
      EXPECT_EQ(pt.theorem_regime, d >= n);
      if (d >= n - 1) {
        EXPECT_TRUE(pt.exact_construction);
        EXPECT_LT(pt.error, 1e-6);
        EXPECT_LT(pt.kl, 1e-12);
        EXPECT_EQ(pt.iterations, 0);
      } else {
        EXPECT_FALSE(pt.exact_construction);
        EXPECT_GT(pt.error, 1e-3);
        EXPECT_GT(pt.kl, 1e-6);
        EXPECT_GT(pt.iterations, 0);
        EXPECT_LE(pt.error, pt.initial_error);  // the refinement never makes the start worse
      }
    }
    for (int i = 1; i < n + 1; ++i) {
      EXPECT_LE(curve.points[i].kl, curve.points[i - 1].kl + 1e-15) << "d_p = " << i + 1;
      EXPECT_LE(curve.points[i].error, 1.1 * curve.points[i - 1].error) << "d_p = " << i + 1;
    }
    // The fitted map IS the target from the threshold on: compare entries directly.
    const auto& exact = curve.points[n - 1];
    for (std::size_t i = 0; i < p.values.size(); ++i) EXPECT_NEAR(exact.fitted.values[i], p.values[i], 1e-6);
    // Below the threshold the optimiser improves on the truncated SVD of the centred log P.
    const auto& low = curve.points[n / 2 - 1];
    EXPECT_LT(low.error, 0.9 * low.initial_error);
  }
}

// P = softmax of rank-k logits is reached exactly from d_p = k, and not at k - 1, with the SVD
// construction and also by the optimiser alone from a small random start (no SVD, no
// construction), which checks the fit rather than the initialisation.
TEST(LabsBottleneck, RankKLogitsReachedFromHeadSizeK) {
  const int n = 8, k = 3;
  const HostTensor p = rankKPattern(n, k, 5, 1.2);
  const BottleneckCurve svd = fitLowRankBottleneck(p, {k - 1, k, k + 1});
  EXPECT_EQ(svd.required_rank, k);
  EXPECT_GT(svd.points[0].error, 1e-3);
  EXPECT_TRUE(svd.points[1].exact_construction);
  EXPECT_LT(svd.points[1].error, 1e-6);
  EXPECT_LT(svd.points[2].error, 1e-6);

  BottleneckOptions opt;
  opt.init = BottleneckInit::Random;
  opt.seed = 3;
  opt.max_iterations = 500;
  const BottleneckCurve fit = fitLowRankBottleneck(p, {k - 1, k}, opt);
  for (const auto& pt : fit.points) EXPECT_FALSE(pt.exact_construction);
  EXPECT_GT(fit.points[0].error, 1e-3);
  EXPECT_GT(fit.points[1].initial_error, 1e-2);  // the random start is far from P
  EXPECT_GT(fit.points[1].iterations, 0);
  EXPECT_LT(fit.points[1].error, 1e-5);
  EXPECT_LT(fit.points[1].kl, 1e-10);
}

TEST(LabsBottleneck, ValidatesInput) {
  const HostTensor good = randomAttentionPattern(4, 1, 1.0);
  const char* fn = "fitLowRankBottleneck";
  expectInvalid([] { fitLowRankBottleneck(HostTensor{{2, 3}, std::vector<float>(6, 0.5f)}, {1}); }, fn, "must be square",
                "[2, 3]");
  expectInvalid([] { fitLowRankBottleneck(HostTensor{{2, 2, 2}, std::vector<float>(8, 0.5f)}, {1}); }, fn,
                "2-D matrix");
  expectInvalid([] { fitLowRankBottleneck(HostTensor{{2, 2}, std::vector<float>(3, 0.5f)}, {1}); }, fn,
                "holds 3 values");
  expectInvalid([] { fitLowRankBottleneck(matrix(2, 2, {1.0f, 0.0f, 0.5f, 0.5f}), {1}); }, fn, "entry (0, 1)",
                "must be > 0", "causal");
  expectInvalid([] { fitLowRankBottleneck(matrix(2, 2, {0.5f, 0.5f, 1.5f, -0.5f}), {1}); }, fn, "entry (1, 1)");
  expectInvalid([] { fitLowRankBottleneck(matrix(2, 2, {0.5f, std::nanf(""), 0.5f, 0.5f}), {1}); }, fn, "NaN");
  // A column-stochastic (the paper's) P is refused with a hint to transpose it.
  expectInvalid([] { fitLowRankBottleneck(matrix(2, 2, {0.2f, 0.6f, 0.8f, 0.4f}), {1}); }, fn, "row 0", "sums to 0.8",
                "transpose");
  expectInvalid([] { fitLowRankBottleneck(HostTensor{{257, 257}, std::vector<float>(257 * 257, 1.0f / 257)}, {1}); }, fn,
                "N <= 256");
  expectInvalid([&] { fitLowRankBottleneck(good, {}); }, fn, "head_sizes is empty");
  expectInvalid([&] { fitLowRankBottleneck(good, {2, 0}); }, fn, "d_p = 0 (entry 1)", "[1, 4096]");
  BottleneckOptions bad;
  bad.max_iterations = -1;
  expectInvalid([&] { fitLowRankBottleneck(good, {1}, bad); }, fn, "max_iterations");
}

TEST(LabsBottleneck, DeterministicAndInRequestedOrder) {
  const HostTensor p = randomAttentionPattern(6, 11, 2.0);
  const BottleneckCurve a = fitLowRankBottleneck(p, {3, 1, 2, 1});
  const BottleneckCurve b = fitLowRankBottleneck(p, {1, 2, 3});
  ASSERT_EQ(a.points.size(), 4u);
  EXPECT_EQ(a.points[0].head_size, 3);
  EXPECT_EQ(a.points[1].head_size, 1);
  EXPECT_EQ(a.points[3].head_size, 1);
  EXPECT_EQ(a.points[0].fitted.values, b.points[2].fitted.values);
  EXPECT_EQ(a.points[1].fitted.values, b.points[0].fitted.values);
  EXPECT_EQ(a.points[2].error, b.points[1].error);

  BottleneckOptions opt;
  opt.init = BottleneckInit::Random;
  opt.max_iterations = 5;  // stopped early, so the start shows through
  opt.seed = 1;
  const auto r1 = fitLowRankBottleneck(p, {2}, opt);
  EXPECT_EQ(fitLowRankBottleneck(p, {2}, opt).points[0].fitted.values, r1.points[0].fitted.values);
  opt.seed = 2;
  EXPECT_NE(fitLowRankBottleneck(p, {2}, opt).points[0].fitted.values, r1.points[0].fitted.values);
}

// ---------------------------------------------------------------------------------------------
// Cores of a chosen stable rank
// ---------------------------------------------------------------------------------------------

TEST(LabsStableRankCore, HitsTheTarget) {
  const int r = 8;
  for (const auto shape : {SpectrumShape::Flat, SpectrumShape::Geometric})
    for (const double target : {1.0, 1.5, 2.0, 3.7, 7.99, 8.0}) {
      SCOPED_TRACE("target " + std::to_string(target) + (shape == SpectrumShape::Flat ? " flat" : " geometric"));
      const auto c = coreWithStableRankValues(r, target, 42, shape);
      ASSERT_EQ(c.size(), 64u);
      const CoreAnalysis a = analyzeCore(c, r, r);
      EXPECT_NEAR(a.stable_rank, target, 1e-9);
      EXPECT_NEAR(a.spectral_norm, 1.0, 1e-12);
      if (target == 1.0) {
        EXPECT_EQ(a.numerical_rank, 1);
      }
      if (target == 8.0) {
        for (double s : a.singular_values) EXPECT_NEAR(s, 1.0, 1e-12);  // orthogonal
      }
      if (shape == SpectrumShape::Geometric && target > 1.0 && target < 8.0) {
        const double rho = a.singular_values[1];
        for (int i = 2; i < r; ++i) EXPECT_NEAR(a.singular_values[i], std::pow(rho, i), 1e-12);
      }
      // The float32 copy: same matrix, stable rank within float rounding.
      const HostTensor h = coreWithStableRank(r, target, 42, shape);
      ASSERT_EQ(h.shape, (std::vector<std::int64_t>{r, r}));
      for (int i = 0; i < r * r; ++i) EXPECT_EQ(h.values[i], static_cast<float>(c[i]));
      EXPECT_NEAR(stableRank(h.values, r, r), target, 1e-5 * target);
    }
  EXPECT_NEAR(stableRank(coreWithStableRankValues(1, 1.0, 0), 1, 1), 1.0, 0.0);
  EXPECT_NEAR(stableRank(coreWithStableRankValues(32, 5.25, 9), 32, 32), 5.25, 1e-9);
  EXPECT_EQ(coreWithStableRankValues(8, 3.0, 5), coreWithStableRankValues(8, 3.0, 5));
  EXPECT_NE(coreWithStableRankValues(8, 3.0, 5), coreWithStableRankValues(8, 3.0, 6));
}

TEST(LabsStableRankCore, RefusesOutOfRange) {
  expectInvalid([] { coreWithStableRankValues(8, 0.99, 0); }, "coreWithStableRank", "lies in [1, 8]", "0.99");
  expectInvalid([] { coreWithStableRankValues(8, 8.01, 0); }, "lies in [1, 8]", "8.01");
  expectInvalid([] { coreWithStableRank(8, std::nan(""), 0); }, "lies in [1, 8]");
  expectInvalid([] { coreWithStableRankValues(0, 1.0, 0); }, "r must be in [1, 1024]");
  expectInvalid([] { coreWithStableRankValues(1025, 1.0, 0); }, "r must be in [1, 1024]");
}

// ---------------------------------------------------------------------------------------------
// Stable-rank lab: THSA beside MHSA
// ---------------------------------------------------------------------------------------------

namespace {

/// softmax_m(Σ_s C[r,s]·q[n,s]·k[m,s]·scale) for one channel, straight from §3 in float64, from
/// the returned float32 input and weights. `C` null: plain MHSA over columns [c0, c0 + width).
std::vector<double> referenceMap(const StableRankLab& lab, int N, int F, const HostTensor& wq, const HostTensor& wk,
                                 const std::vector<float>* C, int R, int r, int c0, int width, double scale) {
  const auto& x = lab.input.values;
  auto proj = [&](const HostTensor& w, int n, int s) {
    double v = 0;
    for (int f = 0; f < F; ++f) v += double(x[n * F + f]) * double(w.values[s * F + f]);
    return v;
  };
  std::vector<double> out(N * N);
  for (int n = 0; n < N; ++n) {
    std::vector<double> row(N);
    double mx = -1e300;
    for (int m = 0; m < N; ++m) {
      double l = 0;
      if (C) {
        for (int s = 0; s < R; ++s) l += double((*C)[r * R + s]) * proj(wq, n, s) * proj(wk, m, s);
      } else {
        for (int s = c0; s < c0 + width; ++s) l += proj(wq, n, s) * proj(wk, m, s);
      }
      row[m] = l * scale;
      mx = std::max(mx, row[m]);
    }
    double z = 0;
    for (auto& v : row) z += (v = std::exp(v - mx));
    for (int m = 0; m < N; ++m) out[n * N + m] = row[m] / z;
  }
  return out;
}

}  // namespace

TEST(LabsStableRankLab, MapsMatchTheContractAndCostsMatchTheModel) {
  StableRankLabInput in;
  in.F = 10;
  in.H = 4;
  in.D = 3;
  in.N = 6;
  in.seed = 17;
  in.qk_gain = 4.0;  // sharper maps, so a wrong map shows
  const int R = 12;
  in.core = coreWithStableRank(R, 2.6, 3);
  const StableRankLab lab = stableRankLab(in);
  EXPECT_EQ(lab.R, R);
  EXPECT_NEAR(lab.stable_rank, 2.6, 1e-5);
  EXPECT_EQ(lab.mhsa_heads, 3);  // round(2.6)
  EXPECT_EQ(lab.mhsa_head_size, 3);
  ASSERT_EQ(lab.singular_values.size(), static_cast<std::size_t>(R));
  EXPECT_NEAR(lab.singular_values[0], 1.0, 1e-6);
  EXPECT_EQ(lab.input.shape, (std::vector<std::int64_t>{1, 6, 10}));
  EXPECT_EQ(lab.wq.shape, (std::vector<std::int64_t>{R, 10}));
  EXPECT_EQ(lab.mhsa_wq.shape, (std::vector<std::int64_t>{9, 10}));
  ASSERT_EQ(lab.thsa_maps.shape, (std::vector<std::int64_t>{R, 6, 6}));
  ASSERT_EQ(lab.mhsa_maps.shape, (std::vector<std::int64_t>{3, 6, 6}));
  expectRowStochastic(lab.thsa_maps, 6, 6);
  expectRowStochastic(lab.mhsa_maps, 6, 6);

  // Parameter counts: the cost model's, and its formulas (dense trainable core: 4FR + R²).
  EXPECT_EQ(lab.thsa_parameters, spec::parameterCount(lab.thsa_spec));
  EXPECT_EQ(lab.mhsa_parameters, spec::parameterCount(lab.mhsa_spec));
  EXPECT_EQ(lab.thsa_parameters, 4 * 10 * R + R * R);
  EXPECT_EQ(lab.mhsa_parameters, 4 * 10 * 3 * 3);
  EXPECT_EQ(lab.thsa_cost.parameters, lab.thsa_parameters);
  EXPECT_EQ(lab.thsa_spec.variant, spec::Variant::Thsa);
  EXPECT_EQ(lab.mhsa_spec.variant, spec::Variant::Mhsa);
  EXPECT_EQ(lab.mhsa_spec.sizes.H, 3);
  ASSERT_TRUE(lab.thsa_spec.core.has_value());
  EXPECT_EQ(lab.thsa_spec.core->structure, spec::CoreStructure::Dense);
  EXPECT_EQ(spec::effectiveCore(lab.thsa_spec), std::vector<double>(in.core.values.begin(), in.core.values.end()));

  // Maps against the float64 reference from the returned weights (float32 storage: 1e-5).
  double maxDeviation = 0;  // from the uniform map: proves the maps are not trivially flat
  for (int r = 0; r < R; ++r) {
    const auto ref = referenceMap(lab, 6, 10, lab.wq, lab.wk, &in.core.values, R, r, 0, 0, 1.0 / std::sqrt(double(R)));
    for (int i = 0; i < 36; ++i) {
      EXPECT_NEAR(lab.thsa_maps.values[r * 36 + i], ref[i], 1e-5) << "channel " << r << " entry " << i;
      maxDeviation = std::max(maxDeviation, std::abs(ref[i] - 1.0 / 6));
    }
  }
  EXPECT_GT(maxDeviation, 0.05);
  for (int h = 0; h < 3; ++h) {
    const auto ref = referenceMap(lab, 6, 10, lab.mhsa_wq, lab.mhsa_wk, nullptr, 0, 0, h * 3, 3, 1.0 / std::sqrt(3.0));
    for (int i = 0; i < 36; ++i) EXPECT_NEAR(lab.mhsa_maps.values[h * 36 + i], ref[i], 1e-5) << "head " << h;
  }
  // Shared weights: MHSA's are the first H'·D rows of the masters, here within THSA's R rows.
  for (int i = 0; i < 9 * 10; ++i) EXPECT_EQ(lab.mhsa_wq.values[i], lab.wq.values[i]);

  // Deterministic per seed.
  const StableRankLab again = stableRankLab(in);
  EXPECT_EQ(again.thsa_maps.values, lab.thsa_maps.values);
  EXPECT_EQ(again.mhsa_maps.values, lab.mhsa_maps.values);
  in.seed = 18;
  EXPECT_NE(stableRankLab(in).thsa_maps.values, lab.thsa_maps.values);
}

// Proposition 1 of Tuformer: with C = √H·(I_H ⊗ 1_D·1_Dᵀ) (stable rank H) THSA is MHSA(H, D):
// every one of head h's D channels shows MHSA's map h (same q/k weights).
TEST(LabsStableRankLab, MhsaPresetCoreReproducesMhsaMaps) {
  const int H = 3, D = 4, R = H * D, N = 7;
  const auto preset = spec::materializeCore(spec::makeCorePreset("mhsa", H, D), H, D, R);
  StableRankLabInput in;
  in.F = 9;
  in.H = H;
  in.D = D;
  in.N = N;
  in.seed = 4;
  in.qk_gain = 3.0;
  in.core = matrix(R, R, std::vector<float>(preset.begin(), preset.end()));
  const StableRankLab lab = stableRankLab(in);
  EXPECT_NEAR(lab.stable_rank, 3.0, 1e-9);
  ASSERT_EQ(lab.mhsa_heads, H);
  EXPECT_EQ(lab.mhsa_wq.values, lab.wq.values);
  EXPECT_EQ(lab.mhsa_wk.values, lab.wk.values);
  for (int h = 0; h < H; ++h)
    for (int c = 0; c < D; ++c)
      for (int i = 0; i < N * N; ++i)
        ASSERT_NEAR(lab.thsa_maps.values[(h * D + c) * N * N + i], lab.mhsa_maps.values[h * N * N + i], 1e-6)
            << "head " << h << " channel " << c << " entry " << i;
  // The heads differ from each other, so the equality above is not the trivial one.
  double headGap = 0;
  for (int i = 0; i < N * N; ++i) headGap = std::max(headGap, double(std::abs(lab.mhsa_maps.values[i] - lab.mhsa_maps.values[N * N + i])));
  EXPECT_GT(headGap, 0.05);
  // Parameters: the mhsa preset core is frozen in the `mhsa` preset, but the lab's dense core is
  // trainable: 4FR + R² against MHSA's 4FR.
  EXPECT_EQ(lab.mhsa_parameters, 4 * 9 * R);
  EXPECT_EQ(lab.thsa_parameters, 4 * 9 * R + R * R);
}

TEST(LabsStableRankLab, ValidatesInput) {
  StableRankLabInput in;
  in.F = 8;
  in.H = 2;
  in.D = 2;
  in.N = 4;
  in.core = coreWithStableRank(4, 2.0, 1);
  const char* fn = "stableRankLab";
  {
    auto bad = in;
    bad.core = coreWithStableRank(3, 2.0, 1);
    expectInvalid([&] { stableRankLab(bad); }, fn, "must be R x R = 4 x 4", "[3, 3]");
  }
  {
    auto bad = in;
    bad.core.values[5] = std::numeric_limits<float>::infinity();
    expectInvalid([&] { stableRankLab(bad); }, fn, "entry (1, 1)", "+inf");
  }
  {
    auto bad = in;
    std::fill(bad.core.values.begin(), bad.core.values.end(), 0.0f);
    expectInvalid([&] { stableRankLab(bad); }, fn, "all zeros");
  }
  {
    auto bad = in;
    bad.N = 0;
    expectInvalid([&] { stableRankLab(bad); }, fn, "N must be in [1, 256]");
  }
  {
    auto bad = in;
    bad.qk_gain = 0.0;
    expectInvalid([&] { stableRankLab(bad); }, fn, "qk_gain");
  }
  {
    auto bad = in;
    bad.H = 32;
    bad.D = 16;
    expectInvalid([&] { stableRankLab(bad); }, fn, "R = H*D must be in [1, 256]", "512");
  }
  {
    auto bad = in;
    bad.core.values.pop_back();
    expectInvalid([&] { stableRankLab(bad); }, fn, "holds 15 values");
  }
}
