#include "curve_series.h"

#include <algorithm>
#include <cmath>

namespace tensorscope::viz {

namespace {
QVector<double> toQVector(const std::vector<double>& v) { return QVector<double>(v.begin(), v.end()); }
}  // namespace

double CurvesPlot::Series::next(double value, double weight) {
  if (!smoothed(weight)) return value;
  if (!std::isfinite(value)) return std::numeric_limits<double>::quiet_NaN();  // a gap; state kept
  ema = std::isfinite(ema) ? weight * ema + (1.0 - weight) * value : value;
  return ema;
}

void CurvesPlot::Series::append(double step, double value, double weight) {
  if (!steps.empty() && step <= steps.back()) {
    const auto cut = std::lower_bound(steps.begin(), steps.end(), step) - steps.begin();
    steps.resize(cut);
    values.resize(cut);
    recompute(weight);
  }
  const double display = next(value, weight);
  steps.push_back(step);
  values.push_back(value);
  shown.push_back(display);
  line->addData(step, display);  // keys ascending: an O(1) append
  raw->addData(step, value);
}

void CurvesPlot::Series::recompute(double weight) {
  ema = std::numeric_limits<double>::quiet_NaN();
  shown.resize(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) shown[i] = next(values[i], weight);
  line->setData(toQVector(steps), toQVector(shown), true);
  raw->setData(toQVector(steps), toQVector(values), true);
}

}  // namespace tensorscope::viz
