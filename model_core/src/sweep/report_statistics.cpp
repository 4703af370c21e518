// The statistics of a sweep report: each design's interval of the mean, its comparison with its
// baseline design, Holm's correction and the verdicts (docs/sweeps.md, Statistics; the tests
// against hand-computed values are tests/stats and tests/model_core/sweep).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <string>

#include "stats/statistics.h"
#include "sweep/sweep_internal.h"

namespace tensorscope::model_core::sweep_internal {

std::string pValue(double p) {
  if (p < 0.001) return "< 0.001";
  const int decimals = std::max(2, 1 - int(std::floor(std::log10(p))));
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, p);
  return buf;
}

std::string pText(double p) { return p < 0.001 ? "p < 0.001" : "p = " + pValue(p); }

namespace {

std::vector<double> valuesOf(const DesignSummary& d) {
  std::vector<double> v;
  for (const auto& [seed, x] : d.seed_values) v.push_back(x);
  return v;
}

/// "n = 5", or "n = 5 and 3" where the two designs finished different numbers of seeds.
std::string nText(int n, int nBaseline) {
  return "n = " + std::to_string(n) + (n == nBaseline ? "" : " and " + std::to_string(nBaseline));
}

DesignComparison compare(const DesignSummary& d, const DesignSummary& base, double alpha) {
  DesignComparison c;
  c.baseline = base.design;
  c.n = int(d.seed_values.size());
  c.n_baseline = int(base.seed_values.size());
  std::map<std::uint64_t, double> baseBySeed(base.seed_values.begin(), base.seed_values.end());
  std::vector<double> diffs;
  for (const auto& [seed, x] : d.seed_values)
    if (auto it = baseBySeed.find(seed); it != baseBySeed.end()) diffs.push_back(x - it->second);
  c.pairs = int(diffs.size());
  if (c.pairs >= 1 && diffs.size() <= stats::kMaxSignFlipPairs) c.sign_flip_p = stats::signFlipPValue(diffs);
  c.tested = c.n >= 2 && c.n_baseline >= 2;
  if (!c.tested) {
    c.verdict = "not tested at " + nText(c.n, c.n_baseline) + " (two finished seeds of each design are needed)";
    return c;
  }
  const auto welch = stats::welchTest(valuesOf(d), valuesOf(base), 0.95);
  c.welch_t = welch.t, c.welch_df = welch.df, c.welch_p = welch.p;
  c.paired = c.pairs == c.n && c.pairs == c.n_baseline;  // the same seeds finished
  const auto interval = c.paired ? stats::pairedTTest(diffs, 0.95) : welch;
  c.difference = interval.difference, c.ci_low = interval.low, c.ci_high = interval.high;
  // The rule, fixed before any data: the exact sign-flip test decides where the pairs are enough for
  // it to reach alpha at all (2 / 2^pairs <= alpha), Welch's test otherwise.
  if (c.sign_flip_p && std::size_t(c.pairs) >= stats::signFlipPairsNeeded(alpha)) {
    c.decided_by = "sign-flip";
    c.p = *c.sign_flip_p;
  } else {
    c.decided_by = "welch";
    c.p = c.welch_p;
  }
  // The deciding test's estimate gives the direction (addReportStatistics keeps it only where the
  // difference is established): the mean paired difference for the sign-flip test (the difference of
  // means where the same seeds finished), the difference of means for Welch's.
  const double estimate = c.decided_by == "sign-flip" ? stats::mean(diffs) : welch.difference;
  c.direction = estimate < 0 ? -1 : estimate > 0 ? 1 : 0;
  return c;
}

}  // namespace

void addReportStatistics(SweepReport& r) {
  for (auto& d : r.designs) {
    if (!d.hasStd()) continue;
    const double n = double(d.finished);
    const double half = stats::studentTQuantile(0.975, n - 1) * d.std / std::sqrt(n);
    d.ci_low = d.mean - half, d.ci_high = d.mean + half;
  }
  if (!r.baseline) return;
  const auto axis = std::find_if(r.axes.begin(), r.axes.end(), [&](const SweepAxis& a) { return a.name == r.baseline->axis; });
  if (axis == r.axes.end()) return;
  const std::size_t ax = std::size_t(axis - r.axes.begin());
  // Each design's baseline: the design with the same labels but the baseline's on its axis.
  std::map<std::vector<std::pair<std::string, std::string>>, std::size_t> byLabels;
  for (std::size_t i = 0; i < r.designs.size(); ++i) byLabels[r.designs[i].labels] = i;
  std::vector<std::size_t> tested;
  for (auto& d : r.designs) {
    if (d.labels.size() <= ax) continue;
    if (d.labels[ax].second == r.baseline->label) {
      d.is_baseline = true;
      continue;
    }
    auto labels = d.labels;
    labels[ax].second = r.baseline->label;
    const auto it = byLabels.find(labels);
    if (it == byLabels.end()) continue;
    if (!r.settle) {
      d.comparison = compare(d, r.designs[it->second], r.alpha);
      continue;
    }
    // Seeds until settled: a design is compared with its baseline on the seeds it was given (the
    // baseline has more where other designs needed more), so a settled verdict stays as it settled.
    std::set<std::uint64_t> seeds;
    for (const auto& [t, st] : r.trials)
      if (t.design == d.design) seeds.insert(t.seed);
    DesignSummary base = r.designs[it->second];
    base.seed_values.erase(std::remove_if(base.seed_values.begin(), base.seed_values.end(),
                                          [&](const std::pair<std::uint64_t, double>& v) { return !seeds.count(v.first); }),
                           base.seed_values.end());
    d.comparison = compare(d, base, r.alpha);
  }
  std::vector<double> ps;
  for (std::size_t i = 0; i < r.designs.size(); ++i)
    if (r.designs[i].comparison && r.designs[i].comparison->tested) tested.push_back(i), ps.push_back(r.designs[i].comparison->p);
  r.comparisons_tested = int(tested.size());
  const auto adjusted = stats::holmAdjust(ps);
  for (std::size_t k = 0; k < tested.size(); ++k) {
    auto& c = *r.designs[tested[k]].comparison;
    c.p_holm = adjusted[k];
    if (c.p_holm <= r.alpha && c.direction != 0) {
      c.verdict = std::string(c.direction < 0 ? "lower " : "higher ") + r.metric + " than " + c.baseline + ", " + pText(c.p_holm);
    } else {
      c.direction = 0;
      c.verdict = "no difference established at " +
                  (c.decided_by == "sign-flip" ? "n = " + std::to_string(c.pairs) : nText(c.n, c.n_baseline));
    }
  }
}

}  // namespace tensorscope::model_core::sweep_internal
