// The vectorised row operations of the fused kernels (model_core/src/kernels/row_ops.h), every
// instruction-set build this CPU runs (SSE2 always; AVX2 and AVX-512 where present), against
// float64 formulas written here: the polynomial exp over its whole range, softmax rows and their
// gradients, the φ = elu + 1 passes of linear THSA; lengths that are not multiples of any vector
// width (the scalar tails). Torch-free: this runs in the sanitizer build too.
#include <gtest/gtest.h>

#include <iostream>

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

namespace {

/// The arrays of one PhiBackwardBlock call, random, with padded strides.
template <typename T>
struct BlockCase {
  int64_t rows, len, R;
  bool causal;
  std::vector<T> c, s, q, z, a, b, k, w, dq, dz, dk, dc, ds, sums;
  int64_t ldq, ldab, ldw, lddq, lddk, ldsums;
  BlockCase(std::mt19937& rng, int64_t rows_, int64_t len_, int64_t R_, bool causal_)
      : rows(rows_), len(len_), R(R_), causal(causal_), ldq(R_ + 3), ldab(rows_ + 2), ldw(rows_ + 1), lddq(R_ + 5),
        lddk(R_ + 2), ldsums(rows_ + 3) {
    auto fill = [&](int64_t n, float scale) {
      const auto v = randomRow(rng, n, scale);
      return std::vector<T>(v.begin(), v.end());
    };
    c = fill(rows * R, 1.0f), s = fill(rows * R, 1.0f), q = fill(len * ldq, 1.5f);
    z = fill(causal ? len * R : R, 1.0f), a = fill(len * ldab, 0.7f), b = fill(len * ldab, 0.7f);
    k = fill(len * R, 1.0f), w = fill(len * ldw, 1.0f);
    dq = fill(len * lddq, 0.3f), dz = fill(causal ? len * R : R, 0.3f), dk = fill(len * lddk, 0.3f);
    dc = fill(rows * R, 0.3f), ds = fill(rows * R, 0.3f), sums = fill(len * ldsums, 0.3f);
  }
  /// The same case in another precision (the reference's float64 copy).
  template <typename U>
  explicit BlockCase(const BlockCase<U>& o)
      : rows(o.rows), len(o.len), R(o.R), causal(o.causal), ldq(o.ldq), ldab(o.ldab), ldw(o.ldw), lddq(o.lddq),
        lddk(o.lddk), ldsums(o.ldsums) {
    auto d = [](const std::vector<U>& v) { return std::vector<T>(v.begin(), v.end()); };
    c = d(o.c), s = d(o.s), q = d(o.q), z = d(o.z), a = d(o.a), b = d(o.b), k = d(o.k), w = d(o.w);
    dq = d(o.dq), dz = d(o.dz), dk = d(o.dk), dc = d(o.dc), ds = d(o.ds), sums = d(o.sums);
  }
  PhiBackwardBlock<T> args() {
    PhiBackwardBlock<T> p;
    p.rows = rows, p.len = len, p.R = R, p.c = c.data(), p.s = s.data(), p.q = q.data(), p.ldq = ldq;
    p.z = z.data(), p.a = a.data(), p.b = b.data(), p.ldab = ldab;
    p.dq = dq.data(), p.lddq = lddq, p.dz = dz.data(), p.dc = dc.data(), p.ds = ds.data();
    if (causal) {
      p.k = k.data(), p.w = w.data(), p.ldw = ldw, p.dk = dk.data(), p.lddk = lddk;
      p.sums = sums.data(), p.ldsums = ldsums;
    }
    return p;
  }
};

/// What a block computes, from its definition with every suffix written out as a sum (no running
/// recurrences): S_j = S_end − Σ_{j' > j} w_j',r·k_j' (causal), ∂S̄_j = ds + Σ_{j' ≥ j} a_j',r·φ(u_j').
template <typename T>
BlockCase<double> blockReference(const BlockCase<T>& in) {
  BlockCase<double> out(in);
  const int64_t R = in.R;
  auto u = [&](int64_t j, int64_t r, int64_t i) { return out.c[size_t(r * R + i)] * out.q[size_t(j * in.ldq + i)]; };
  auto A = [&](int64_t j, int64_t r) { return out.a[size_t(j * in.ldab + r)]; };
  auto Bv = [&](int64_t j, int64_t r) { return out.b[size_t(j * in.ldab + r)]; };
  auto W = [&](int64_t j, int64_t r) { return out.w[size_t(j * in.ldw + r)]; };
  const std::vector<double> ds0 = out.ds;
  for (int64_t j = 0; j < in.len; ++j)
    for (int64_t r = 0; r < in.rows; ++r) {
      double sum = 0;
      for (int64_t i = 0; i < R; ++i) {
        double S = out.s[size_t(r * R + i)], dSbar = ds0[size_t(r * R + i)];
        if (in.causal)
          for (int64_t jj = j + 1; jj < in.len; ++jj) S -= W(jj, r) * out.k[size_t(jj * R + i)];
        for (int64_t jj = j; jj < in.len; ++jj) dSbar += A(jj, r) * phi(u(jj, r, i));
        const double z = out.z[size_t((in.causal ? j * R : 0) + i)];
        const double du = (A(j, r) * S + Bv(j, r) * z) * phiPrime(u(j, r, i));
        out.dq[size_t(j * in.lddq + i)] += du * out.c[size_t(r * R + i)];
        out.dc[size_t(r * R + i)] += du * out.q[size_t(j * in.ldq + i)];
        out.dz[size_t((in.causal ? j * R : 0) + i)] += Bv(j, r) * phi(u(j, r, i));
        if (j == 0) out.ds[size_t(r * R + i)] = dSbar;
        if (in.causal) {
          sum += dSbar * out.k[size_t(j * R + i)];
          out.dk[size_t(j * in.lddk + i)] += W(j, r) * dSbar;
        }
      }
      if (in.causal) out.sums[size_t(j * in.ldsums + r)] = sum;
    }
  return out;
}

template <typename T>
void expectBlockNear(const BlockCase<T>& got, const BlockCase<double>& want, double tol) {
  auto near = [&](const std::vector<T>& g, const std::vector<double>& w, const char* what) {
    ASSERT_EQ(g.size(), w.size());
    double scale = 1;
    for (double x : w) scale = std::max(scale, std::abs(x));
    for (size_t i = 0; i < g.size(); ++i) ASSERT_NEAR(double(g[i]), w[i], tol * scale) << what << "[" << i << "]";
  };
  near(got.dq, want.dq, "dq");
  near(got.dz, want.dz, "dz");
  near(got.dk, want.dk, "dk");
  near(got.dc, want.dc, "dc");
  near(got.ds, want.ds, "ds");
  near(got.sums, want.sums, "sums");
  EXPECT_EQ(std::vector<double>(got.s.begin(), got.s.end()), want.s) << "the state is read, never written";
}

}  // namespace

// The backward block of linear THSA, full and causal, 1-4 channels over 1, 7 and the most
// positions, R not a multiple of any vector width and padded strides, every build here and the
// float64 operations, against its definition with the suffix sums written out.
TEST(RowOps, PhiBackwardBlockMatchesItsDefinition) {
  IsaGuard guard;
  std::mt19937 rng(17);
  for (bool causal : {false, true})
    for (int64_t rows = 1; rows <= kPhiBlockMaxRows; ++rows)
      for (int64_t len : {int64_t(1), int64_t(7), kPhiBlockMaxLen})
        for (int64_t R : {1, 5, 16, 23, 40}) {
          SCOPED_TRACE((causal ? "causal" : "full") + std::string(" rows=") + std::to_string(rows) +
                       " len=" + std::to_string(len) + " R=" + std::to_string(R));
          for (const char* isa : buildsHere()) {
            SCOPED_TRACE(isa);
            forceRowOpsIsa(isa);
            BlockCase<float> f(rng, rows, len, R, causal);
            const auto want = blockReference(f);
            rowOpsFloat().phiBackwardBlock(f.args());
            expectBlockNear(f, want, 2e-5);
          }
          BlockCase<double> d(rng, rows, len, R, causal);
          const auto want = blockReference(d);
          rowOpsDouble().phiBackwardBlock(d.args());
          expectBlockNear(d, want, 1e-12);
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
      // Backward (rows of 23 values: vectors and a tail): with s = 1, a = 1, b = 0, z = 0 and q = 1,
      // dc = φ'(u) and ds = φ(u).
      constexpr int64_t n = 23;
      for (int64_t i0 = 0; i0 < width; i0 += n) {
        const int64_t len = std::min(n, width - i0);
        std::vector<float> ones(size_t(len), 1.0f), zeros(size_t(len), 0.0f), dq(size_t(len), 0.0f),
            dz(size_t(len), 0.0f), dc(size_t(len), 0.0f), ds(size_t(len), 0.0f);
        const float a = 1.0f, b = 0.0f;
        PhiBackwardBlock<float> p;
        p.rows = 1, p.len = 1, p.R = len, p.c = ct.data() + i0, p.s = ones.data(), p.q = ones.data();
        p.z = zeros.data(), p.a = &a, p.b = &b, p.dq = dq.data(), p.dz = dz.data(), p.dc = dc.data(), p.ds = ds.data();
        ops.phiBackwardBlock(p);
        for (int64_t i = 0; i < len; ++i) {
          const double u = ct[size_t(i0 + i)];
          ASSERT_NEAR(dc[size_t(i)], phiPrime(u), bound(u, phiPrime(u))) << "u = " << u;
          ASSERT_NEAR(ds[size_t(i)], phi(u), bound(u, phi(u))) << "u = " << u;
        }
      }
    }
  }
}

namespace {

/// max |a − b| relative to max(max |b|, 1).
double maxDiff(const std::vector<float>& a, const std::vector<double>& b) {
  double m = 0, scale = 0;
  for (size_t i = 0; i < a.size(); ++i) m = std::max(m, std::abs(a[i] - b[i])), scale = std::max(scale, std::abs(b[i]));
  return m / std::max(scale, 1.0);
}

}  // namespace

TEST(RowOps, DimwiseRowsMatchTheirFloat64Versions) {
  // The forward and the recompute rows of the causal dimension-wise kernel (kernels/dimwise_causal.h)
  // on one row, every float build against the float64 operations (which the kernel's float64 tests
  // check against ATen), for lengths with and without scalar tails and one to three filters; the
  // backward runs: DimwiseBackwardRunsMatchTheirDefinition.
  IsaGuard guard;
  std::mt19937 rng(38);
  const auto& dops = rowOpsDouble();
  auto toDouble = [](const std::vector<float>& v) { return std::vector<double>(v.begin(), v.end()); };
  for (const char* isa : buildsHere()) {
    forceRowOpsIsa(isa);
    const auto& ops = rowOpsFloat();
    for (int64_t d : {1, 5, 16, 19, 64, 131})
      for (int64_t C : {1, 3}) {
        SCOPED_TRACE(std::string(isa) + " d=" + std::to_string(d) + " c=" + std::to_string(C));
        const float qj = 0.7f, t = 0.4f;
        const auto S0 = randomRow(rng, d, 2.0f), k = randomRow(rng, d, 1.0f), v = randomRow(rng, d, 1.0f);
        // Forward (a panel of one row, lane 0; DimwiseRowsForwardMatchTheirDefinition takes fuller panels).
        constexpr int64_t P = kDimwisePanel;
        const auto wf = randomRow(rng, C * d, 1.0f);
        std::vector<float> Sf(size_t(d * P), 0.0f), wpf(size_t(C * d * P), 0.0f);
        for (int64_t m = 0; m < d; ++m) {
          Sf[size_t(m * P)] = S0[size_t(m)];
          for (int64_t c = 0; c < C; ++c) wpf[size_t((c * d + m) * P)] = wf[size_t(c * d + m)];
        }
        auto Sd = toDouble(Sf);
        const auto wpd = toDouble(wpf), kd0 = toDouble(k), vd0 = toDouble(v);
        std::vector<float> of(static_cast<size_t>(C)), sf(size_t(d * P));
        std::vector<double> od(static_cast<size_t>(C)), sd(size_t(d * P));
        float lf;
        double ld;
        const float qf[1] = {qj};
        const double qd[1] = {qj};
        std::vector<float> mf(size_t(P), 0.0f);
        mf[0] = *std::max_element(S0.begin(), S0.end());  // the row's maximum before the update
        std::vector<double> md(mf.begin(), mf.end());
        DimwisePanel<float> ff;
        ff.rows = 1, ff.d = d, ff.c = C, ff.S = Sf.data(), ff.q = qf, ff.k = k.data(), ff.v = v.data(), ff.t = t;
        ff.w = wpf.data(), ff.out = of.data(), ff.ldo = 1, ff.lse = &lf, ff.scratch = sf.data(), ff.rowMax = mf.data();
        DimwisePanel<double> fd;
        fd.rows = 1, fd.d = d, fd.c = C, fd.S = Sd.data(), fd.q = qd, fd.k = kd0.data(), fd.v = vd0.data(), fd.t = t;
        fd.w = wpd.data(), fd.out = od.data(), fd.ldo = 1, fd.lse = &ld, fd.scratch = sd.data(), fd.rowMax = md.data();
        ops.dimwiseForwardPanel(ff);
        dops.dimwiseForwardPanel(fd);
        EXPECT_LT(maxDiff(Sf, Sd), 1e-6);
        EXPECT_NEAR(lf, ld, 1e-5 * (1 + std::abs(ld)));
        EXPECT_LT(maxDiff(of, od), 1e-6);
        float rowMaxF = -INFINITY;
        for (int64_t m = 0; m < d; ++m) rowMaxF = std::max(rowMaxF, Sf[size_t(m * P)]);
        EXPECT_EQ(mf[0], rowMaxF);  // the maximum after, for the next position
        double rowMaxD = -INFINITY;
        for (int64_t m = 0; m < d; ++m) rowMaxD = std::max(rowMaxD, Sd[size_t(m * P)]);
        EXPECT_EQ(md[0], rowMaxD);
        for (int64_t m = 0; m < d; ++m)
          for (int64_t r = 1; r < P; ++r) EXPECT_EQ(Sf[size_t(m * P + r)], 0.0f) << "padding lane " << r;
        // Recompute: the same probabilities from the log-sum-exp.
        auto Rf = S0;
        auto Rd = toDouble(S0);
        std::vector<float> pf(static_cast<size_t>(d));
        std::vector<double> pd(static_cast<size_t>(d));
        ops.dimwiseRowRecompute(Rf.data(), k.data(), qj, d, t, lf, pf.data(), kDimwiseChunk);
        dops.dimwiseRowRecompute(Rd.data(), toDouble(k).data(), qj, d, t, ld, pd.data(), kDimwiseChunk);
        EXPECT_LT(maxDiff(pf, pd), 1e-6);
        double total = 0;
        for (double p : pd) total += p;
        EXPECT_NEAR(total, 1.0, 1e-12);
      }
  }
}

TEST(RowOps, DimwiseRecomputeExpIsAccurateOverTheWholeRange) {
  // The causal dimension-wise passes take e^x through a degree-5 polynomial for 2^f (row_ops_impl.h):
  // with k = 0, t = 1 and lse = 0 the recompute row is e^S itself. Over S in [−86, 0] (and 0 itself;
  // below, the results near float32's smallest normal number are not asked of it)
  // the relative error stays within the polynomial's 1.6e-7 plus the roundings of the base-2
  // argument (the conditioning every float32 exp has), on every float build.
  IsaGuard guard;
  std::vector<float> S;
  for (double x = -86.0; x <= 0.0; x += 0.0007) S.push_back(float(x));
  S.push_back(0.0f);
  const int64_t n = int64_t(S.size());
  const std::vector<float> k(S.size(), 0.0f);
  for (const char* isa : buildsHere()) {
    SCOPED_TRACE(isa);
    forceRowOpsIsa(isa);
    auto row = S;
    std::vector<float> p(S.size());
    rowOpsFloat().dimwiseRowRecompute(row.data(), k.data(), 0.0f, n, 1.0f, 0.0f, p.data(), kDimwiseChunk);
    double worst = 0;
    for (int64_t i = 0; i < n; ++i) {
      const double want = std::exp(double(S[size_t(i)]));
      const double rel = std::abs(double(p[size_t(i)]) - want) / want;
      // The base-2 argument a = S·log2(e) − log2(1/ln 2) carries up to three roundings of half an
      // ulp (log2(e) in float32, the product and the difference: the SSE2 build has no FMA), each
      // relative 2^-24·|a| in 2^a: ln 2·3·2^-24·|a|.
      const double a = std::abs(double(S[size_t(i)])) * 1.4426950408889634 + 0.5287663729448977;
      const double bound = 1.6e-7 + 0.6931471805599453 * 3.0 * std::ldexp(1.0, -24) * a;
      worst = std::max(worst, rel / bound);
      ASSERT_LE(rel, bound) << "S = " << S[size_t(i)] << " p = " << p[size_t(i)] << " want " << want;
    }
    std::cout << isa << ": worst error " << worst << " of the bound\n";
  }
}

TEST(RowOps, DimwiseBackwardRunsMatchTheirDefinition) {
  // The backward of one row over runs of 1 to kDimwiseRunMax positions (DimwiseBackwardRun) on the
  // kernel's tiles (chunks of kDimwiseChunk, zero past d, positions side by side in a chunk, the run
  // starting one position into its tiles, chunk strides one line longer than the positions, as the
  // kernel lays them out): the float64 operation against the equations written out here position by
  // position in the natural layout, every float build against the float64 one (on the same inputs),
  // for row lengths below, at and past one and several chunks, and one to five filters (five take
  // the general path). The tiles take t·p and give t·∂v back (row_ops.h); the padding stays zero.
  IsaGuard guard;
  std::mt19937 rng(40);
  constexpr int64_t Q = kDimwiseChunk;
  const auto& dops = rowOpsDouble();
  for (const char* isa : buildsHere()) {
    forceRowOpsIsa(isa);
    const auto& ops = rowOpsFloat();
    for (int64_t d : {1, 5, 16, 19, 64, 131})
      for (int64_t C : {1, 2, 4, 5})
        for (int64_t len = 1; len <= kDimwiseRunMax; ++len) {
          SCOPED_TRACE(std::string(isa) + " d=" + std::to_string(d) + " c=" + std::to_string(C) +
                       " len=" + std::to_string(len));
          const int64_t nch = (d + Q - 1) / Q, dp = nch * Q, ldgi = C * d, lddq = 5, ldq = 3;
          const int64_t ldp = (len + 1) * Q + Q, ldvk = 2 * (len + 1) * Q + Q;  // one position before the run
          // The natural layout: p_l a softmax row (positive, summing to 1); v_l, k_l, q_l, the filter
          // row W_c, g_l,c, t_l and the accumulators' starting values any values.
          std::vector<double> p(size_t(len * d)), v, k, w, g, t, dW0, D0, dv0, dk0;
          for (int64_t l = 0; l < len; ++l) {
            const auto e = randomRow(rng, d, 2.0f);
            double z = 0;
            for (int64_t m = 0; m < d; ++m) z += std::exp(double(e[size_t(m)]));
            for (int64_t m = 0; m < d; ++m) p[size_t(l * d + m)] = double(float(std::exp(double(e[size_t(m)])) / z));
          }
          auto draw = [&](int64_t n, float scale) {
            const auto r = randomRow(rng, n, scale);
            return std::vector<double>(r.begin(), r.end());
          };
          v = draw(len * d, 1.0f), k = draw(len * d, 1.0f), w = draw(C * d, 1.0f), g = draw(len * ldgi, 1.0f);
          dW0 = draw(C * d, 1.0f), D0 = draw(d, 1.0f), dv0 = draw(len * d, 1.0f), dk0 = draw(len * d, 1.0f);
          const auto qs = draw(len * ldq, 1.0f);
          for (double x : draw(len, 0.5f)) t.push_back(double(0.6f + float(std::abs(x))));
          // The forward's outputs o_l,c = Σ_m W_c[m]·p_l[m]·v_l[m], which the runs take δ_l from; the
          // equations below take δ from p itself.
          std::vector<double> o(g.size(), 0.0);
          for (int64_t l = 0; l < len; ++l)
            for (int64_t c = 0; c < C; ++c)
              for (int64_t m = 0; m < d; ++m) o[size_t(l * ldgi + c * d)] += w[size_t(c * d + m)] * p[size_t(l * d + m)] * v[size_t(l * d + m)];
          // The tiles, in float64 (the float ones are their copies).
          std::vector<double> pt(size_t(nch * ldp), 0.0), vkt(size_t(nch * ldvk), 0.0), dvkt(vkt.size(), 0.0);
          std::vector<double> wt(size_t(nch * C * Q), 0.0), dWt(wt.size(), 0.0), Dt(size_t(dp), 0.0);
          for (int64_t m = 0; m < d; ++m) {
            const int64_t i = m / Q, j = m % Q;
            for (int64_t l = 0; l < len; ++l) {
              pt[size_t(i * ldp + (l + 1) * Q + j)] = t[size_t(l)] * p[size_t(l * d + m)];
              vkt[size_t(i * ldvk + 2 * (l + 1) * Q + j)] = v[size_t(l * d + m)];
              vkt[size_t(i * ldvk + (2 * (l + 1) + 1) * Q + j)] = k[size_t(l * d + m)];
              dvkt[size_t(i * ldvk + 2 * (l + 1) * Q + j)] = t[size_t(l)] * dv0[size_t(l * d + m)];
              dvkt[size_t(i * ldvk + (2 * (l + 1) + 1) * Q + j)] = dk0[size_t(l * d + m)];
            }
            for (int64_t c = 0; c < C; ++c) {
              wt[size_t((i * C + c) * Q + j)] = w[size_t(c * d + m)];
              dWt[size_t((i * C + c) * Q + j)] = dW0[size_t(c * d + m)];
            }
            Dt[size_t(m)] = D0[size_t(m)];
          }
          auto toF = [](const std::vector<double>& x) { return std::vector<float>(x.begin(), x.end()); };
          const auto ptf = toF(pt), vktf = toF(vkt), wtf = toF(wt), gf = toF(g), of = toF(o), qf = toF(qs), tf = toF(t);
          auto dvktf = toF(dvkt), dWtf = toF(dWt), Dtf = toF(Dt);
          auto dvktd = dvkt, dWtd = dWt, Dtd = Dt;
          std::vector<float> dqf(size_t(len * lddq), 9.0f);
          std::vector<double> dqd(size_t(len * lddq), 9.0);
          auto setUp = [&](auto& r, const auto& P, const auto& VK, auto& dVK, const auto& Qs, const auto& T,
                           const auto& G, const auto& O, const auto& Wt, auto& dW, auto& D, auto& dq) {
            r.chunks = nch, r.c = C, r.len = len, r.p = P.data() + Q, r.ldp = ldp;
            r.vk = VK.data() + 2 * Q, r.dvk = dVK.data() + 2 * Q, r.ldvk = ldvk, r.q = Qs.data(), r.ldq = ldq;
            r.t = T.data(), r.g = G.data(), r.o = O.data(), r.ldgi = ldgi, r.ldgc = d, r.w = Wt.data();
            r.dW = dW.data(), r.D = D.data(), r.dq = dq.data(), r.lddq = lddq;
          };
          DimwiseBackwardRun<float> rf;
          setUp(rf, ptf, vktf, dvktf, qf, tf, gf, of, wtf, dWtf, Dtf, dqf);
          DimwiseBackwardRun<double> rd;
          setUp(rd, pt, vkt, dvktd, qs, t, g, o, wt, dWtd, Dtd, dqd);
          ops.dimwiseBackwardRun(rf);
          dops.dimwiseBackwardRun(rd);
          EXPECT_LT(maxDiff(dWtf, dWtd), 1e-5);
          EXPECT_LT(maxDiff(Dtf, Dtd), 1e-5);
          EXPECT_LT(maxDiff(dvktf, dvktd), 1e-5);
          EXPECT_LT(maxDiff(dqf, dqd), 1e-5);
          // The equations in the natural layout, positions from the last to the first.
          auto dWe = dW0, De = D0, dve = dv0, dke = dk0;
          std::vector<double> dqe(size_t(len * lddq), 9.0);
          for (int64_t l = len - 1; l >= 0; --l) {
            const double *pl = p.data() + l * d, *vl = v.data() + l * d, *kl = k.data() + l * d;
            std::vector<double> G(size_t(d), 0.0);
            double delta = 0;
            for (int64_t m = 0; m < d; ++m) {
              for (int64_t c = 0; c < C; ++c) G[size_t(m)] += g[size_t(l * ldgi + c * d)] * w[size_t(c * d + m)];
              delta += pl[m] * vl[m] * G[size_t(m)];
            }
            double dq = 0;
            for (int64_t m = 0; m < d; ++m) {
              dve[size_t(l * d + m)] += pl[m] * G[size_t(m)];
              for (int64_t c = 0; c < C; ++c) dWe[size_t(c * d + m)] += g[size_t(l * ldgi + c * d)] * pl[m] * vl[m];
              De[size_t(m)] += t[size_t(l)] * pl[m] * (vl[m] * G[size_t(m)] - delta);
              dke[size_t(l * d + m)] += qs[size_t(l * ldq)] * De[size_t(m)];
              dq += De[size_t(m)] * kl[m];
            }
            dqe[size_t(l * lddq)] = dq;
          }
          // The float64 tiles against them, and their padding (and the position before the run) untouched.
          for (int64_t m = 0; m < dp; ++m) {
            const int64_t i = m / Q, j = m % Q;
            const bool in = m < d;
            ASSERT_NEAR(Dtd[size_t(m)], in ? De[size_t(m)] : 0.0, 1e-12) << m;
            for (int64_t c = 0; c < C; ++c)
              ASSERT_NEAR(dWtd[size_t((i * C + c) * Q + j)], in ? dWe[size_t(c * d + m)] : 0.0, 1e-12) << m;
            ASSERT_EQ(dvktd[size_t(i * ldvk + j)], 0.0) << m;
            for (int64_t l = 0; l < len; ++l) {
              ASSERT_NEAR(dvktd[size_t(i * ldvk + 2 * (l + 1) * Q + j)] / t[size_t(l)], in ? dve[size_t(l * d + m)] : 0.0,
                          1e-12) << m;
              ASSERT_NEAR(dvktd[size_t(i * ldvk + (2 * (l + 1) + 1) * Q + j)], in ? dke[size_t(l * d + m)] : 0.0, 1e-12)
                  << m;
            }
          }
          for (size_t i = 0; i < dqe.size(); ++i) ASSERT_NEAR(dqd[i], dqe[i], 1e-12) << i;  // 9 where not written
        }
  }
}

TEST(RowOps, DimwiseRowsForwardMatchTheirDefinition) {
  // Panels of rows of the causal dimension-wise forward (DimwisePanel, the rows across the vector
  // lanes): the float64 operation against the equations written out here, every float build against
  // the float64 one; row counts below, at and above one AVX2 vector (8) and a full panel (16), one
  // to five filters (five take the scratch path), row lengths of 3, 16 and 45 columns, row maxima far
  // from zero (the log-sum-exp's shift), and rows whose old maximum stands 500 above the rest with a
  // query 200 times larger: the float panel's bound on the new maximum (old maximum plus max q·k)
  // overshoots it by up to min(500, |q|·(max k − min k))·t/ln2 base-2 orders, past
  // kDimwiseShiftSlack and past float32's range (without the second exp pass with the exact maximum
  // the terms would all be 0); the maxima the rows leave for the next position are checked too, and
  // the padding lanes and the outputs past the rows stay untouched.
  IsaGuard guard;
  std::mt19937 rng(39);
  constexpr int64_t P = kDimwisePanel;
  const auto& dops = rowOpsDouble();
  for (const char* isa : buildsHere()) {
    forceRowOpsIsa(isa);
    const auto& ops = rowOpsFloat();
    for (int64_t rows : {1, 7, 9, 16})
      for (int64_t d : {3, 16, 45})
        for (int64_t C : {1, 2, 4, 5}) {
          SCOPED_TRACE(std::string(isa) + " rows=" + std::to_string(rows) + " d=" + std::to_string(d) +
                       " c=" + std::to_string(C));
          const float t = 0.3f;
          auto S0 = randomRow(rng, rows * d, 3.0f);  // row layout: S0[r·d + m]
          for (int64_t r = 0; r < rows; ++r) S0[size_t(r * d)] += 40.0f * float(r % 3);  // large row maxima
          auto q = randomRow(rng, rows, 1.0f);
          for (int64_t r = 4; r < rows; r += 5) S0[size_t(r * d)] += 500.0f, q[size_t(r)] *= 200.0f;  // slack ≫ 32
          const auto k = randomRow(rng, d, 1.0f), v = randomRow(rng, d, 1.0f);
          const auto w = randomRow(rng, C * rows * d, 1.0f);  // row layout: w[(c·rows + r)·d + m]
          const int64_t ldo = rows + 2;
          // The panel layouts, the lanes past `rows` zero.
          std::vector<float> Sf(size_t(d * P), 0.0f), wp(size_t(C * d * P), 0.0f), mf(size_t(P), 0.0f);
          for (int64_t r = 0; r < rows; ++r) {
            for (int64_t m = 0; m < d; ++m) {
              Sf[size_t(m * P + r)] = S0[size_t(r * d + m)];
              for (int64_t c = 0; c < C; ++c) wp[size_t((c * d + m) * P + r)] = w[size_t((c * rows + r) * d + m)];
            }
            mf[size_t(r)] = *std::max_element(S0.begin() + r * d, S0.begin() + (r + 1) * d);
          }
          std::vector<double> Sd(Sf.begin(), Sf.end()), md(mf.begin(), mf.end()), qd(q.begin(), q.end()),
              kd(k.begin(), k.end()), vd(v.begin(), v.end()), wpd(wp.begin(), wp.end());
          std::vector<float> of(size_t(C * ldo), 7.0f), lf(static_cast<size_t>(rows)), sf(size_t(d * P));
          std::vector<double> od(size_t(C * ldo), 7.0), ldd(static_cast<size_t>(rows)), sd(size_t(d * P));
          DimwisePanel<float> ff;
          ff.rows = rows, ff.d = d, ff.c = C, ff.S = Sf.data(), ff.q = q.data(), ff.k = k.data(), ff.v = v.data();
          ff.t = t, ff.w = wp.data(), ff.out = of.data(), ff.ldo = ldo, ff.lse = lf.data();
          ff.scratch = sf.data(), ff.rowMax = mf.data();
          DimwisePanel<double> fd;
          fd.rows = rows, fd.d = d, fd.c = C, fd.S = Sd.data(), fd.q = qd.data(), fd.k = kd.data(), fd.v = vd.data();
          fd.t = t, fd.w = wpd.data(), fd.out = od.data(), fd.ldo = ldo, fd.lse = ldd.data();
          fd.scratch = sd.data(), fd.rowMax = md.data();
          ops.dimwiseForwardPanel(ff);
          dops.dimwiseForwardPanel(fd);
          for (int64_t r = 0; r < rows; ++r) {
            // The definition: S_r += q_r·k, lse = log Σ e^(t·S_r), out_c = Σ_m W_c[r,m]·softmax(t·S_r)[m]·v[m].
            std::vector<double> srow(static_cast<size_t>(d));
            double mx = -1e300, sum = 0;
            float mxf = -INFINITY;
            for (int64_t m = 0; m < d; ++m) {
              srow[size_t(m)] = double(S0[size_t(r * d + m)]) + qd[size_t(r)] * kd[size_t(m)];
              mx = std::max(mx, srow[size_t(m)]);
              mxf = std::max(mxf, Sf[size_t(m * P + r)]);
              EXPECT_NEAR(Sd[size_t(m * P + r)], srow[size_t(m)], 1e-12);
              EXPECT_NEAR(Sf[size_t(m * P + r)], srow[size_t(m)], 1e-5 * (1 + std::abs(srow[size_t(m)])));
            }
            EXPECT_EQ(mf[size_t(r)], mxf);
            EXPECT_EQ(md[size_t(r)], mx);
            for (int64_t m = 0; m < d; ++m) sum += std::exp(t * (srow[size_t(m)] - mx));
            const double lse = t * mx + std::log(sum);
            EXPECT_NEAR(ldd[size_t(r)], lse, 1e-12 * (1 + std::abs(lse)));
            EXPECT_NEAR(lf[size_t(r)], lse, 2e-6 * (1 + std::abs(lse)));
            for (int64_t c = 0; c < C; ++c) {
              double o = 0;
              for (int64_t m = 0; m < d; ++m)
                o += double(w[size_t((c * rows + r) * d + m)]) * std::exp(t * srow[size_t(m)] - lse) * vd[size_t(m)];
              EXPECT_NEAR(od[size_t(c * ldo + r)], o, 1e-12);
              EXPECT_NEAR(of[size_t(c * ldo + r)], o, 1e-5 * (1 + std::abs(o)));  // float S: |S| up to 90
            }
          }
          // Nothing outside the rows' outputs is written, and the padding lanes stay zero.
          for (int64_t c = 0; c < C; ++c)
            for (int64_t r = rows; r < ldo; ++r) {
              EXPECT_EQ(of[size_t(c * ldo + r)], 7.0f);
              EXPECT_EQ(od[size_t(c * ldo + r)], 7.0);
            }
          for (int64_t m = 0; m < d; ++m)
            for (int64_t r = rows; r < P; ++r) EXPECT_EQ(Sf[size_t(m * P + r)], 0.0f) << "padding lane " << r;
        }
  }
}

TEST(RowOps, GeluAndItsGradientMatchFloat64) {
  // GELU x·Φ(x) with the exact Φ = ½·erfc(−x/√2), and its derivative Φ + x·φ, against float64
  // on a dense sweep of [-12, 12] (both tails, the origin) and random rows of odd lengths.
  IsaGuard guard;
  std::mt19937 rng(9);
  std::vector<float> x;
  for (double a = -12.0; a <= 12.0; a += 0.001) x.push_back(float(a));
  for (float scale : {0.5f, 3.0f}) {
    const auto r = randomRow(rng, 1003, scale);
    x.insert(x.end(), r.begin(), r.end());
  }
  x.push_back(0.0f);
  x.push_back(-0.0f);
  const auto n = int64_t(x.size());
  std::vector<float> g = randomRow(rng, n, 1.0f);
  for (const char* isa : buildsHere()) {
    forceRowOpsIsa(isa);
    std::vector<float> y(x.size()), dx(x.size());
    rowOpsFloat().geluRow(x.data(), n, y.data());
    rowOpsFloat().geluBackwardRow(x.data(), g.data(), n, dx.data());
    double worstY = 0, worstD = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      const double v = x[i], cdf = 0.5 * std::erfc(-v / std::sqrt(2.0));
      const double pdfTerm = v * std::exp(-0.5 * v * v) / std::sqrt(2.0 * M_PI);
      const double wantY = v * cdf, wantD = g[i] * (cdf + pdfTerm);
      // The value relative to itself (floor: a float epsilon of x, the rounding of the input); the
      // derivative relative to the size of its two terms (Φ + x·φ crosses zero near x = −0.75,
      // where any float evaluation cancels). Both over 1 + x²/2: e^(−x²/2) of a float x²/2 carries
      // its rounding times x²/2 (1e-5 at x = −12, on values of 1e-31), whoever evaluates it.
      const double cond = 1.0 + 0.5 * v * v;
      worstY = std::max(worstY, std::abs(y[i] - wantY) / std::max(std::abs(wantY), 1e-30 + 1e-7 * std::abs(v)) / cond);
      worstD = std::max(worstD, std::abs(dx[i] - wantD) / (std::abs(double(g[i])) * (cdf + std::abs(pdfTerm)) + 1e-30) / cond);
    }
    EXPECT_LT(worstY, 5e-7) << isa;
    EXPECT_LT(worstD, 5e-7) << isa;
    // In the range where activations live, close to float rounding.
    double nearY = 0;
    for (size_t i = 0; i < x.size(); ++i)
      if (std::abs(x[i]) <= 4.0f && std::abs(x[i]) >= 1e-3f) {
        const double v = x[i], wantY = v * 0.5 * std::erfc(-v / std::sqrt(2.0));
        nearY = std::max(nearY, std::abs(y[i] - wantY) / std::abs(wantY));
      }
    EXPECT_LT(nearY, 2.5e-6) << isa;
  }
  // float64 rows use the library's erfc.
  std::vector<double> xd = {-3.0, -0.5, 0.0, 0.25, 2.0}, yd(5), gd = {1, 2, 3, 4, 5}, dd(5);
  rowOpsDouble().geluRow(xd.data(), 5, yd.data());
  rowOpsDouble().geluBackwardRow(xd.data(), gd.data(), 5, dd.data());
  for (int i = 0; i < 5; ++i) {
    const double v = xd[i], cdf = 0.5 * std::erfc(-v / std::sqrt(2.0));
    EXPECT_NEAR(yd[i], v * cdf, 1e-15);
    EXPECT_NEAR(dd[i], gd[i] * (cdf + v * std::exp(-0.5 * v * v) / std::sqrt(2.0 * M_PI)), 1e-14);
  }
}

TEST(RowOps, CorrelationRowsAndTheirKernelGradientMatchFloat64) {
  // correlateRow: y_m += Σ_j w_j·x_{m+j}; correlateDots: r_j += Σ_m a_m·x_{m+j} — the two rows of
  // multi-token attention's convolution — against float64 sums, for tap counts on both sides of
  // the eight-tap chunks and lengths around every vector width (the scalar tails); float64 too.
  IsaGuard guard;
  std::mt19937 rng(23);
  for (int64_t taps : {1, 2, 5, 8, 9, 11, 17})
    for (int64_t n : {0, 1, 3, 15, 16, 17, 63, 64, 65, 130}) {
      const auto w = randomRow(rng, taps, 1.0f), x = randomRow(rng, n + taps - 1, 1.0f), a = randomRow(rng, n, 1.0f);
      const auto y0 = randomRow(rng, n, 1.0f), r0 = randomRow(rng, taps, 1.0f);
      std::vector<double> wantY(static_cast<size_t>(n)), wantR(static_cast<size_t>(taps));
      double scaleY = 1, scaleR = 1;
      for (int64_t m = 0; m < n; ++m) {
        double s = y0[m], mag = std::abs(y0[m]);
        for (int64_t j = 0; j < taps; ++j) {
          s += double(w[j]) * x[m + j];
          mag += std::abs(double(w[j]) * x[m + j]);
        }
        wantY[m] = s;
        scaleY = std::max(scaleY, mag);
      }
      for (int64_t j = 0; j < taps; ++j) {
        double s = r0[j], mag = std::abs(r0[j]);
        for (int64_t m = 0; m < n; ++m) {
          s += double(a[m]) * x[m + j];
          mag += std::abs(double(a[m]) * x[m + j]);
        }
        wantR[j] = s;
        scaleR = std::max(scaleR, mag);
      }
      const std::string where = "taps " + std::to_string(taps) + ", n " + std::to_string(n);
      for (const char* isa : buildsHere()) {
        forceRowOpsIsa(isa);
        auto y = y0;
        auto r = r0;
        rowOpsFloat().correlateRow(w.data(), taps, x.data(), n, y.data());
        rowOpsFloat().correlateDots(a.data(), x.data(), n, taps, r.data());
        for (int64_t m = 0; m < n; ++m) EXPECT_NEAR(y[m], wantY[m], 1e-6 * scaleY) << isa << ", " << where;
        for (int64_t j = 0; j < taps; ++j) EXPECT_NEAR(r[j], wantR[j], 1e-6 * scaleR) << isa << ", " << where;
      }
      std::vector<double> wd(w.begin(), w.end()), xd(x.begin(), x.end()), ad(a.begin(), a.end());
      std::vector<double> yd(y0.begin(), y0.end()), rd(r0.begin(), r0.end());
      rowOpsDouble().correlateRow(wd.data(), taps, xd.data(), n, yd.data());
      rowOpsDouble().correlateDots(ad.data(), xd.data(), n, taps, rd.data());
      for (int64_t m = 0; m < n; ++m) EXPECT_NEAR(yd[m], wantY[m], 1e-12 * scaleY) << "double, " << where;
      for (int64_t j = 0; j < taps; ++j) EXPECT_NEAR(rd[j], wantR[j], 1e-12 * scaleR) << "double, " << where;
    }
}
