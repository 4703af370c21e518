// PCA of a point set: centre, then a thin SVD of the centred data in double precision.

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
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

/// Flips `row` (length dim) so that its entry of largest magnitude is positive; among entries
/// within 1e-9 relative of that magnitude the first decides, so near-ties do not flip the sign.
void fixSign(double* row, int dim) {
  double maxAbs = 0.0;
  for (int j = 0; j < dim; ++j) maxAbs = std::max(maxAbs, std::abs(row[j]));
  if (maxAbs == 0.0) return;
  for (int j = 0; j < dim; ++j) {
    if (std::abs(row[j]) >= maxAbs * (1.0 - 1e-9)) {
      if (row[j] < 0.0)
        for (int t = 0; t < dim; ++t) row[t] = -row[t];
      return;
    }
  }
}

template <typename T>
PcaResult pcaImpl(const std::vector<T>& points, int n, int dim, int k) {
  const std::string fn = "pca";
  checkShape(fn, Layout::Points, points.size(), n, dim);
  if (n < 2) throw std::invalid_argument(fn + ": needs at least 2 points; got n = " + std::to_string(n));
  if (k < 1 || k > dim)
    throw std::invalid_argument(fn + ": components must be in [1, dim = " + std::to_string(dim) + "]; got " +
                                std::to_string(k));
  checkFinite(fn, Layout::Points, points.data(), n, dim);

  at::Tensor x = at::empty({n, dim}, at::TensorOptions().dtype(at::kDouble));  // [n, dim]
  std::transform(points.begin(), points.end(), x.data_ptr<double>(), [](T v) { return static_cast<double>(v); });
  const at::Tensor mean = x.mean(0);         // [dim]
  const at::Tensor centred = x - mean;       // [n, dim]
  const double totalSquares = centred.square().sum().item<double>();

  // A thin SVD gives min(n, dim) right singular vectors; only when more components are asked
  // for than that (fewer points than dimensions) is the full basis needed.
  const bool full = k > std::min(n, dim);
  at::Tensor s, vh;
  try {
    auto usv = at::linalg_svd(centred, full, c10::nullopt);
    s = std::get<1>(usv).contiguous();   // [min(n, dim)], descending
    vh = std::get<2>(usv);               // [min(n, dim) or dim, dim]
  } catch (const c10::Error& e) {
    throw std::runtime_error(fn + ": the SVD failed: " + e.what_without_backtrace());
  }
  at::Tensor comps = vh.slice(0, 0, k).contiguous().clone();  // [k, dim]
  double* c = comps.data_ptr<double>();
  for (int i = 0; i < k; ++i) fixSign(c + static_cast<std::ptrdiff_t>(i) * dim, dim);
  const at::Tensor coords = centred.matmul(comps.t()).contiguous();  // [n, k]

  PcaResult out;
  out.n_points = n;
  out.dim = dim;
  out.n_components = k;
  out.components.assign(c, c + static_cast<std::ptrdiff_t>(k) * dim);
  const double* xy = coords.data_ptr<double>();
  out.coordinates.assign(xy, xy + static_cast<std::ptrdiff_t>(n) * k);
  const at::Tensor meanC = mean.contiguous();
  out.mean.assign(meanC.data_ptr<double>(), meanC.data_ptr<double>() + dim);
  const double* sv = s.data_ptr<double>();
  const int nSingular = static_cast<int>(s.size(0));
  for (int i = 0; i < k; ++i) {
    const double s2 = i < nSingular ? sv[i] * sv[i] : 0.0;
    out.explained_variance.push_back(s2 / (n - 1));
    out.explained_variance_ratio.push_back(totalSquares > 0.0 ? s2 / totalSquares : 0.0);
  }
  return out;
}

}  // namespace

PcaResult pca(const std::vector<float>& points, int n, int dim, int components) {
  return pcaImpl(points, n, dim, components);
}

PcaResult pca(const std::vector<double>& points, int n, int dim, int components) {
  return pcaImpl(points, n, dim, components);
}

}  // namespace tensorscope::model_core
