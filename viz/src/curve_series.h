#pragma once
// One curve of CurvesPlot: the raw points as appended, the values as displayed (EMA-smoothed
// unless smoothing is off or the curve lives on the learning-rate axis), and its two graphs.

#include <limits>
#include <vector>

#include "qcp.h"
#include "viz/curves_plot.h"

namespace tensorscope::viz {

struct CurvesPlot::Series {
  QString run, metric;
  bool right = false;  // on the learning-rate axis; never smoothed
  std::vector<double> steps, values, shown;
  double ema = std::numeric_limits<double>::quiet_NaN();  // EMA of the finite values so far
  QCPGraph* line = nullptr;  // displayed values
  QCPGraph* raw = nullptr;   // raw values, drawn faintly while smoothing

  bool smoothed(double weight) const { return weight > 0 && !right; }
  /// Appends a point (O(1) on the graphs). A step not after the last one drops the tail first:
  /// the run was resumed from an earlier checkpoint.
  void append(double step, double value, double weight);
  /// Recomputes the displayed values for a new EMA weight and refills both graphs.
  void recompute(double weight);

 private:
  double next(double value, double weight);
};

}  // namespace tensorscope::viz
