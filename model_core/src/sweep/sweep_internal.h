#pragma once
// Helpers the sweep component's files share (model_core/sweep.h is the public side).

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

#include "model_core/run_config.h"
#include "model_core/run_files.h"
#include "model_core/sweep.h"
#include "spec/json_reader.h"

namespace tensorscope::model_core::sweep_internal {

inline constexpr int kVersion = 1;

class Problems : public spec::FieldReader {
 public:
  explicit Problems(std::string what) : what_(std::move(what)) {}
  void add(const std::string& field, const std::string& msg) { fail(field, msg); }
  [[noreturn]] void raise() const { throw std::invalid_argument(listProblems("invalid " + what_, lines())); }

 private:
  std::string what_;
};

std::string shortNumber(double v);
/// A trial directory's name: "000-mhsa-0.001-s1": the index (at least `width` digits), the labels
/// (cut to keep the name within kMaxTrialNameBytes; the index keeps cut names unique) and the seed.
std::string trialName(std::int64_t index, int width, const std::vector<std::pair<std::string, std::string>>& labels,
                      std::uint64_t seed);
/// Why a name or label cannot be printed as it is, or empty: control characters (C0, DEL, C1) would
/// reach terminals, Markdown, LaTeX and SVG raw.
std::string controlCharacterProblem(const std::string& s);
std::string firstEvalSplit(const RunConfig& c);
/// A seed added to a design by a settle round: the design's first trial in `trials` with `seed`
/// (its config's train.seed too), `index`, `round` and the name they give. Throws
/// std::invalid_argument when no trial has that design.
Trial addedSeedTrial(const std::vector<Trial>& trials, const std::string& design, std::uint64_t seed, std::int64_t index,
                     int round);

/// Splits "model.attention[1].core" into keys and indices ({"model"}, {"attention", 1}, {"core"}).
struct PathStep {
  std::string key;
  std::optional<std::size_t> index;
};
/// Throws std::invalid_argument for a malformed path.
std::vector<PathStep> parsePath(const std::string& path);

/// A record's value of a metric (or of tokens_per_second, elapsed_seconds) when it is one a run can
/// report: a damaged or absurd log gives no value rather than an "inf ± inf" or a -nan coordinate.
std::optional<double> metricOf(const MetricsRecord& rec, const std::string& name);

/// Fills the report's statistics from its designs' seed values (docs/sweeps.md, Statistics): each
/// design's 95% interval of the mean, its comparison with its baseline design, Holm's correction
/// across the comparisons and the verdicts. report_statistics.cpp.
void addReportStatistics(SweepReport& report);
/// "0.0035", "0.25", "1.00", "< 0.001": a p-value to two significant digits (at least two decimals).
std::string pValue(double p);
/// "p = 0.0035", "p < 0.001": as the verdicts print it.
std::string pText(double p);

}  // namespace tensorscope::model_core::sweep_internal
