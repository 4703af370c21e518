// k-means on constructed blobs whose partition and within-cluster sum are known.

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <random>
#include <vector>

#include "analysis_test_util.h"
#include "model_core/analysis.h"

using namespace tensorscope::model_core;
using tensorscope::model_core::test::expectInvalid;

namespace {

struct Blobs {
  int n = 0;
  int dim = 0;
  std::vector<float> points;
  std::vector<int> truth;
};

/// `perBlob` points around each of `k` centres spaced `spacing` apart on the axes (and beyond),
/// with uniform jitter of half-width 1: every blob is far from every other.
Blobs makeBlobs(int k, int perBlob, int dim, double spacing, std::uint64_t seed) {
  Blobs b;
  b.dim = dim;
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> jitter(-1.0, 1.0);
  for (int i = 0; i < perBlob; ++i)  // interleave blobs so labels are not sorted
    for (int c = 0; c < k; ++c) {
      for (int j = 0; j < dim; ++j) {
        const double centre = (j == c % dim ? spacing * (1 + c / dim) : 0.0);
        b.points.push_back(static_cast<float>(centre + jitter(rng)));
      }
      b.truth.push_back(c);
      ++b.n;
    }
  return b;
}

/// Within-cluster sum of squares of a given partition, computed from scratch.
double withinClusterSum(const std::vector<float>& pts, int dim, const std::vector<int>& labels, int k) {
  std::vector<double> mean(static_cast<std::size_t>(k) * dim, 0.0);
  std::vector<int> count(k, 0);
  for (std::size_t i = 0; i < labels.size(); ++i) {
    ++count[labels[i]];
    for (int j = 0; j < dim; ++j) mean[labels[i] * dim + j] += pts[i * dim + j];
  }
  for (int c = 0; c < k; ++c)
    for (int j = 0; j < dim; ++j) mean[c * dim + j] /= count[c];
  double s = 0;
  for (std::size_t i = 0; i < labels.size(); ++i)
    for (int j = 0; j < dim; ++j) {
      const double d = pts[i * dim + j] - mean[labels[i] * dim + j];
      s += d * d;
    }
  return s;
}

/// The two labelings describe the same partition (a bijection between label values).
void expectSamePartition(const std::vector<int>& got, const std::vector<int>& truth) {
  ASSERT_EQ(got.size(), truth.size());
  std::map<int, int> forward, backward;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const auto [f, fNew] = forward.emplace(got[i], truth[i]);
    const auto [b, bNew] = backward.emplace(truth[i], got[i]);
    ASSERT_EQ(f->second, truth[i]) << "point " << i;
    ASSERT_EQ(b->second, got[i]) << "point " << i;
  }
}

}  // namespace

TEST(KMeans, RecoversWellSeparatedBlobsWithHandComputedInertia) {
  const auto b = makeBlobs(4, 30, 3, 50.0, 1);
  const auto r = kMeans(b.points, b.n, b.dim, 4, {.seed = 7});
  expectSamePartition(r.labels, b.truth);
  EXPECT_TRUE(r.converged);
  EXPECT_GE(r.iterations, 1);
  EXPECT_EQ(r.cluster_sizes, std::vector<int>(4, 30));
  const double expected = withinClusterSum(b.points, b.dim, b.truth, 4);
  EXPECT_NEAR(r.inertia, expected, 1e-9 * expected);
  // Each centroid is the mean of its cluster.
  for (int c = 0; c < 4; ++c)
    for (int j = 0; j < b.dim; ++j) {
      double mean = 0;
      for (int i = 0; i < b.n; ++i)
        if (r.labels[i] == c) mean += b.points[i * b.dim + j];
      EXPECT_NEAR(r.centroids[c * b.dim + j], mean / 30.0, 1e-9);
    }
}

TEST(KMeans, SameSeedGivesIdenticalResults) {
  std::mt19937_64 rng(3);
  std::normal_distribution<float> g(0.0f, 1.0f);
  std::vector<float> pts(400 * 5);
  for (auto& x : pts) x = g(rng);  // no real clusters: the result depends on the initialisation
  const auto a = kMeans(pts, 400, 5, 6, {.seed = 123});
  const auto b = kMeans(pts, 400, 5, 6, {.seed = 123});
  EXPECT_EQ(a.labels, b.labels);
  EXPECT_EQ(a.centroids, b.centroids);
  EXPECT_EQ(a.inertia, b.inertia);
  EXPECT_EQ(a.iterations, b.iterations);
  // Another seed may find another local optimum; it is still a valid clustering.
  const auto c = kMeans(pts, 400, 5, 6, {.seed = 124});
  EXPECT_EQ(c.labels.size(), 400u);
  EXPECT_NEAR(c.inertia, withinClusterSum(pts, 5, c.labels, 6), 1e-9 * c.inertia);
  // Different seeds recover the same well-separated partition.
  const auto blobs = makeBlobs(3, 20, 2, 40.0, 2);
  for (std::uint64_t seed : {0u, 1u, 99u}) expectSamePartition(kMeans(blobs.points, blobs.n, 2, 3, {.seed = seed}).labels, blobs.truth);
}

TEST(KMeans, RestartsKeepTheBestInertia) {
  std::mt19937_64 rng(8);
  std::uniform_real_distribution<float> u(0.0f, 10.0f);
  std::vector<float> pts(300 * 2);
  for (auto& x : pts) x = u(rng);
  // The first restart of n_init = 10 draws the same initialisation as n_init = 1.
  const auto one = kMeans(pts, 300, 2, 8, {.seed = 5, .n_init = 1});
  const auto ten = kMeans(pts, 300, 2, 8, {.seed = 5, .n_init = 10});
  EXPECT_LE(ten.inertia, one.inertia);
  EXPECT_NEAR(ten.inertia, withinClusterSum(pts, 2, ten.labels, 8), 1e-9 * ten.inertia);
}

TEST(KMeans, SingleClusterIsTheMean) {
  const std::vector<double> pts = {0, 0, 2, 0, 0, 4, 2, 4};
  const auto r = kMeans(pts, 4, 2, 1);
  EXPECT_EQ(r.labels, std::vector<int>(4, 0));
  EXPECT_NEAR(r.centroids[0], 1.0, 1e-15);
  EXPECT_NEAR(r.centroids[1], 2.0, 1e-15);
  EXPECT_NEAR(r.inertia, 4 * (1.0 + 4.0), 1e-12);
  EXPECT_TRUE(r.converged);
}

TEST(KMeans, KEqualToNGivesEachPointItsOwnCluster) {
  const std::vector<float> pts = {0, 0, 1, 0, 5, 5, -3, 2, 9, 9};
  const auto r = kMeans(pts, 5, 2, 5, {.seed = 1});
  EXPECT_EQ(r.cluster_sizes, std::vector<int>(5, 1));
  EXPECT_EQ(r.inertia, 0.0);
  expectSamePartition(r.labels, {0, 1, 2, 3, 4});
}

TEST(KMeans, DuplicatePointsAndEmptyClustersAreHandled) {
  // Six identical points into three clusters: every assignment ties to cluster 0 and the other
  // two are re-seeded from it.
  const auto same = kMeans(std::vector<float>(6 * 3, 2.5f), 6, 3, 3, {.seed = 4});
  EXPECT_EQ(same.cluster_sizes.size(), 3u);
  for (int s : same.cluster_sizes) EXPECT_GE(s, 1);
  EXPECT_EQ(same.inertia, 0.0);
  for (double c : same.centroids) EXPECT_EQ(c, 2.5);
  // Two distinct locations, four clusters: both locations are centroids, nothing is empty.
  const std::vector<double> two = {0, 0, 0, 0, 0, 0, 0, 0, 7, 7, 7, 7};
  const auto r = kMeans(two, 6, 2, 4, {.seed = 9});
  for (int s : r.cluster_sizes) EXPECT_GE(s, 1);
  EXPECT_EQ(r.inertia, 0.0);
  EXPECT_NE(r.labels[0], r.labels[5]);
  int sum = 0;
  for (int s : r.cluster_sizes) sum += s;
  EXPECT_EQ(sum, 6);
}

TEST(KMeans, IterationLimitIsRespected) {
  const auto b = makeBlobs(5, 40, 2, 3.0, 6);  // overlapping blobs take several iterations
  const auto r = kMeans(b.points, b.n, 2, 5, {.max_iterations = 1, .tolerance = 0.0, .seed = 2});
  EXPECT_EQ(r.iterations, 1);
  EXPECT_NEAR(r.inertia, withinClusterSum(b.points, 2, r.labels, 5), 1e-9 * r.inertia);
}

TEST(KMeans, FloatAndDoubleOverloadsAgree) {
  const auto b = makeBlobs(3, 25, 4, 20.0, 3);
  const std::vector<double> d(b.points.begin(), b.points.end());
  const auto a = kMeans(b.points, b.n, 4, 3, {.seed = 11});
  const auto c = kMeans(d, b.n, 4, 3, {.seed = 11});
  EXPECT_EQ(a.labels, c.labels);
  EXPECT_EQ(a.centroids, c.centroids);
}

TEST(KMeans, FastForFiveThousandPointsInSixtyFourDimensions) {
  const auto b = makeBlobs(10, 500, 64, 30.0, 12);
  const auto start = std::chrono::steady_clock::now();
  const auto r = kMeans(b.points, b.n, 64, 10, {.seed = 1, .n_init = 1});
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 1.0);
  expectSamePartition(r.labels, b.truth);
  EXPECT_NEAR(r.inertia, withinClusterSum(b.points, 64, b.truth, 10), 1e-9 * r.inertia);
}

TEST(KMeansErrors, RejectsBadInputPrecisely) {
  const std::vector<float> pts(10, 1.0f);
  expectInvalid([&] { kMeans(pts, 5, 2, 0); }, "kMeans: k must be >= 1; got 0");
  expectInvalid([&] { kMeans(pts, 5, 2, -2); }, "kMeans: k must be >= 1; got -2");
  expectInvalid([&] { kMeans(pts, 5, 2, 6); }, "kMeans: k = 6 exceeds the number of points n = 5");
  expectInvalid([&] { kMeans(pts, 4, 2, 2); }, "kMeans: points.size() = 10 but n * dim = 4 * 2 = 8");
  expectInvalid([&] { kMeans(pts, 0, 2, 1); }, "kMeans: n must be >= 1; got 0");
  expectInvalid([&] { kMeans(pts, 5, 2, 2, {.max_iterations = 0}); }, "kMeans: max_iterations must be >= 1; got 0");
  expectInvalid([&] { kMeans(pts, 5, 2, 2, {.tolerance = -1.0}); }, "kMeans: tolerance must be finite and >= 0");
  expectInvalid([&] { kMeans(pts, 5, 2, 2, {.tolerance = std::numeric_limits<double>::quiet_NaN()}); }, "tolerance");
  expectInvalid([&] { kMeans(pts, 5, 2, 2, {.n_init = 0}); }, "kMeans: n_init must be >= 1; got 0");
  std::vector<float> bad = pts;
  bad[7] = std::numeric_limits<float>::infinity();
  expectInvalid([&] { kMeans(bad, 5, 2, 2); }, "kMeans: point 3, coordinate 1 is +inf", "must be finite");
}
