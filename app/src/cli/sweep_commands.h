#pragma once
/// `tensorscope sweep plan | run | run-trial | submit | status | report` (issue 14, docs/sweeps.md):
/// arguments, printing, signals and exit status. The work is the sweep component's
/// (model_core/sweep.h, model_core/sweep_trial.h) and the process pool and Slurm client's (sweeps/).

#include <iosfwd>
#include <optional>
#include <string>

#include "cli/args.h"
#include "model_core/sweep.h"

namespace tensorscope::app {

/// Exit status of `sweep run-trial` for a trial stopped by a signal (it resumes from its checkpoint).
inline constexpr int kExitTrialInterrupted = 3;
/// Exit status of `sweep run-trial` when another process holds the trial's lock (it trains it; this
/// one did nothing), and of `sweep run` when trials are still being trained elsewhere (other
/// processes or Slurm): the sweep has not ended, whatever else it did.
inline constexpr int kExitRunElsewhere = 4;
/// Exit status of `sweep run-trial` for a trial that had ended before it started (nothing done).
inline constexpr int kExitTrialEndedBefore = 5;

int runSweepCommand(Args& args, std::ostream& out, std::ostream& err);

/// `sweep run` (sweep_run_command.cpp).
int sweepRunCommand(Args& args, std::ostream& out, std::ostream& err);
/// The settle rule of `--until-settled [--alpha A] [--max-seeds K]` (run and submit): the options,
/// else the rule the sweep was run under (settle.json), else the sweep file's alpha and
/// max(10, its seeds). Throws UsageError for an alpha that is not a number in (0, 0.5].
model_core::SettleRule settleRuleFromOptions(const model_core::SweepPlan& plan, const std::optional<std::string>& alpha,
                                             const std::optional<long long>& maxSeeds);
/// `sweep status` and `sweep report` (sweep_report_commands.cpp).
int sweepStatusCommand(Args& args, std::ostream& out);
int sweepReportCommand(Args& args, std::ostream& out, std::ostream& err);
/// `sweep submit` (sweep_submit_command.cpp).
int sweepSubmitCommand(Args& args, std::ostream& out, std::ostream& err);

}  // namespace tensorscope::app
