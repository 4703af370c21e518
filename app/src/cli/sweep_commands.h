#pragma once
/// `tensorscope sweep plan | run | run-trial | status | report` (issue 14, docs/sweeps.md).

#include <cstdint>
#include <iosfwd>
#include <map>
#include <string>

#include "cli/args.h"

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

/// What Slurm's squeue says of a sweep's recorded jobs (DIR/slurm.json): trial index -> e.g.
/// "PENDING (job 12_3)". Empty without jobs; `note` says why squeue could not be asked.
std::map<std::int64_t, std::string> slurmQueue(const std::string& sweepDir, std::string& note);

}  // namespace tensorscope::app
