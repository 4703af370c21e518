// k-means (Lloyd) with k-means++ initialisation, in plain C++ over a double copy of the points.
// Random draws use only std::mt19937_64's raw output (no std:: distributions, whose algorithms
// differ between standard libraries), so a seed gives the same clustering everywhere.

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "analysis/input_checks.h"
#include "model_core/analysis.h"

namespace tensorscope::model_core {
namespace {

using analysis_detail::checkFinite;
using analysis_detail::checkShape;
using analysis_detail::Layout;

/// Row-major n x dim points in double.
struct Points {
  std::vector<double> x;
  int n = 0;
  int dim = 0;
  const double* row(int i) const { return x.data() + static_cast<std::ptrdiff_t>(i) * dim; }
};

double squaredDistance(const double* a, const double* b, int dim) {
  double d = 0.0;
  for (int j = 0; j < dim; ++j) {
    const double t = a[j] - b[j];
    d += t * t;
  }
  return d;
}

/// Uniform in [0, 1) from the top 53 bits of one draw.
double uniform01(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

int uniformIndex(std::mt19937_64& rng, int n) {
  return std::min(static_cast<int>(uniform01(rng) * n), n - 1);
}

/// k-means++: the first centre uniformly, each next one with probability proportional to the
/// squared distance to the nearest centre chosen so far (uniformly if every point is already a
/// centre, which happens with duplicate points).
std::vector<double> plusPlusInit(const Points& p, int k, std::mt19937_64& rng) {
  std::vector<double> centroids(static_cast<std::size_t>(k) * p.dim);
  auto place = [&](int c, int i) { std::copy_n(p.row(i), p.dim, centroids.begin() + static_cast<std::ptrdiff_t>(c) * p.dim); };
  place(0, uniformIndex(rng, p.n));
  std::vector<double> nearest(static_cast<std::size_t>(p.n));
  for (int i = 0; i < p.n; ++i) nearest[i] = squaredDistance(p.row(i), centroids.data(), p.dim);
  for (int c = 1; c < k; ++c) {
    double total = 0.0;
    for (double d : nearest) total += d;
    int chosen = -1;
    if (total > 0.0) {
      const double target = uniform01(rng) * total;
      double cumulative = 0.0;
      for (int i = 0; i < p.n; ++i) {
        if (nearest[i] <= 0.0) continue;
        cumulative += nearest[i];
        chosen = i;  // the last candidate also absorbs rounding at the top of the range
        if (cumulative > target) break;
      }
    } else {
      chosen = uniformIndex(rng, p.n);
    }
    place(c, chosen);
    const double* centre = centroids.data() + static_cast<std::ptrdiff_t>(c) * p.dim;
    for (int i = 0; i < p.n; ++i) nearest[i] = std::min(nearest[i], squaredDistance(p.row(i), centre, p.dim));
  }
  return centroids;
}

/// Lloyd iterations from `centroids`; returns a result whose centroids are the means of its labels.
KMeansResult lloyd(const Points& p, int k, std::vector<double> centroids, int maxIterations, double shiftTolerance) {
  const int n = p.n;
  const int dim = p.dim;
  std::vector<int> labels(static_cast<std::size_t>(n), -1);
  std::vector<int> previous;
  std::vector<double> distance(static_cast<std::size_t>(n));
  std::vector<int> sizes(static_cast<std::size_t>(k));
  std::vector<double> means(centroids.size());
  KMeansResult out;
  for (int it = 1; it <= maxIterations; ++it) {
    previous = labels;
    // Assignment; strict < sends ties to the lowest index.
    std::fill(sizes.begin(), sizes.end(), 0);
    for (int i = 0; i < n; ++i) {
      int best = 0;
      double bestD = std::numeric_limits<double>::infinity();
      for (int c = 0; c < k; ++c) {
        const double d = squaredDistance(p.row(i), centroids.data() + static_cast<std::ptrdiff_t>(c) * dim, dim);
        if (d < bestD) {
          bestD = d;
          best = c;
        }
      }
      labels[i] = best;
      distance[i] = bestD;
      ++sizes[best];
    }
    // Re-seed each empty cluster with the farthest point of a cluster that can spare one
    // (k <= n guarantees one exists while a cluster is empty).
    for (int c = 0; c < k; ++c) {
      if (sizes[c] > 0) continue;
      int far = -1;
      for (int i = 0; i < n; ++i)
        if (sizes[labels[i]] > 1 && (far < 0 || distance[i] > distance[far])) far = i;
      --sizes[labels[far]];
      labels[far] = c;
      sizes[c] = 1;
      distance[far] = 0.0;
    }
    // Update: each centroid becomes the mean of its cluster.
    std::fill(means.begin(), means.end(), 0.0);
    for (int i = 0; i < n; ++i) {
      double* m = means.data() + static_cast<std::ptrdiff_t>(labels[i]) * dim;
      const double* x = p.row(i);
      for (int j = 0; j < dim; ++j) m[j] += x[j];
    }
    for (int c = 0; c < k; ++c)
      for (int j = 0; j < dim; ++j) means[static_cast<std::size_t>(c) * dim + j] /= sizes[c];
    double shift = 0.0;
    for (int c = 0; c < k; ++c)
      shift += squaredDistance(means.data() + static_cast<std::ptrdiff_t>(c) * dim,
                               centroids.data() + static_cast<std::ptrdiff_t>(c) * dim, dim);
    centroids.swap(means);
    out.iterations = it;
    if (labels == previous || shift <= shiftTolerance) {
      out.converged = true;
      break;
    }
  }
  out.k = k;
  out.dim = dim;
  out.inertia = 0.0;
  for (int i = 0; i < n; ++i)
    out.inertia += squaredDistance(p.row(i), centroids.data() + static_cast<std::ptrdiff_t>(labels[i]) * dim, dim);
  out.labels = std::move(labels);
  out.centroids = std::move(centroids);
  out.cluster_sizes = std::move(sizes);
  return out;
}

template <typename T>
KMeansResult kMeansImpl(const std::vector<T>& points, int n, int dim, int k, const KMeansOptions& o) {
  const std::string fn = "kMeans";
  checkShape(fn, Layout::Points, points.size(), n, dim);
  if (k < 1) throw std::invalid_argument(fn + ": k must be >= 1; got " + std::to_string(k));
  if (k > n)
    throw std::invalid_argument(fn + ": k = " + std::to_string(k) + " exceeds the number of points n = " +
                                std::to_string(n));
  if (o.max_iterations < 1)
    throw std::invalid_argument(fn + ": max_iterations must be >= 1; got " + std::to_string(o.max_iterations));
  if (!(o.tolerance >= 0.0) || !std::isfinite(o.tolerance))
    throw std::invalid_argument(fn + ": tolerance must be finite and >= 0; got " + std::to_string(o.tolerance));
  if (o.n_init < 1) throw std::invalid_argument(fn + ": n_init must be >= 1; got " + std::to_string(o.n_init));
  checkFinite(fn, Layout::Points, points.data(), n, dim);

  Points p;
  p.n = n;
  p.dim = dim;
  p.x.assign(points.begin(), points.end());
  // Scale-free tolerance: relative to the mean per-feature variance (as scikit-learn does).
  double variance = 0.0;
  for (int j = 0; j < dim; ++j) {
    double mean = 0.0;
    for (int i = 0; i < n; ++i) mean += p.row(i)[j];
    mean /= n;
    for (int i = 0; i < n; ++i) variance += (p.row(i)[j] - mean) * (p.row(i)[j] - mean);
  }
  const double shiftTolerance = o.tolerance * variance / (static_cast<double>(n) * dim);

  std::mt19937_64 rng(o.seed);
  KMeansResult best;
  for (int run = 0; run < o.n_init; ++run) {
    KMeansResult r = lloyd(p, k, plusPlusInit(p, k, rng), o.max_iterations, shiftTolerance);
    if (run == 0 || r.inertia < best.inertia) best = std::move(r);
  }
  return best;
}

}  // namespace

KMeansResult kMeans(const std::vector<float>& points, int n, int dim, int k, const KMeansOptions& options) {
  return kMeansImpl(points, n, dim, k, options);
}

KMeansResult kMeans(const std::vector<double>& points, int n, int dim, int k, const KMeansOptions& options) {
  return kMeansImpl(points, n, dim, k, options);
}

}  // namespace tensorscope::model_core
