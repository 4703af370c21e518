// PCA against constructed data whose principal axes and variances are known by hand.

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

std::vector<double> normalized(std::vector<double> v) {
  double n = 0;
  for (double x : v) n += x * x;
  for (auto& x : v) x /= std::sqrt(n);
  return v;
}

double dot(const double* a, const double* b, int dim) {
  double s = 0;
  for (int j = 0; j < dim; ++j) s += a[j] * b[j];
  return s;
}

/// Components are orthonormal, and coordinates are (x - mean) . component, computed here.
template <typename T>
void expectConsistent(const PcaResult& r, const std::vector<T>& points) {
  const int k = r.n_components, dim = r.dim;
  for (int a = 0; a < k; ++a)
    for (int b = 0; b < k; ++b)
      EXPECT_NEAR(dot(&r.components[a * dim], &r.components[b * dim], dim), a == b ? 1.0 : 0.0, 1e-10);
  for (int i = 0; i < r.n_points; ++i) {
    for (int a = 0; a < k; ++a) {
      double proj = 0;
      for (int j = 0; j < dim; ++j) proj += (points[i * dim + j] - r.mean[j]) * r.components[a * dim + j];
      EXPECT_NEAR(r.coordinates[i * k + a], proj, 1e-9);
    }
  }
}

/// The documented sign convention: the largest-magnitude loading of each component is positive.
void expectSignConvention(const PcaResult& r) {
  for (int a = 0; a < r.n_components; ++a) {
    const double* c = &r.components[a * r.dim];
    int arg = 0;
    for (int j = 1; j < r.dim; ++j)
      if (std::abs(c[j]) > std::abs(c[arg]) * (1 + 1e-9)) arg = j;
    EXPECT_GT(c[arg], 0.0) << "component " << a;
  }
}

}  // namespace

TEST(Pca, RecoversDirectionOfPointsAlongALine) {
  const int n = 500, dim = 8;
  const auto u = normalized({1, 2, -3, 0.5, 0, -1, 2, 1});
  const std::vector<double> offset = {5, -2, 0, 1, 3, 3, -7, 0.5};
  std::mt19937_64 rng(1);
  std::normal_distribution<double> noise(0.0, 1e-3);
  std::uniform_real_distribution<double> t(-10.0, 10.0);
  std::vector<float> pts;
  for (int i = 0; i < n; ++i) {
    const double s = t(rng);
    for (int j = 0; j < dim; ++j) pts.push_back(static_cast<float>(offset[j] + s * u[j] + noise(rng)));
  }
  const auto r = pca(pts, n, dim, 2);
  ASSERT_EQ(r.components.size(), 2u * dim);
  ASSERT_EQ(r.coordinates.size(), 2u * n);
  EXPECT_GT(std::abs(dot(r.components.data(), u.data(), dim)), 0.999);
  EXPECT_GT(r.explained_variance_ratio[0], 0.999);
  EXPECT_LE(r.explained_variance_ratio[0] + r.explained_variance_ratio[1], 1.0 + 1e-12);
  EXPECT_GE(r.explained_variance_ratio[1], 0.0);
  expectConsistent(r, pts);
  expectSignConvention(r);
}

TEST(Pca, ExactCrossHasHandComputedVariances) {
  // Points m +- 3u and m +- v with orthonormal u, v: covariance (2*9 uu^T + 2 vv^T) / 3, so the
  // variances are 6 and 2/3, the ratios 0.9 and 0.1, and the third axis has none.
  const auto u = normalized({1, 1, 0});
  const auto v = normalized({1, -1, 2});
  const std::vector<double> m = {10, -4, 2};
  std::vector<double> pts;
  for (auto [a, b] : {std::pair{3.0, 0.0}, {-3.0, 0.0}, {0.0, 1.0}, {0.0, -1.0}})
    for (int j = 0; j < 3; ++j) pts.push_back(m[j] + a * u[j] + b * v[j]);
  const auto r = pca(pts, 4, 3, 3);
  for (int j = 0; j < 3; ++j) EXPECT_NEAR(r.mean[j], m[j], 1e-12);
  EXPECT_NEAR(r.explained_variance[0], 6.0, 1e-12);
  EXPECT_NEAR(r.explained_variance[1], 2.0 / 3.0, 1e-12);
  EXPECT_NEAR(r.explained_variance[2], 0.0, 1e-12);
  EXPECT_NEAR(r.explained_variance_ratio[0], 0.9, 1e-12);
  EXPECT_NEAR(r.explained_variance_ratio[1], 0.1, 1e-12);
  EXPECT_NEAR(r.explained_variance_ratio[2], 0.0, 1e-12);
  EXPECT_NEAR(std::abs(dot(&r.components[0], u.data(), 3)), 1.0, 1e-12);
  EXPECT_NEAR(std::abs(dot(&r.components[3], v.data(), 3)), 1.0, 1e-12);
  const double expected[4][2] = {{3, 0}, {3, 0}, {0, 1}, {0, 1}};
  for (int i = 0; i < 4; ++i)
    for (int a = 0; a < 2; ++a) EXPECT_NEAR(std::abs(r.coordinates[i * 3 + a]), expected[i][a], 1e-12);
  expectConsistent(r, pts);
  expectSignConvention(r);
}

TEST(Pca, AnisotropicGaussianHasExpectedRatios) {
  // Standard deviations 3, 2, 1, 0.5, 0.5 along the axes of a fixed rotation: variances 9, 4, 1,
  // 0.25, 0.25 of a total 14.5.
  const int n = 40000, dim = 5;
  const double sd[dim] = {3, 2, 1, 0.5, 0.5};
  // Orthonormal axes: a Householder reflection I - 2 w w^T of the standard basis.
  const auto w = normalized({1, -2, 0.5, 1, 3});
  std::vector<double> axes(dim * dim);
  for (int a = 0; a < dim; ++a)
    for (int j = 0; j < dim; ++j) axes[a * dim + j] = (a == j ? 1.0 : 0.0) - 2 * w[a] * w[j];
  std::mt19937_64 rng(42);
  std::normal_distribution<double> g(0.0, 1.0);
  std::vector<float> pts(static_cast<std::size_t>(n) * dim, 0.0f);
  for (int i = 0; i < n; ++i)
    for (int a = 0; a < dim; ++a) {
      const double z = sd[a] * g(rng);
      for (int j = 0; j < dim; ++j) pts[i * dim + j] += static_cast<float>(z * axes[a * dim + j]);
    }
  const auto r = pca(pts, n, dim, 3);
  const double expected[3] = {9 / 14.5, 4 / 14.5, 1 / 14.5};
  double sum = 0;
  for (int a = 0; a < 3; ++a) {
    EXPECT_NEAR(r.explained_variance_ratio[a], expected[a], 0.01) << a;
    EXPECT_NEAR(r.explained_variance[a], sd[a] * sd[a], 0.03 * sd[a] * sd[a]) << a;
    EXPECT_GT(std::abs(dot(&r.components[a * dim], &axes[a * dim], dim)), 0.99) << a;
    sum += r.explained_variance_ratio[a];
  }
  EXPECT_LE(sum, 1.0);
  EXPECT_NEAR(sum, 14.0 / 14.5, 0.01);
  expectSignConvention(r);
}

TEST(Pca, SignConventionIsStableUnderNegationAndReordering) {
  std::mt19937_64 rng(9);
  std::normal_distribution<double> g(0.0, 1.0);
  const int n = 200, dim = 6;
  std::vector<double> pts;
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < dim; ++j) pts.push_back(g(rng) * (j + 1));
  const auto r = pca(pts, n, dim, 3);
  const auto again = pca(pts, n, dim, 3);
  EXPECT_EQ(r.components, again.components);
  EXPECT_EQ(r.coordinates, again.coordinates);
  // -X has the same covariance: the same components, negated coordinates.
  std::vector<double> negated = pts;
  for (auto& x : negated) x = -x;
  const auto rn = pca(negated, n, dim, 3);
  for (std::size_t i = 0; i < r.components.size(); ++i) EXPECT_NEAR(rn.components[i], r.components[i], 1e-10);
  for (std::size_t i = 0; i < r.coordinates.size(); ++i) EXPECT_NEAR(rn.coordinates[i], -r.coordinates[i], 1e-9);
  // Reversed point order: the same components.
  std::vector<double> reversed;
  for (int i = n - 1; i >= 0; --i) reversed.insert(reversed.end(), pts.begin() + i * dim, pts.begin() + (i + 1) * dim);
  const auto rr = pca(reversed, n, dim, 3);
  for (std::size_t i = 0; i < r.components.size(); ++i) EXPECT_NEAR(rr.components[i], r.components[i], 1e-10);
  expectSignConvention(r);
}

TEST(Pca, FloatAndDoubleOverloadsAgree) {
  std::mt19937_64 rng(4);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> f(50 * 4);
  for (auto& x : f) x = u(rng) * 3.0f;
  const std::vector<double> d(f.begin(), f.end());
  const auto a = pca(f, 50, 4);
  const auto b = pca(d, 50, 4);
  EXPECT_EQ(a.n_components, 2);
  for (std::size_t i = 0; i < a.components.size(); ++i) EXPECT_NEAR(a.components[i], b.components[i], 1e-12);
  for (std::size_t i = 0; i < a.coordinates.size(); ++i) EXPECT_NEAR(a.coordinates[i], b.coordinates[i], 1e-12);
}

TEST(Pca, FewerPointsThanComponentsAndCoincidentPoints) {
  // Two points in 3-D asked for 3 components: one axis carries all the variance.
  const std::vector<double> two = {0, 0, 0, 2, 0, 0};
  const auto r = pca(two, 2, 3, 3);
  EXPECT_NEAR(r.explained_variance_ratio[0], 1.0, 1e-12);
  EXPECT_NEAR(r.explained_variance_ratio[1], 0.0, 1e-12);
  EXPECT_NEAR(r.explained_variance_ratio[2], 0.0, 1e-12);
  EXPECT_NEAR(r.explained_variance[0], 2.0, 1e-12);  // (1 + 1) / (2 - 1)
  EXPECT_NEAR(r.components[0], 1.0, 1e-12);          // +x by the sign convention
  expectConsistent(r, two);
  const auto same = pca(std::vector<float>(12, 1.5f), 4, 3, 2);
  for (double x : same.explained_variance_ratio) EXPECT_EQ(x, 0.0);
  for (double x : same.coordinates) EXPECT_EQ(x, 0.0);
  for (double x : same.mean) EXPECT_EQ(x, 1.5);
}

TEST(PcaErrors, RejectsBadInputPrecisely) {
  const std::vector<float> pts(12, 1.0f);
  expectInvalid([&] { pca(pts, 5, 3); }, "pca: points.size() = 12 but n * dim = 5 * 3 = 15");
  expectInvalid([&] { pca(std::vector<float>{1, 2, 3}, 1, 3); }, "pca: needs at least 2 points; got n = 1");
  expectInvalid([&] { pca(pts, 4, 3, 0); }, "pca: components must be in [1, dim = 3]; got 0");
  expectInvalid([&] { pca(pts, 4, 3, 4); }, "components must be in [1, dim = 3]; got 4");
  expectInvalid([&] { pca(pts, 4, 0); }, "pca: dim must be >= 1; got 0");
  std::vector<float> bad = pts;
  bad[5] = std::numeric_limits<float>::quiet_NaN();
  expectInvalid([&] { pca(bad, 4, 3); }, "pca: point 1, coordinate 2 is NaN", "must be finite");
  std::vector<double> inf(12, 0.0);
  inf[9] = -std::numeric_limits<double>::infinity();
  expectInvalid([&] { pca(inf, 4, 3); }, "point 3, coordinate 0 is -inf");
}
