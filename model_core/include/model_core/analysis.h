#pragma once
/// Analysis tools over plain data for the UI: the core matrix C's stable rank and spectrum
/// ("number of heads"), PCA to a few components, and seedable k-means. Torch-free: matrices and
/// point sets are row-major std::vector buffers with explicit sizes, not HostTensor
/// (model_core/host_tensor.h): the inputs come as float (a snapshot's HostTensor values) or as
/// double (a spec's core entries, kept exact), and everything is computed in double.
///
/// Every function validates its input and throws std::invalid_argument with a message that
/// starts with the function's name and says what is wrong (size mismatch, which entry is NaN or
/// infinite, which parameter is out of range). The trainer's torch-side overloads of the core
/// analysis live in the private header model_core/src/analysis/core_analysis_torch.h.

#include <cstdint>
#include <vector>

namespace tensorscope::model_core {

// ---------------------------------------------------------------------------------------------
// Core matrix C: stable rank and singular spectrum
// ---------------------------------------------------------------------------------------------

/// Spectral facts about one matrix C (rows x cols).
struct CoreAnalysis {
  /// ||C||_F^2 / ||C||_2^2 = sum sigma_i^2 / max sigma_i^2, the "number of heads" of a THSA core
  /// (Tuformer; the paper misprints the denominator as max sigma_i). Scale-free, and in
  /// [1, min(rows, cols)] for a non-zero C (clamped to that range against rounding).
  /// Defined as 0 for the zero matrix, which has no heads.
  double stable_rank = 0.0;
  /// All min(rows, cols) singular values, descending (all zero for the zero matrix).
  std::vector<double> singular_values;
  double frobenius_norm = 0.0;  ///< ||C||_F = sqrt(sum of squared entries)
  double spectral_norm = 0.0;   ///< ||C||_2 = the largest singular value
  /// Number of singular values strictly above rank_tolerance.
  int numerical_rank = 0;
  /// The threshold numerical_rank uses: max(rows, cols) * DBL_EPSILON * spectral_norm (the
  /// LAPACK / NumPy matrix_rank convention); 0 for the zero matrix.
  double rank_tolerance = 0.0;
};

/// Stable rank, spectrum, norms and numerical rank of the row-major rows x cols matrix `values`.
/// Requires rows, cols >= 1, values.size() == rows * cols and finite entries.
CoreAnalysis analyzeCore(const std::vector<double>& values, int rows, int cols);
/// As above for float entries (computed in double).
CoreAnalysis analyzeCore(const std::vector<float>& values, int rows, int cols);

/// analyzeCore(values, rows, cols).stable_rank.
double stableRank(const std::vector<double>& values, int rows, int cols);
double stableRank(const std::vector<float>& values, int rows, int cols);

/// analyzeCore(values, rows, cols).singular_values: min(rows, cols) values, descending.
std::vector<double> singularValues(const std::vector<double>& values, int rows, int cols);
std::vector<double> singularValues(const std::vector<float>& values, int rows, int cols);

// ---------------------------------------------------------------------------------------------
// PCA
// ---------------------------------------------------------------------------------------------

/// Principal components of n points in dim dimensions.
struct PcaResult {
  int n_points = 0;
  int dim = 0;
  int n_components = 0;                         ///< k
  std::vector<double> coordinates;              ///< n x k, row-major: (x_i - mean) . component_j
  std::vector<double> components;               ///< k x dim, row-major, orthonormal rows
  std::vector<double> explained_variance;       ///< k sample variances (divided by n - 1), descending
  std::vector<double> explained_variance_ratio; ///< k fractions of the total variance; sum <= 1
  std::vector<double> mean;                     ///< dim entries, the centre that was subtracted
};

/// PCA of the row-major n x dim `points` to k = `components` axes: centre on the mean, then
/// SVD of the centred data. Needs n >= 2, dim >= 1, 1 <= components <= dim and finite values.
///
/// Sign convention, so plots do not flip between calls: in each component the entry of largest
/// magnitude is positive (among entries within 1e-9 relative of that magnitude, the first).
/// Components beyond the rank of the centred data have zero variance and an arbitrary (but
/// deterministic) orthonormal direction. When all points coincide every ratio is 0.
PcaResult pca(const std::vector<float>& points, int n, int dim, int components = 2);
PcaResult pca(const std::vector<double>& points, int n, int dim, int components = 2);

// ---------------------------------------------------------------------------------------------
// k-means
// ---------------------------------------------------------------------------------------------

/// Settings of kMeans beyond k.
struct KMeansOptions {
  int max_iterations = 300;  ///< Lloyd iterations per restart, >= 1
  /// Convergence: a restart stops when no label changes, or when the summed squared movement of
  /// the centroids in one iteration is <= tolerance * (mean per-feature variance of the data),
  /// which makes the tolerance scale-free (as in scikit-learn). >= 0.
  double tolerance = 1e-4;
  std::uint64_t seed = 0;  ///< seeds one std::mt19937_64; same seed and input -> identical result
  int n_init = 1;          ///< restarts (each with its own k-means++ init); the lowest inertia wins
};

/// A clustering of n points into k clusters.
struct KMeansResult {
  int k = 0;
  int dim = 0;
  std::vector<int> labels;          ///< n entries in [0, k)
  std::vector<double> centroids;    ///< k x dim, row-major; each the mean of its cluster
  std::vector<int> cluster_sizes;   ///< k entries, each >= 1
  double inertia = 0.0;             ///< sum of squared distances of points to their centroid
  int iterations = 0;               ///< Lloyd iterations of the returned restart
  bool converged = false;           ///< the returned restart met the criterion before max_iterations
};

/// k-means (Lloyd) with k-means++ initialisation of the row-major n x dim `points`.
/// Ties go to the lowest cluster index. A cluster left empty by an assignment is re-seeded with
/// the point farthest from its centroid (taken from a cluster with more than one point), so every
/// returned cluster is non-empty; duplicate points are fine. The returned labels and centroids
/// are consistent: each centroid is the mean of the points labelled with it, and inertia is their
/// within-cluster sum of squares. Randomness comes only from std::mt19937_64(options.seed).
/// Throws std::invalid_argument for k <= 0, k > n, a bad shape, non-finite values or options.
KMeansResult kMeans(const std::vector<float>& points, int n, int dim, int k,
                    const KMeansOptions& options = {});
KMeansResult kMeans(const std::vector<double>& points, int n, int dim, int k,
                    const KMeansOptions& options = {});

}  // namespace tensorscope::model_core
