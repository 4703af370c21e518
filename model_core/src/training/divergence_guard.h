#pragma once
/// Finite divergence (a loss that explodes but stays finite, e.g. a learning rate far too large):
/// trips when the loss stays above `factor` × the bar for `steps` consecutive steps. The bar is the
/// running minimum of the loss's moving average (weight 0.1 per step, so that one lucky batch does
/// not set it), but never below kLossFloor: a model that has learned its task has losses of 1e-8
/// and less, whose ratios are rounding noise (a copy task at step 35,000 went from a minimum of
/// 3.8e-247 to 9.9e-9 and was stopped as "diverged"; issue 33 review). Every input is a logged train
/// loss, so a resume rebuilds the same state from metrics.jsonl and decides exactly as the
/// uninterrupted run. Private to the trainer; a header so that the rule is unit-tested.

#include <algorithm>
#include <cstdint>
#include <limits>

namespace tensorscope::model_core {

class DivergenceGuard {
 public:
  /// Losses below this (in nats per predicted token) are all "learned": the bar never goes lower,
  /// so the guard trips only on a loss above factor × 0.01 (0.1 with the default factor).
  static constexpr double kLossFloor = 1e-2;

  DivergenceGuard(double factor, std::int64_t steps) : factor_(factor), steps_(steps) {}
  /// Feeds one step's loss; true when the guard trips.
  bool observe(double loss) {
    if (factor_ <= 0) return false;
    average_ = seen_ ? 0.9 * average_ + 0.1 * loss : loss;
    seen_ = true;
    minimum_ = std::min(minimum_, average_);
    over_ = loss > factor_ * minimum() ? over_ + 1 : 0;
    return over_ >= steps_;
  }
  bool above() const { return over_ > 0; }
  std::int64_t stepsAbove() const { return over_; }
  /// The bar the factor multiplies: the running minimum, at least kLossFloor.
  double minimum() const { return std::max(minimum_, kLossFloor); }
  double factor() const { return factor_; }

 private:
  double factor_;
  std::int64_t steps_;
  bool seen_ = false;
  double average_ = 0, minimum_ = std::numeric_limits<double>::infinity();
  std::int64_t over_ = 0;
};

}  // namespace tensorscope::model_core
