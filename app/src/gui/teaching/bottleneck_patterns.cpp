/// The bottleneck lab's pure helpers (bottleneck_patterns.h): map checks, renormalising, the
/// threshold's explanation.
#include "gui/teaching/bottleneck_patterns.h"

#include <QCoreApplication>
#include <QObject>
#include <algorithm>
#include <cmath>
#include <cstddef>

namespace tensorscope::app::bottleneck {

namespace {

/// The explanation's strings keep the lab's translation context.
QString tr(const char* text) { return QCoreApplication::translate("tensorscope::app::BottleneckLab", text); }

}  // namespace

QString number(double value, int digits) { return QString::number(value, 'g', digits); }

double maxValue(const std::vector<float>& values) {
  double m = 0;
  for (float v : values) m = std::max(m, static_cast<double>(v));
  return m;
}

std::vector<double> toDouble(const std::vector<float>& values) { return {values.begin(), values.end()}; }

MapCheck checkMap(const model_core::HostTensor& map, const QString& name, int minTokens, int maxTokens) {
  MapCheck out;
  const int n = map.rows();
  if (n <= 0 || map.cols() != n || map.values.size() != static_cast<std::size_t>(n) * n) {
    out.problem = QObject::tr("“%1” is not a square matrix, so it is not an attention pattern.").arg(name);
    return out;
  }
  if (n < minTokens || n > maxTokens) {
    out.problem = QObject::tr("“%1” is %2 × %2; the lab fits patterns of %3 to %4 tokens.")
                      .arg(name)
                      .arg(n)
                      .arg(minTokens)
                      .arg(maxTokens);
    return out;
  }
  for (int r = 0; r < n; ++r) {
    double sum = 0;
    for (int c = 0; c < n; ++c) {
      const float v = map.values[static_cast<std::size_t>(r) * n + c];
      if (!std::isfinite(v) || v < 0) {
        out.problem = QObject::tr("“%1” has a negative or non-finite entry in row %2: not an attention pattern.").arg(name).arg(r);
        return out;
      }
      if (v <= 0) ++out.zeros;
      sum += v;
    }
    if (std::abs(sum - 1.0) > 1e-3) {
      out.problem = QObject::tr("Row %2 of “%1” sums to %3, not 1: not a softmax over keys.").arg(name).arg(r).arg(sum, 0, 'g', 6);
      return out;
    }
  }
  return out;
}

/// Rows renormalised in float64, stored as float32.
model_core::HostTensor renormalised(const model_core::HostTensor& map) {
  model_core::HostTensor out = map;
  const int n = map.rows();
  for (int r = 0; r < n; ++r) {
    double sum = 0;
    for (int c = 0; c < n; ++c) sum += map.values[static_cast<std::size_t>(r) * n + c];
    if (sum <= 0) continue;
    for (int c = 0; c < n; ++c)
      out.values[static_cast<std::size_t>(r) * n + c] =
          static_cast<float>(map.values[static_cast<std::size_t>(r) * n + c] / sum);
  }
  return out;
}

QString thresholdExplanation(const model_core::BottleneckCurve& c, int found, int lo, int hi, double worstBelow) {
  const int n = c.n;
  QString text;
  if (found < 0) {
    text = tr("No head size in %1 … %2 reaches P (max error ≥ 1e-6). This P is reproduced exactly from d_p = %3 "
              "(the rank of its row-centred log P); widen the range.")
               .arg(lo)
               .arg(hi)
               .arg(std::max(1, c.required_rank));
  } else if (found == lo && found > 1 && c.required_rank < found) {
    text = tr("Exact (error < 1e-6) already at the smallest size fitted, d_p = %1; start the range lower to see the "
              "threshold (this P needs rank %2).")
               .arg(found)
               .arg(c.required_rank);
  } else {
    text = tr("Threshold found: d_p = %1 (the smallest d_p with max error < 1e-6). ").arg(found);
    if (c.required_rank == n - 1 && found == n - 1)
      text += tr("Exact from d_p = N − 1 = %1: each query row's constant is free (softmax ignores it), so log P "
                 "centred per row has rank ≤ N − 1 and a head of that size reproduces it. Theorem 1's d_p ≥ N = %2 is "
                 "sufficient, not necessary.")
                  .arg(n - 1)
                  .arg(n);
    else if (c.required_rank == 0)
      text += tr("Every row of this P is uniform: log P centred per row is 0, so any head (even zero weights) "
                 "reproduces it. A generic P needs N − 1 = %1.")
                  .arg(n - 1);
    else if (c.required_rank < n - 1)
      text += tr("This P needs only rank %1: log P centred per row has rank %1 < N − 1 = %2 (it is the softmax of "
                 "rank-%1 logits). A generic P needs N − 1 = %2; Theorem 1's d_p ≥ N = %3 is sufficient.")
                  .arg(c.required_rank)
                  .arg(n - 1)
                  .arg(n);
    else
      text += tr("The construction is exact from d_p = %1 (rank of the row-centred log P); the optimiser got below "
                 "1e-6 at d_p = %2.")
                  .arg(c.required_rank)
                  .arg(found);
    if (worstBelow >= 0) text += tr(" Below it the error stays ≥ %1.").arg(number(worstBelow));
  }
  return text;
}

}  // namespace tensorscope::app::bottleneck
