// Stable rank and singular spectrum of a core matrix C, for std::vector and at::Tensor input.
// Both paths validate, copy into a CPU double tensor and share analyzeChecked().

#include <ATen/ATen.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "analysis/core_analysis_torch.h"
#include "analysis/input_checks.h"
#include "model_core/analysis.h"

namespace tensorscope::model_core {
namespace {

using analysis_detail::checkFinite;
using analysis_detail::checkShape;
using analysis_detail::Layout;

/// Analysis of a finite, contiguous CPU double matrix [rows, cols] with rows, cols >= 1.
CoreAnalysis analyzeChecked(const at::Tensor& c, const std::string& fn) {
  const auto rows = c.size(0);
  const auto cols = c.size(1);
  const auto count = rows * cols;
  const auto minDim = std::min(rows, cols);
  const double* p = c.data_ptr<double>();

  CoreAnalysis out;
  out.singular_values.assign(static_cast<std::size_t>(minDim), 0.0);
  double maxAbs = 0.0;
  for (int64_t i = 0; i < count; ++i) maxAbs = std::max(maxAbs, std::abs(p[i]));
  if (maxAbs == 0.0) return out;  // the zero matrix: no heads, all norms 0

  // Stable rank is scale-free; dividing by the largest entry first keeps ||C||_F^2 and
  // sigma_max^2 clear of overflow and underflow for any finite C.
  double frob2 = 0.0;
  for (int64_t i = 0; i < count; ++i) {
    const double v = p[i] / maxAbs;
    frob2 += v * v;
  }
  at::Tensor sv;
  try {
    sv = at::linalg_svdvals(c / maxAbs).contiguous();  // [min(rows, cols)], descending
  } catch (const c10::Error& e) {
    throw std::runtime_error(fn + ": the SVD failed: " + e.what_without_backtrace());
  }
  const double* s = sv.data_ptr<double>();
  const double top = s[0];  // >= 1: the scaled matrix has an entry of magnitude 1
  const double relTol = static_cast<double>(std::max(rows, cols)) * DBL_EPSILON * top;
  for (int64_t i = 0; i < minDim; ++i) {
    out.singular_values[static_cast<std::size_t>(i)] = s[i] * maxAbs;
    if (s[i] > relTol) ++out.numerical_rank;
  }
  out.frobenius_norm = std::sqrt(frob2) * maxAbs;
  out.spectral_norm = top * maxAbs;
  out.rank_tolerance = relTol * maxAbs;
  out.stable_rank = std::clamp(frob2 / (top * top), 1.0, static_cast<double>(minDim));
  return out;
}

template <typename T>
CoreAnalysis analyzeValues(const std::string& fn, const std::vector<T>& values, int rows, int cols) {
  checkShape(fn, Layout::Matrix, values.size(), rows, cols);
  checkFinite(fn, Layout::Matrix, values.data(), rows, cols);
  at::Tensor c = at::empty({rows, cols}, at::TensorOptions().dtype(at::kDouble));
  double* p = c.data_ptr<double>();
  std::transform(values.begin(), values.end(), p, [](T v) { return static_cast<double>(v); });
  return analyzeChecked(c, fn);
}

std::string shapeText(const at::Tensor& t) {
  std::string s = "[";
  for (int64_t d = 0; d < t.dim(); ++d) s += (d ? ", " : "") + std::to_string(t.size(d));
  return s + "]";
}

CoreAnalysis analyzeTensor(const std::string& fn, const at::Tensor& core) {
  if (!core.defined()) throw std::invalid_argument(fn + ": the tensor is undefined");
  if (core.dim() != 2)
    throw std::invalid_argument(fn + ": expected a 2-D tensor [rows, cols]; got a " + std::to_string(core.dim()) +
                                "-D tensor " + shapeText(core));
  if (core.size(0) < 1 || core.size(1) < 1)
    throw std::invalid_argument(fn + ": expected a non-empty matrix; got shape " + shapeText(core));
  if (!at::isFloatingType(core.scalar_type()))
    throw std::invalid_argument(fn + ": expected a floating-point tensor (float or double); got dtype " +
                                std::string(c10::toString(core.scalar_type())));
  // One copy to CPU double (a no-op for a contiguous CPU double tensor); works from any device.
  const at::Tensor c = core.detach().to(at::kCPU, at::kDouble).contiguous();
  checkFinite(fn, Layout::Matrix, c.data_ptr<double>(), c.size(0), c.size(1));
  return analyzeChecked(c, fn);
}

}  // namespace

CoreAnalysis analyzeCore(const std::vector<double>& values, int rows, int cols) {
  return analyzeValues("analyzeCore", values, rows, cols);
}

CoreAnalysis analyzeCore(const std::vector<float>& values, int rows, int cols) {
  return analyzeValues("analyzeCore", values, rows, cols);
}

double stableRank(const std::vector<double>& values, int rows, int cols) {
  return analyzeValues("stableRank", values, rows, cols).stable_rank;
}

double stableRank(const std::vector<float>& values, int rows, int cols) {
  return analyzeValues("stableRank", values, rows, cols).stable_rank;
}

std::vector<double> singularValues(const std::vector<double>& values, int rows, int cols) {
  return analyzeValues("singularValues", values, rows, cols).singular_values;
}

std::vector<double> singularValues(const std::vector<float>& values, int rows, int cols) {
  return analyzeValues("singularValues", values, rows, cols).singular_values;
}

CoreAnalysis analyzeCore(const at::Tensor& core) { return analyzeTensor("analyzeCore", core); }

double stableRank(const at::Tensor& core) { return analyzeTensor("stableRank", core).stable_rank; }

}  // namespace tensorscope::model_core
