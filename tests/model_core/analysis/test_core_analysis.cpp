// Stable rank, spectrum and norms of plain-data matrices against hand-derived values and an
// independent power-iteration reference.

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "analysis_test_util.h"
#include "model_core/analysis.h"

using namespace tensorscope::model_core;
using tensorscope::model_core::test::expectInvalid;

namespace {

/// I_H (x) (1_D 1_D^T), scaled by s: the mhsa core (s = sqrt(H)).
std::vector<double> kroneckerHeads(int h, int d, double s = 1.0) {
  const int r = h * d;
  std::vector<double> c(static_cast<std::size_t>(r) * r, 0.0);
  for (int i = 0; i < r; ++i)
    for (int j = 0; j < r; ++j)
      if (i / d == j / d) c[static_cast<std::size_t>(i) * r + j] = s;
  return c;
}

std::vector<double> identity(int n) {
  std::vector<double> c(static_cast<std::size_t>(n) * n, 0.0);
  for (int i = 0; i < n; ++i) c[static_cast<std::size_t>(i) * n + i] = 1.0;
  return c;
}

std::vector<double> randomMatrix(int rows, int cols, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::vector<double> c(static_cast<std::size_t>(rows) * cols);
  for (auto& v : c) v = u(rng);
  return c;
}

/// sigma_max by power iteration on C^T C: a reference independent of LAPACK.
double powerIterationSigmaMax(const std::vector<double>& c, int rows, int cols) {
  std::vector<double> v(cols, 1.0), w(rows);
  double lambda = 0.0;
  for (int it = 0; it < 2000; ++it) {
    for (int i = 0; i < rows; ++i) {
      w[i] = 0.0;
      for (int j = 0; j < cols; ++j) w[i] += c[i * cols + j] * v[j];
    }
    double norm = 0.0;
    for (int j = 0; j < cols; ++j) {
      double t = 0.0;
      for (int i = 0; i < rows; ++i) t += c[i * cols + j] * w[i];
      v[j] = t;
      norm += t * t;
    }
    norm = std::sqrt(norm);
    for (auto& x : v) x /= norm;
    lambda = norm;  // ||C^T C v|| for the previous unit v -> sigma_max^2
  }
  return std::sqrt(lambda);
}

}  // namespace

TEST(StableRank, KroneckerOfIdentityAndOnesHasOneHeadPerBlock) {
  // The contract's example: I_4 (x) 1_8 1_8^T has 4 heads (the paper's misprint would give 32).
  const auto a = analyzeCore(kroneckerHeads(4, 8), 32, 32);
  EXPECT_NEAR(a.stable_rank, 4.0, 1e-12);
  ASSERT_EQ(a.singular_values.size(), 32u);
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(a.singular_values[i], 8.0, 1e-12);
  for (int i = 4; i < 32; ++i) EXPECT_NEAR(a.singular_values[i], 0.0, 1e-12);
  EXPECT_NEAR(a.frobenius_norm, 16.0, 1e-12);  // sqrt(4 * 64 ones)
  EXPECT_NEAR(a.spectral_norm, 8.0, 1e-12);
  EXPECT_EQ(a.numerical_rank, 4);
  EXPECT_NEAR(a.rank_tolerance, 32 * std::numeric_limits<double>::epsilon() * 8.0, 1e-25);
  // The mhsa preset sqrt(H) (I_H (x) 11^T) has the same number of heads.
  EXPECT_NEAR(stableRank(kroneckerHeads(4, 8, 2.0), 32, 32), 4.0, 1e-12);
  EXPECT_NEAR(stableRank(kroneckerHeads(8, 1, std::sqrt(8.0)), 8, 8), 8.0, 1e-12);
}

TEST(StableRank, RankOneMatrixIsOne) {
  const std::vector<double> u = {1.0, -2.0, 0.5, 3.0};
  const std::vector<double> v = {0.3, 0.0, -1.5, 2.0, 4.0};
  std::vector<double> c;
  for (double a : u)
    for (double b : v) c.push_back(a * b);
  const auto r = analyzeCore(c, 4, 5);
  EXPECT_NEAR(r.stable_rank, 1.0, 1e-12);
  EXPECT_EQ(r.numerical_rank, 1);
  double nu = 0, nv = 0;
  for (double a : u) nu += a * a;
  for (double b : v) nv += b * b;
  EXPECT_NEAR(r.singular_values[0], std::sqrt(nu * nv), 1e-12);  // sigma = |u| |v|
  EXPECT_NEAR(stableRank(std::vector<double>(36, -0.7), 6, 6), 1.0, 1e-12);  // all-equal entries
}

TEST(StableRank, IdentityOfSizeNIsN) {
  for (int n : {1, 2, 5, 17, 64}) {
    const auto r = analyzeCore(identity(n), n, n);
    EXPECT_NEAR(r.stable_rank, n, 1e-12 * n) << n;
    EXPECT_EQ(r.numerical_rank, n);
    for (double s : r.singular_values) EXPECT_NEAR(s, 1.0, 1e-13);
  }
}

TEST(StableRank, InvariantToNonZeroScaling) {
  const auto c = randomMatrix(6, 9, 7);
  // Independent reference: ||C||_F^2 summed here, sigma_max by power iteration.
  double frob2 = 0.0;
  for (double v : c) frob2 += v * v;
  const double sigma = powerIterationSigmaMax(c, 6, 9);
  const double expected = frob2 / (sigma * sigma);
  const auto base = analyzeCore(c, 6, 9);
  EXPECT_NEAR(base.stable_rank, expected, 1e-9);
  EXPECT_NEAR(base.spectral_norm, sigma, 1e-9);
  EXPECT_NEAR(base.frobenius_norm, std::sqrt(frob2), 1e-12);
  for (double s : {-1.0, 0.5, -3.0, 1e-150, -1e150, 1e300, 1e-300}) {
    std::vector<double> scaled = c;
    for (auto& v : scaled) v *= s;
    const auto r = analyzeCore(scaled, 6, 9);
    EXPECT_NEAR(r.stable_rank, base.stable_rank, 1e-12 * base.stable_rank) << s;
    EXPECT_NEAR(r.spectral_norm / std::abs(s), base.spectral_norm, 1e-12 * base.spectral_norm) << s;
    EXPECT_EQ(r.numerical_rank, base.numerical_rank) << s;
  }
}

TEST(SingularValues, DiagonalMatrixGivesSortedAbsoluteDiagonal) {
  const std::vector<double> d = {3, 0, 0, 0,  //
                                 0, -5, 0, 0,  //
                                 0, 0, 1, 0,  //
                                 0, 0, 0, 0};
  const auto s = singularValues(d, 4, 4);
  ASSERT_EQ(s.size(), 4u);
  EXPECT_NEAR(s[0], 5.0, 1e-14);
  EXPECT_NEAR(s[1], 3.0, 1e-14);
  EXPECT_NEAR(s[2], 1.0, 1e-14);
  EXPECT_NEAR(s[3], 0.0, 1e-14);
  const auto a = analyzeCore(d, 4, 4);
  EXPECT_NEAR(a.stable_rank, (9.0 + 25.0 + 1.0) / 25.0, 1e-14);
  EXPECT_EQ(a.numerical_rank, 3);
}

TEST(SingularValues, TwoByTwoWithKnownSvd) {
  // C = [[3, 0], [4, 5]]: C^T C = [[25, 20], [20, 25]] has eigenvalues 45 and 5.
  const std::vector<double> c = {3, 0, 4, 5};
  const auto a = analyzeCore(c, 2, 2);
  EXPECT_NEAR(a.singular_values[0], 3.0 * std::sqrt(5.0), 1e-13);
  EXPECT_NEAR(a.singular_values[1], std::sqrt(5.0), 1e-13);
  EXPECT_NEAR(a.stable_rank, 50.0 / 45.0, 1e-14);
  EXPECT_NEAR(a.frobenius_norm, std::sqrt(50.0), 1e-14);
}

TEST(SingularValues, RectangularMatrices) {
  // [[1, 1, 0], [0, 0, 2]]: C C^T = diag(2, 4), so sigma = 2, sqrt(2); stable rank 6/4.
  const std::vector<double> wide = {1, 1, 0, 0, 0, 2};
  const auto a = analyzeCore(wide, 2, 3);
  ASSERT_EQ(a.singular_values.size(), 2u);
  EXPECT_NEAR(a.singular_values[0], 2.0, 1e-14);
  EXPECT_NEAR(a.singular_values[1], std::sqrt(2.0), 1e-14);
  EXPECT_NEAR(a.stable_rank, 1.5, 1e-14);
  const std::vector<double> tall = {1, 0, 1, 0, 0, 2};  // its transpose
  EXPECT_NEAR(stableRank(tall, 3, 2), 1.5, 1e-14);
}

TEST(StableRank, ZeroMatrixIsDefinedAsZero) {
  const auto a = analyzeCore(std::vector<double>(12, 0.0), 3, 4);
  EXPECT_EQ(a.stable_rank, 0.0);
  EXPECT_EQ(a.singular_values, std::vector<double>(3, 0.0));
  EXPECT_EQ(a.frobenius_norm, 0.0);
  EXPECT_EQ(a.spectral_norm, 0.0);
  EXPECT_EQ(a.numerical_rank, 0);
  EXPECT_EQ(a.rank_tolerance, 0.0);
}

TEST(StableRank, NumericalRankUsesDocumentedTolerance) {
  EXPECT_EQ(analyzeCore(std::vector<double>{1, 0, 0, 1e-20}, 2, 2).numerical_rank, 1);  // below 2 eps
  EXPECT_EQ(analyzeCore(std::vector<double>{1, 0, 0, 1e-10}, 2, 2).numerical_rank, 2);
  EXPECT_NEAR(stableRank(std::vector<double>{1, 0, 0, 1e-10}, 2, 2), 1.0, 1e-15);
}

TEST(StableRank, FloatOverloadsAgreeWithDouble) {
  const auto c = randomMatrix(10, 7, 3);
  const std::vector<float> f(c.begin(), c.end());
  const std::vector<double> cf(f.begin(), f.end());  // the same values, held as double
  const auto a = analyzeCore(f, 10, 7);
  const auto b = analyzeCore(cf, 10, 7);
  EXPECT_NEAR(a.stable_rank, b.stable_rank, 1e-14);
  EXPECT_NEAR(stableRank(f, 10, 7), b.stable_rank, 1e-14);
  const auto s = singularValues(f, 10, 7);
  ASSERT_EQ(s.size(), 7u);
  for (std::size_t i = 0; i < s.size(); ++i) EXPECT_NEAR(s[i], b.singular_values[i], 1e-14);
  for (std::size_t i = 1; i < s.size(); ++i) EXPECT_GE(s[i - 1], s[i]);
}

TEST(CoreAnalysisErrors, ShapeAndNonFiniteEntriesAreRejectedPrecisely) {
  const std::vector<double> five(5, 1.0);
  expectInvalid([&] { analyzeCore(five, 2, 3); }, "analyzeCore: values.size() = 5 but rows * cols = 2 * 3 = 6");
  expectInvalid([&] { stableRank(five, 0, 5); }, "stableRank: rows must be >= 1; got 0");
  expectInvalid([&] { singularValues(five, 5, -1); }, "singularValues: cols must be >= 1; got -1");
  std::vector<double> c(6, 1.0);
  c[5] = std::numeric_limits<double>::quiet_NaN();
  expectInvalid([&] { analyzeCore(c, 2, 3); }, "analyzeCore: entry (1, 2) is NaN", "must be finite");
  c[5] = 0.0;
  c[1] = std::numeric_limits<double>::infinity();
  expectInvalid([&] { analyzeCore(c, 2, 3); }, "entry (0, 1) is +inf");
  std::vector<float> f(4, 1.0f);
  f[2] = -std::numeric_limits<float>::infinity();
  expectInvalid([&] { stableRank(f, 2, 2); }, "stableRank: entry (1, 0) is -inf");
}
