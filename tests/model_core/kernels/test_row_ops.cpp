// The vectorised row operations of the fused kernels (model_core/src/kernels/row_ops.h), every
// instruction-set build this CPU runs (SSE2 always; AVX2 and AVX-512 where present), against
// float64 formulas written here: the polynomial exp over its whole range, softmax rows and their
// gradients, the φ = elu + 1 passes of linear THSA; lengths that are not multiples of any vector
// width (the scalar tails). Torch-free: this runs in the sanitizer build too.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "kernels/row_ops.h"

using namespace tensorscope::model_core::kernels;

namespace {

std::vector<const char*> buildsHere() {
  std::vector<const char*> out;
  for (const char* isa : {"sse2", "avx2", "avx512"})
    if (forceRowOpsIsa(isa)) out.push_back(isa);
  return out;
}

/// Restores the build chosen at start-up when a test ends.
struct IsaGuard {
  std::string original = rowOpsIsa();
  ~IsaGuard() { forceRowOpsIsa(original.c_str()); }
};

std::vector<float> randomRow(std::mt19937& rng, int64_t n, float scale) {
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& x : v) x = d(rng);
  return v;
}

double phi(double u) { return u > 0 ? u + 1 : std::exp(u); }
double phiPrime(double u) { return u > 0 ? 1.0 : std::exp(u); }

}  // namespace

TEST(RowOps, EveryBuildHereIsChosenAndSse2AlwaysRuns) {
  IsaGuard guard;
  const auto builds = buildsHere();
  ASSERT_FALSE(builds.empty());
  EXPECT_STREQ(builds.front(), "sse2");
  EXPECT_FALSE(forceRowOpsIsa("no-such-isa"));
  for (const char* isa : builds) {
    ASSERT_TRUE(forceRowOpsIsa(isa));
    EXPECT_STREQ(rowOpsIsa(), isa);
  }
}

TEST(RowOps, ExpIsAccurateOverItsRange) {
  IsaGuard guard;
  for (const char* isa : buildsHere()) {
    forceRowOpsIsa(isa);
    // expWrite with t = 1, c = 0 is the bare exp; a dense sweep of [-87, 88].
    std::vector<float> x;
    for (double a = -87.0; a <= 88.0; a += 0.01) x.push_back(float(a));
    std::vector<float> e(x.size());
    rowOpsFloat().expWrite(x.data(), int64_t(x.size()), 1.0f, 0.0f, e.data());
    double worst = 0;
    for (size_t i = 0; i < x.size(); ++i) worst = std::max(worst, std::abs(e[i] - std::exp(double(x[i]))) / std::exp(double(x[i])));
    EXPECT_LT(worst, 2e-7) << isa;
  }
}

TEST(RowOps, SoftmaxRowsAndTheirGradientsMatchFloat64) {
  IsaGuard guard;
  std::mt19937 rng(5);
  for (const char* isa : buildsHere()) {
    forceRowOpsIsa(isa);
    const auto& ops = rowOpsFloat();
    for (int64_t n : {1, 3, 7, 16, 17, 31, 64, 129}) {
      SCOPED_TRACE(std::string(isa) + " n=" + std::to_string(n));
      const auto x = randomRow(rng, n, 3.0f), v = randomRow(rng, n, 1.0f);
      const float t = -0.7f;  // a negative temperature: the row's largest logit comes from its smallest x
      float mn, mx;
      ops.minMax(x.data(), n, &mn, &mx);
      double rmn = x[0], rmx = x[0];
      for (float xi : x) rmn = std::min<double>(rmn, xi), rmx = std::max<double>(rmx, xi);
      EXPECT_EQ(mn, rmn);
      EXPECT_EQ(mx, rmx);
      const float shift = t * mn;
      float sum, dot;
      ops.expSumDot(x.data(), v.data(), n, t, shift, &sum, &dot);
      double rs = 0, rd = 0;
      for (int64_t i = 0; i < n; ++i) rs += std::exp(double(t) * x[i] - shift), rd += std::exp(double(t) * x[i] - shift) * v[i];
      EXPECT_NEAR(sum, rs, 1e-6 * rs);
      EXPECT_NEAR(dot, rd, 1e-6 * (std::abs(rd) + rs));
      // The backward of one softmax column: p = e^(t·x − lse), dv += g·p, dl = g·p·(v − o), dx = t·dl.
      const double lse = shift + std::log(rs), o = rd / rs, g = 0.8;
      std::vector<float> dv(static_cast<size_t>(n), 0.5f), dx(static_cast<size_t>(n), 0.25f);
      const float acc = ops.softmaxColumnBackward(x.data(), v.data(), n, t, float(lse), float(g), float(o), dv.data(),
                                                  dx.data(), true);
      double racc = 0;
      for (int64_t i = 0; i < n; ++i) {
        const double p = std::exp(double(t) * x[i] - lse), dl = g * p * (v[i] - o);
        racc += dl * x[i];
        EXPECT_NEAR(dv[i], 0.5 + g * p, 2e-6);
        EXPECT_NEAR(dx[i], 0.25 + t * dl, 2e-6);
      }
      EXPECT_NEAR(acc, racc, 1e-5 * (1 + std::abs(racc)));
      // softmaxRowBackward: dx = t·p·(dp − δ).
      std::vector<float> p(static_cast<size_t>(n)), dp = randomRow(rng, n, 1.0f), out(static_cast<size_t>(n));
      ops.expWrite(x.data(), n, 1.0f, mx, p.data());
      ops.softmaxRowBackward(p.data(), dp.data(), n, 1.5f, 0.3f, out.data());
      for (int64_t i = 0; i < n; ++i) EXPECT_NEAR(out[i], 1.5 * p[i] * (dp[i] - 0.3), 1e-6);
      // axpy, dot, mul3.
      std::vector<float> y(static_cast<size_t>(n), 1.0f);
      ops.axpy(n, 2.0f, v.data(), y.data());
      double rdot = 0;
      for (int64_t i = 0; i < n; ++i) {
        EXPECT_NEAR(y[i], 1.0 + 2.0 * v[i], 1e-6);
        rdot += double(x[i]) * v[i];
      }
      EXPECT_NEAR(ops.dot(n, x.data(), v.data()), rdot, 1e-5 * (1 + std::abs(rdot)));
      ops.mul3(n, 0.5f, x.data(), v.data(), y.data(), false);
      for (int64_t i = 0; i < n; ++i) EXPECT_FLOAT_EQ(y[i], 0.5f * x[i] * v[i]);
    }
  }
}

TEST(RowOps, PhiPassesOfLinearThsaMatchFloat64) {
  IsaGuard guard;
  std::mt19937 rng(9);
  for (const char* isa : buildsHere()) {
    forceRowOpsIsa(isa);
    const auto& ops = rowOpsFloat();
    for (int64_t n : {1, 5, 16, 23, 128}) {
      SCOPED_TRACE(std::string(isa) + " n=" + std::to_string(n));
      const auto len = static_cast<size_t>(n);
      // φ of a row, and the scaling by φ'; the exp below -87 is clamped to e^-87.
      auto x = randomRow(rng, n, 3.0f);
      x[0] = -200.0f;
      std::vector<float> f(len), y(len, 2.0f);
      ops.phiRow(x.data(), n, f.data());
      ops.phiPrimeScale(x.data(), n, y.data());
      for (int64_t i = 0; i < n; ++i) {
        const double xc = std::max(double(x[i]), -87.0);
        EXPECT_NEAR(f[i], phi(xc), 2e-7 * phi(xc));
        EXPECT_NEAR(y[i], 2.0 * phiPrime(xc), 4e-7 * phiPrime(xc));
      }
      // Backward of 1-4 rows at once, plain and causal (row arrays with stride n).
      for (int64_t rows = 1; rows <= 4; ++rows) {
        SCOPED_TRACE("rows=" + std::to_string(rows));
        const auto c = randomRow(rng, rows * n, 1.0f), s = randomRow(rng, rows * n, 1.0f),
                   q = randomRow(rng, n, 1.5f), z = randomRow(rng, n, 1.0f), k = randomRow(rng, n, 1.0f);
        const float a[4] = {0.7f, -0.2f, 1.1f, 0.4f}, b[4] = {-0.4f, 0.9f, 0.3f, -1.2f}, w[4] = {1.3f, -0.6f, 0.2f, 2.0f};
        const auto area = static_cast<size_t>(rows * n);
        std::vector<float> dq(len, 0.1f), dc(area, 0.2f), ds(area, 0.3f), dz(len, 0.4f), dk(len, 0.5f);
        auto dq2 = dq, dc2 = dc, ds2 = ds, dz2 = dz;
        auto s1 = s, s2 = s;  // the causal pass rewinds its state rows; the plain one leaves them
        float sums[4];
        ops.phiBackwardRows(rows, c.data(), q.data(), s1.data(), z.data(), n, a, b, dq.data(), dc.data(), ds.data(),
                            dz.data(), nullptr, nullptr, nullptr, nullptr);
        ops.phiBackwardRows(rows, c.data(), q.data(), s2.data(), z.data(), n, a, b, dq2.data(), dc2.data(), ds2.data(),
                            dz2.data(), k.data(), w, dk.data(), sums);
        EXPECT_EQ(s1, s);
        std::vector<double> rdq(len, 0.1), rdz(len, 0.4), rdk(len, 0.5);
        for (int64_t r = 0; r < rows; ++r) {
          double rsum = 0;
          for (int64_t i = 0; i < n; ++i) {
            const int64_t at = r * n + i;
            const double u = double(c[at]) * q[i], du = (double(s[at]) * a[r] + double(z[i]) * b[r]) * phiPrime(u);
            rdq[i] += du * c[at];
            rdz[i] += phi(u) * b[r];
            EXPECT_NEAR(dc[at], 0.2 + du * q[i], 1e-5);
            EXPECT_NEAR(ds[at], 0.3 + phi(u) * a[r], 1e-5);
            EXPECT_EQ(dc2[at], dc[at]);
            EXPECT_EQ(ds2[at], ds[at]);
            EXPECT_NEAR(s2[at], double(s[at]) - double(k[i]) * w[r], 1e-6 * (1 + std::abs(s[at])));
            rsum += (0.3 + phi(u) * a[r]) * k[i];
            rdk[i] += (0.3 + phi(u) * a[r]) * w[r];
          }
          EXPECT_NEAR(sums[r], rsum, 1e-5 * (1 + std::abs(rsum)));
        }
        for (int64_t i = 0; i < n; ++i) {
          EXPECT_NEAR(dq[i], rdq[i], 1e-5 * (1 + std::abs(rdq[i])));
          EXPECT_NEAR(dz[i], rdz[i], 1e-5 * (1 + std::abs(rdz[i])));
          EXPECT_NEAR(dk[i], rdk[i], 1e-5 * (1 + std::abs(rdk[i])));
          EXPECT_EQ(dq2[i], dq[i]);
          EXPECT_EQ(dz2[i], dz[i]);
        }
      }
    }
    // Panels across channels: widths of 1 to 5 vectors of every build (16, 48, 80 channels), R
    // not a multiple of any width, padded row strides; the causal form updates the state first.
    for (int64_t width : {16, 48, 80}) {
      for (int64_t R : {1, 7, 37}) {
        SCOPED_TRACE(std::string(isa) + " width=" + std::to_string(width) + " R=" + std::to_string(R));
        const int64_t ldc = width + 16, lds = width + 32;
        const auto ct = randomRow(rng, R * ldc, 1.0f), q = randomRow(rng, R, 1.5f), z = randomRow(rng, R, 1.0f),
                   k = randomRow(rng, R, 1.0f), v = randomRow(rng, width, 1.0f);
        const auto S0 = randomRow(rng, R * lds, 1.0f);
        auto S = S0, S2 = S0;
        std::vector<float> num(static_cast<size_t>(width)), den(num.size()), num2(num.size()), den2(num.size());
        ops.phiPanel(ct.data(), ldc, S.data(), lds, q.data(), z.data(), R, width, nullptr, nullptr, num.data(),
                     den.data());
        ops.phiPanel(ct.data(), ldc, S2.data(), lds, q.data(), z.data(), R, width, k.data(), v.data(), num2.data(),
                     den2.data());
        EXPECT_EQ(S, S0);
        for (int64_t j = 0; j < width; ++j) {
          double rn = 0, rd = 0, rn2 = 0;
          for (int64_t s = 0; s < R; ++s) {
            const double f = phi(double(ct[s * ldc + j]) * q[s]), updated = double(S0[s * lds + j]) + double(k[s]) * v[j];
            rn += f * S0[s * lds + j];
            rd += f * z[s];
            rn2 += f * updated;
            EXPECT_NEAR(S2[s * lds + j], updated, 1e-6 * (1 + std::abs(updated)));  // FMA rounds once
          }
          EXPECT_NEAR(num[j], rn, 1e-5 * (1 + std::abs(rn)));
          EXPECT_NEAR(den[j], rd, 1e-5 * (1 + std::abs(rd)));
          EXPECT_NEAR(num2[j], rn2, 1e-5 * (1 + std::abs(rn2)));
          EXPECT_EQ(den2[j], den[j]);
        }
        for (int64_t j = width; j < lds; ++j)  // columns beyond the panel are never touched
          for (int64_t s = 0; s < R; ++s) EXPECT_EQ(S2[s * lds + j], S0[s * lds + j]);
      }
    }
  }
}

// The hot passes evaluate φ in base 2 (t = u·log2 e, a degree-6 polynomial of 2^f, f = t − round t):
// every value of φ and φ' they use, swept over u from −110 to 20 (every vector lane and the scalar
// tail), is within 2.5e-7 of the float64 value relative, plus the rounding the argument u·log2 e
// carries (about 2·|u|·2^-24 relative in e^u). Below u = −87 (2^-126) e^u goes to zero with
// AVX-512 (vscalefps) and stays at 2^-126/ln2·2^f, under 2e-38, in the other builds.
TEST(RowOps, HotPhiPassesAreAccurateToTheirArgumentsRounding) {
  IsaGuard guard;
  auto bound = [](double u, double value) {
    return (2.5e-7 + 2.0 * std::abs(u) * 0x1p-24) * value + (u < -87.0 ? 2e-38 : 1e-44);
  };
  for (const char* isa : buildsHere()) {
    forceRowOpsIsa(isa);
    SCOPED_TRACE(isa);
    const auto& ops = rowOpsFloat();
    constexpr int64_t width = 48, steps = 8000;  // three vectors of every build
    for (int64_t start = 0; start < steps; start += width) {
      // Forward: one state row of ones and z = 1 give num_j = den_j = φ(c_j·q).
      std::vector<float> ct(width), S(width, 1.0f), num(width), den(width);
      const float q = 1.0f, z = 1.0f;
      for (int64_t j = 0; j < width; ++j) ct[size_t(j)] = float(-110.0 + 130.0 * double(start + j) / steps);
      ops.phiPanel(ct.data(), width, S.data(), width, &q, &z, 1, width, nullptr, nullptr, num.data(), den.data());
      for (int64_t j = 0; j < width; ++j) {
        const double u = ct[size_t(j)];
        ASSERT_NEAR(num[size_t(j)], phi(u), bound(u, phi(u))) << "u = " << u;
        ASSERT_EQ(den[size_t(j)], num[size_t(j)]);
      }
      if (start == 0) {  // a NaN argument gives NaN, never a finite φ (the exp must not hide it)
        const float nan = std::numeric_limits<float>::quiet_NaN();
        std::vector<float> nanNum(width), nanDen(width);
        ops.phiPanel(ct.data(), width, S.data(), width, &nan, &z, 1, width, nullptr, nullptr, nanNum.data(), nanDen.data());
        for (int64_t j = 0; j < width; ++j) ASSERT_TRUE(std::isnan(nanNum[size_t(j)]) && std::isnan(nanDen[size_t(j)]));
        std::vector<float> x(width, nan), f(width);
        ops.phiRow(x.data(), width, f.data());
        for (float v : f) ASSERT_TRUE(std::isnan(v));
      }
      // Backward (row length 23: vectors and a tail): with s = 1, a = 1, b = 0 and q = 1,
      // dc = φ'(u) and ds = φ(u).
      constexpr int64_t n = 23;
      for (int64_t i0 = 0; i0 < width; i0 += n) {
        const int64_t len = std::min(n, width - i0);
        std::vector<float> qs(size_t(len), 1.0f), s1(size_t(len), 1.0f), zs(size_t(len), 0.0f), dq(size_t(len), 0.0f),
            dc(size_t(len), 0.0f), ds(size_t(len), 0.0f), dz(size_t(len), 0.0f);
        const float a = 1.0f, b = 0.0f;
        ops.phiBackwardRows(1, ct.data() + i0, qs.data(), s1.data(), zs.data(), len, &a, &b, dq.data(), dc.data(),
                            ds.data(), dz.data(), nullptr, nullptr, nullptr, nullptr);
        for (int64_t i = 0; i < len; ++i) {
          const double u = ct[size_t(i0 + i)];
          ASSERT_NEAR(dc[size_t(i)], phiPrime(u), bound(u, phiPrime(u))) << "u = " << u;
          ASSERT_NEAR(ds[size_t(i)], phi(u), bound(u, phi(u))) << "u = " << u;
        }
      }
    }
  }
}
