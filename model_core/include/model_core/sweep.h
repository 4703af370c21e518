#pragma once
/// Design-space experiments (issue 14): a sweep file (a base run config, axes, seeds, a budget per
/// trial, an optional parameter-budget rule and the metric to compare), its expansion into trials,
/// the files of a sweep directory, and the report of its results. Torch-free: the command line
/// trains the trials; the fuzz harness builds this reader alone. docs/sweeps.md is the user's guide.

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "model_core/run_config.h"

namespace tensorscope::model_core {

inline constexpr const char* kSweepFormat = "tensorscope.sweep";
inline constexpr const char* kSweepPlanFormat = "tensorscope.sweep_plan";
inline constexpr const char* kTrialResultFormat = "tensorscope.trial_result";
/// Most trials one sweep may expand into (a bound on what a file can ask for).
inline constexpr std::int64_t kMaxSweepTrials = 4096;
/// Longest trial directory name (NAME_MAX is 255): longer label combinations are cut, and the index
/// that starts every name keeps them unique.
inline constexpr std::size_t kMaxTrialNameBytes = 240;
/// Bounds of a trial result's text fields.
inline constexpr std::size_t kMaxTrialMessageBytes = 4096;
inline constexpr std::size_t kMaxTrialWhereBytes = 300;

/// One value of an axis: the config fields it sets (dotted paths into the run config's JSON, e.g.
/// "model.attention.core" or "train.lr"; a path through an array without an index sets every
/// element, "model.attention[1].causal" one of them; null removes the field) and its label in
/// trial names and reports.
struct SweepAxisValue {
  std::string label;
  nlohmann::json set = nlohmann::json::object();
  std::string solve;  ///< on the parameter match's axis: this value's size to solve (else the match's)
};

struct SweepAxis {
  std::string name;
  std::vector<SweepAxisValue> values;
};

/// "Match the attention parameters of the reference design": every trial whose value on `axis` is
/// not `reference` gets the size named by `solve` that brings its attention layers' trainable
/// parameter count closest to that of the reference trial with the same other values; the plan is
/// refused when the closest is further than `tolerance` (relative).
struct ParameterMatch {
  std::string axis;
  std::string reference;
  /// match_parameters: head_size (D, with R = H·D where R was H·D), heads (H, likewise), rank (R)
  /// or d_model (F). "match" (on set): a size of spec::budgetSizeNames() (H, kv_groups, D, R, F, P,
  /// c, kv_rank, q_rank, rope_dim, core_rank) or "any" (every free size, the closest).
  std::string solve = "head_size";
  double tolerance = 0.01;
  /// Empty: "match_parameters" (the attention parameters, summed over layers). "params", "kv" or
  /// "flops": "match", through the cost model's matcher (spec::matchBudget) layer by layer on the
  /// trainable parameters, the KV-cache elements per token or the training FLOPs per token.
  std::string on;
};

/// Which number a sweep compares: an evaluation record's field on one split.
struct SweepMetric {
  std::string name = "loss";  ///< loss (lower is better), accuracy or exact_match (higher is better)
  std::string split;          ///< empty: the task's first evaluation split
  bool higherIsBetter() const { return name != "loss"; }
};

/// The design every other design of a sweep is compared with (reports, docs/sweeps.md Statistics):
/// `label` on `axis`; a design is compared with the baseline design that has the same other labels.
struct SweepBaseline {
  std::string axis;
  std::string label;
};

/// The significance level of sweep reports' verdicts when the file gives none.
inline constexpr double kDefaultSweepAlpha = 0.05;

struct SweepFile {
  std::string name;
  std::string description;
  nlohmann::json base;  ///< a complete run config ("tensorscope.run_config"), the file's "set" applied
  std::vector<SweepAxis> axes;
  std::vector<std::uint64_t> seeds{1};  ///< train.seed of each repeat
  std::int64_t steps = 0;               ///< per trial; 0: the base config's train.steps
  double seconds = 0;                   ///< per trial wall-clock limit; 0: none
  std::optional<ParameterMatch> match;
  SweepMetric metric;
  /// "baseline": absent means the parameter match's reference on its axis, else the first value of
  /// the first axis (baselineOf).
  std::optional<SweepBaseline> baseline;
  double alpha = kDefaultSweepAlpha;  ///< "alpha": the verdicts' family-wise significance level, in (0, 0.5]
};

/// The sweep's baseline: its "baseline", else the parameter match's reference, else the first value
/// of the first axis; none for a sweep without axes.
std::optional<SweepBaseline> baselineOf(const SweepFile& sweep);

/// Parses a sweep file. `baseDir` resolves "base_file" (a run config path relative to the sweep
/// file). Throws std::invalid_argument listing every problem ("field: message" lines).
SweepFile sweepFromJson(const std::string& text, const std::string& baseDir = ".");
SweepFile readSweepFile(const std::string& path);
std::string sweepToJson(const SweepFile& sweep);

/// One trial of a plan: its place in the grid and its complete run config.
struct Trial {
  std::int64_t index = 0;
  std::string name;  ///< "007-skip_left-s2": the trial directory's name (at most kMaxTrialNameBytes)
  std::vector<std::pair<std::string, std::string>> labels;  ///< (axis, value label), in axis order
  std::uint64_t seed = 1;
  std::string design;                               ///< the labels joined: what seeds are averaged over
  RunConfig config;
  std::int64_t attention_parameters = 0;            ///< trainable, all attention layers
  std::string matched;                              ///< what the parameter match set ("D=13"), or empty
  /// "match" only: the matched cost ("kv"), the trial's and the reference's (first layer's figures
  /// summed over layers) and the residual (cost - target) / target.
  std::string match_on;
  double match_cost = 0, match_target = 0, match_residual = 0;
  double attention_gflop_per_step = 0;              ///< forward + backward (3x forward) of the attention layers
  /// 0: planned from the sweep file; r > 0: a seed added by round r of `sweep run --until-settled`
  /// (its design's trial of the file with another seed; plan.json says so).
  int round = 0;
};

/// Expands the grid (axes in order, seeds innermost), applies the budget and the parameter match,
/// and validates every trial's config. Throws std::invalid_argument naming each trial and problem.
std::vector<Trial> expandSweep(const SweepFile& sweep);

/// Attention layers' trainable parameters of a config (the quantity the parameter match compares).
std::int64_t attentionParameters(const RunConfig& config);

/// Sets a dotted path of a run config's JSON (see SweepAxisValue). Throws std::invalid_argument.
void setConfigPath(nlohmann::json& config, const std::string& path, const nlohmann::json& value);

// ---- The sweep directory ------------------------------------------------------------------------
// DIR/sweep.json             the sweep file (as planned)
// DIR/plan.json              the trials: index, name, labels, seed, parameters, cost
// DIR/trials/NAME/run.json   the trial's complete run config (tensorscope train --config takes it)
// DIR/trials/NAME/run/       its run directory (checkpoints, metrics.jsonl)
// DIR/trials/NAME/result.json  its outcome, written atomically when it ends (trial_result)
// DIR/trials/NAME/lock       held (flock) while a process trains it
// DIR/slurm.json             submitted job arrays (sweep submit --slurm)

std::string planToJson(const SweepFile& sweep, const std::vector<Trial>& trials);
/// Writes DIR/sweep.json, DIR/plan.json, each trial's run.json (atomically) and DIR/plan.check (the
/// digest of what was checked, so later commands need not expand the sweep again). Refuses a DIR
/// that holds a different plan (trials would be mixed), a path with a control character or one too
/// long for its trials' files, before creating anything; the same plan again changes nothing.
void writeSweepDirectory(const std::string& dir, const SweepFile& sweep, const std::vector<Trial>& trials);

// ---- Seeds until settled (sweep run --until-settled; docs/sweeps.md) -----------------------------
inline constexpr const char* kSweepSettleFormat = "tensorscope.sweep_settle";
/// The rule of a sweep run until its verdicts settle (DIR/settle.json): each round adds one seed to
/// the designs whose verdict against the baseline is still open, until none is open or a design
/// has `max_seeds`. A sweep that starts with n0 seeds is looked at, at most, at n0, n0 + 1, …,
/// max_seeds seeds: looks() = max_seeds - n0 + 1. Every look's report decides at alpha / looks()
/// (Bonferroni over the looks), so the chance that any look declares a difference where there is
/// none is at most alpha over the whole sequence, however many rounds it takes.
struct SettleRule {
  double alpha = kDefaultSweepAlpha;
  int max_seeds = 10;
  int initial_seeds = 1;  ///< n0: the sweep file's seeds
  int looks() const { return max_seeds - initial_seeds + 1; }
  double alphaPerLook() const { return alpha / double(looks()); }
};
/// Parses settle.json. Throws std::invalid_argument naming the path and the field.
SettleRule parseSettleRule(const std::string& text, const std::string& path);
std::string settleRuleToJson(const SettleRule& rule);

/// A planned sweep read back: the sweep file and its trials (configs from run.json).
struct SweepPlan {
  std::string dir;
  SweepFile sweep;
  std::vector<Trial> trials;
  std::optional<SettleRule> settle;  ///< DIR/settle.json: the sweep runs until settled under this rule
  std::string trialDir(const Trial& t) const { return dir + "/trials/" + t.name; }
  std::string runDir(const Trial& t) const { return trialDir(t) + "/run"; }
};
/// Throws std::invalid_argument for a directory that is not a sweep or whose files are damaged.
/// Where DIR/plan.check matches sweep.json, plan.json and every run.json, the trials are read from
/// those files; otherwise the sweep is expanded again and compared (and plan.check rewritten).
SweepPlan readSweepPlan(const std::string& dir);

/// Records `rule` as the sweep's settle rule (DIR/settle.json, atomically). A sweep to which a round
/// has added seeds keeps the rule it was run under: another one is refused, saying both (a changed
/// alpha or cap would make the error bound untrue). Throws std::invalid_argument.
void recordSettleRule(SweepPlan& plan, const SettleRule& rule);

struct SweepReport;

/// One round of seeds until settled, decided from the report of the ended trials.
struct SettleRound {
  int round = 0;                        ///< the round these trials would be (1 for the first added seed)
  std::uint64_t seed = 0;               ///< the seed they train (one past every seed of the plan)
  std::vector<std::string> open;        ///< designs whose verdict is open and below the cap: they get `seed`
  std::vector<std::string> at_cap;      ///< open, but at max_seeds: no more seeds
  std::vector<std::string> settled;     ///< a difference established
  std::vector<Trial> added;             ///< the next round's trials (the open designs and their baselines); empty: done
};
/// What the next round adds: every non-baseline design whose comparison has not established a
/// difference (report built under the plan's settle rule) and has fewer than max_seeds seeds gets
/// the next seed, and so does its baseline design (the seeds stay paired). Needs plan.settle.
/// Throws std::invalid_argument where the plan would pass kMaxSweepTrials.
SettleRound planSettleRound(const SweepPlan& plan, const SweepReport& report);
/// Adds trials to a planned sweep: their directories and run.json first, then plan.json
/// (atomically: the commit; a crash before it leaves the old plan and unused folders), then
/// plan.check. `plan` is updated.
void extendSweepPlan(SweepPlan& plan, const std::vector<Trial>& added);

/// The outcome of a trial (result.json).
struct TrialResult {
  std::string status;   ///< finished, diverged or failed
  std::string message;
  std::int64_t steps = 0;
  double wall_seconds = 0;        ///< training time over every session of the trial (elapsed_seconds)
  double tokens_per_second = 0;   ///< median over its training records
  std::optional<double> final_metric;  ///< the metric at the last evaluation
  std::optional<double> best_metric;   ///< the best over its evaluations
  std::int64_t best_step = -1;
  nlohmann::json final_eval = nlohmann::json::object();  ///< split -> {loss, accuracy, exact_match} at the end
  std::string where;  ///< "local" or "slurm job J_I", for people
};
/// Cuts the message to kMaxTrialMessageBytes (the reader refuses longer ones).
std::string trialResultToJson(const TrialResult& r);
/// Checks every field: status, text lengths, steps in [0, 2^40], best_step in [-1, steps],
/// wall_seconds in [0, 1e9], tokens_per_second in [0, 1e12], metrics finite and in their ranges
/// (accuracy and exact_match in [0, 1], loss in [0, 1e9]; final_metric and best_metric as `metric`,
/// or as a loss when empty). Throws std::invalid_argument naming the path and every problem.
TrialResult parseTrialResult(const std::string& text, const std::string& path, const std::string& metric = "");
/// Whether a metric's value is one a run can report (finite and in the metric's range above).
bool plausibleMetric(const std::string& name, double value);

/// Reads a trial's metrics log into a result (status and message are the caller's).
TrialResult summariseTrialRun(const std::string& runDir, const SweepMetric& metric, const std::string& firstSplit);

enum class TrialState { Pending, Running, Interrupted, Finished, Diverged, Failed };
const char* trialStateName(TrialState s);
struct TrialStatus {
  TrialState state = TrialState::Pending;
  std::int64_t step = 0;  ///< last training step recorded
  std::optional<TrialResult> result;
  /// Set when result.json cannot be read: why, and how to redo the trial. The trial then counts as
  /// failed (and --retry-failed redoes it); the rest of the sweep reads on.
  std::string damaged;
};
/// What the files say of a trial: result.json (finished, diverged, failed), a held lock (running),
/// a run directory with a checkpoint (interrupted) or nothing (pending). Never throws for a
/// damaged result.json (see TrialStatus::damaged).
TrialStatus trialStatus(const SweepPlan& plan, const Trial& t);
/// Clears a failed trial's outcome so it runs again: removes result.json, or keeps a damaged one
/// as result.json.damaged (nothing a person might want to look at is deleted).
void clearTrialResult(const SweepPlan& plan, const Trial& t, const TrialStatus& status);

// ---- Slurm jobs of a sweep (DIR/slurm.json) -----------------------------------------------------
inline constexpr const char* kSlurmJobsFormat = "tensorscope.slurm_jobs";
struct SlurmJob {
  std::string id;                     ///< Slurm's job id (digits)
  std::vector<std::int64_t> indices;  ///< the trials of its array
  std::string script;                 ///< the sbatch script it ran
};
/// Parses slurm.json. Throws std::invalid_argument naming the path and the field.
std::vector<SlurmJob> parseSlurmJobs(const std::string& text, const std::string& path);
/// DIR/slurm.json, or no jobs when the sweep was never submitted.
std::vector<SlurmJob> readSlurmJobs(const std::string& dir);
void writeSlurmJobs(const std::string& dir, const std::vector<SlurmJob>& jobs);

// ---- Reports ------------------------------------------------------------------------------------
/// A design against its baseline design (docs/sweeps.md, Statistics): the difference of the final
/// metric (design - baseline) with its 95% confidence interval, Welch's t-test over every finished
/// seed, the exact sign-flip test over the seeds both finished, the deciding p-value after Holm's
/// correction across the report's comparisons, and the verdict in fixed words.
struct DesignComparison {
  std::string baseline;  ///< the baseline design's name
  int n = 0, n_baseline = 0;  ///< finished seeds of each
  int pairs = 0;              ///< seeds both finished
  /// Both have two finished seeds or more: the statistics below are defined (else only the verdict,
  /// "not tested …", is).
  bool tested = false;
  /// The two finished the same seeds: the difference and interval are the paired t's over the pairs;
  /// otherwise Welch's (difference of means, Welch-Satterthwaite interval).
  bool paired = false;
  double difference = 0, ci_low = 0, ci_high = 0;
  double welch_t = 0, welch_df = 0, welch_p = 1;
  std::optional<double> sign_flip_p;  ///< over the pairs (none without a pair, or above 40 pairs)
  std::string decided_by;             ///< "sign-flip" or "welch" (the rule: docs/sweeps.md)
  double p = 1;                       ///< the deciding test's p
  double p_holm = 1;                  ///< p after Holm's step-down correction
  int direction = 0;                  ///< -1 lower, +1 higher than the baseline where established, else 0
  std::string verdict;  ///< "lower loss than mhsa, p = 0.003", "no difference established at n = 5", …
};

struct DesignSummary {
  std::string design;
  std::vector<std::pair<std::string, std::string>> labels;  ///< without the seed
  std::int64_t attention_parameters = 0;
  /// The budget match of its trials (Trial::matched, match_on, …), where the sweep matches one.
  std::string matched, match_on;
  double match_cost = 0, match_target = 0, match_residual = 0;
  int trials = 0, finished = 0;
  double mean = 0, std = 0;  ///< of the final metric over finished seeds (std: sample; 0 where undefined)
  /// The sample standard deviation is defined from two finished seeds on; reports print "–" (md,
  /// LaTeX), leave it empty (csv) or null (json) and draw no error bar below that.
  bool hasStd() const { return finished > 1; }
  double best_mean = 0;
  double tokens_per_second = 0;
  double best_step = 0;  ///< mean step of the best evaluation
  /// The 95% confidence interval of the mean (mean ± t_{0.975, n-1} std / sqrt(n)), where hasStd().
  double ci_low = 0, ci_high = 0;
  std::vector<std::pair<std::uint64_t, double>> seed_values;  ///< (seed, final metric) of each finished seed
  bool is_baseline = false;  ///< this design is a baseline (others are compared with it)
  /// Under a settle rule (SweepReport::settle), for a compared design: "settled" (a difference
  /// established), "cap" (open at max_seeds seeds) or "open" (more seeds would be added); its
  /// seeds are `trials`. Empty otherwise.
  std::string settle_state;
  std::optional<DesignComparison> comparison;  ///< against its baseline design (none for a baseline)
};
/// The metric over training steps: design -> step -> the values of the seeds that reached it.
using SweepCurves = std::map<std::string, std::map<std::int64_t, std::vector<double>>>;
struct SweepReport {
  std::string name, metric, split;
  bool higher_is_better = false;
  std::vector<SweepAxis> axes;  ///< the sweep's axes (the figure's x and categories)
  std::vector<std::pair<Trial, TrialStatus>> trials;
  std::vector<DesignSummary> designs;
  std::optional<SweepBaseline> baseline;  ///< the sweep's baseline (baselineOf)
  double alpha = kDefaultSweepAlpha;
  int comparisons_tested = 0;  ///< the family Holm's correction is over
  /// The sweep runs until settled: `alpha` above is then the rule's alpha per look.
  std::optional<SettleRule> settle;
  /// Filled by readReportCurves (buildReport reads no metrics log): what the figure's right panel draws.
  SweepCurves curves;
};
SweepReport buildReport(const SweepPlan& plan);
/// Reads the report's curves from the trials' metrics logs (every trial that started: running trials
/// too, so a sweep's curves grow while it trains).
void readReportCurves(const SweepPlan& plan, SweepReport& report);
/// md, csv, latex or json. Throws std::invalid_argument for another format.
std::string formatReport(const SweepReport& report, const std::string& format);
/// An SVG figure: the metric (mean ± std over seeds) against `x` ("parameters" or an axis name),
/// one series per value of the other axes, and beside it the metric's mean curve per design over
/// training steps (report.curves). Reads no file. Throws std::invalid_argument for an unknown x.
std::string reportFigureSvg(const SweepReport& report, const std::string& x);
/// The figure of a report whose curves are read here (readReportCurves) from the plan's trials.
std::string reportFigureSvg(const SweepPlan& plan, const SweepReport& report, const std::string& x);

}  // namespace tensorscope::model_core
