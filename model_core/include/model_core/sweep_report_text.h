#pragma once
/// The texts of a sweep report's cells, one row per design, as the md report prints them
/// (docs/sweeps.md, Statistics): the report formatter and the explorer's verdict view (the
/// Experiments dock) both print these, so a verdict reads the same in a terminal, a paper and the
/// window. The numbers come from buildReport (report_statistics.cpp): nothing is computed here.

#include <string>
#include <vector>

#include "model_core/sweep.h"

namespace tensorscope::model_core {

struct ReportRowText {
  std::string design;
  std::string seeds;     ///< "3/4": finished of planned
  std::string mean_std;  ///< "2.4000 ± 0.1000", "0.500 ± –" (one seed), "–" (none finished)
  std::string ci95;      ///< the 95% CI of the mean, "[2.1516, 2.6484]" or "–"
  bool is_baseline = false;
  bool compared = false;  ///< has a comparison with its baseline design (the fields below)
  std::string baseline;
  std::string compared_seeds;  ///< "3 vs 3 (3 paired)"
  std::string difference;      ///< "-0.3000 [-0.5484, -0.0516] paired" or "–" (not tested)
  std::string welch_p, sign_flip_p, decided_by, p_holm;  ///< "0.021", "< 0.001" or "–"
  std::string verdict;
  std::string settle;  ///< under a settle rule: "settled at n = 5", …; else empty
  /// The budget match (where the sweep matches one): "+0.00%"; empty otherwise.
  std::string match_residual;
};

/// Every design of the report, in the report's order.
std::vector<ReportRowText> reportRowTexts(const SweepReport& report);
/// The rule of the verdicts in words (the md report's text above "Against the baseline"); empty
/// for a report without comparisons.
std::string reportDecisionRule(const SweepReport& report);
/// A budget match's residual (cost − target) / target as the reports print it: "+1.56%".
std::string matchResidualText(double residual);

}  // namespace tensorscope::model_core
