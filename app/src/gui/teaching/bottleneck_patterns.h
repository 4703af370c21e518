#pragma once
/// The bottleneck lab's pure helpers (no widgets; BottleneckLab, bottleneck_lab.h, uses them):
/// checking that a map is an attention pattern the lab can fit, renormalising its rows, the
/// largest entry, float-to-double copies, short numbers, and the sentence that explains the
/// threshold of a fitted curve.

#include <QString>
#include <vector>

#include "model_core/host_tensor.h"
#include "model_core/labs.h"

namespace tensorscope::app::bottleneck {

/// `value` with `digits` significant digits ('g' format).
QString number(double value, int digits = 3);

/// The largest value, and 0 when every value is below 0 or there is none.
double maxValue(const std::vector<float>& values);

/// The values as double.
std::vector<double> toDouble(const std::vector<float>& values);

/// Row-stochastic check of a square map: an empty problem when fine, else what is wrong. Also
/// counts its zeros.
struct MapCheck {
  QString problem;     ///< refuses the map outright (shape, size, sign, row sums)
  int zeros = 0;       ///< entries <= 0 (a causal map): refused unless smoothed
};

/// Checks `map` (called `name` in the messages): square, minTokens..maxTokens tokens, finite
/// non-negative entries, rows summing to 1 (within 1e-3).
MapCheck checkMap(const model_core::HostTensor& map, const QString& name, int minTokens, int maxTokens);

/// Rows renormalised in float64, stored as float32 (rows summing to 0 are left as they are).
model_core::HostTensor renormalised(const model_core::HostTensor& map);

/// What the threshold of curve `c` means: `found` is its smallest head size with an exact fit
/// (-1: none), lo..hi the head sizes fitted, `worstBelow` the smallest error below `found` (-1:
/// none).
QString thresholdExplanation(const model_core::BottleneckCurve& c, int found, int lo, int hi, double worstBelow);

}  // namespace tensorscope::app::bottleneck
