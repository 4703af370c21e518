#pragma once
/// `tensorscope sweep plan | run | run-trial | status | report` (issue 14, docs/sweeps.md).

#include <iosfwd>

#include "cli/args.h"

namespace tensorscope::app {

/// Exit status of `sweep run-trial` for a trial stopped by a signal (it resumes from its checkpoint).
inline constexpr int kExitTrialInterrupted = 3;

int runSweepCommand(Args& args, std::ostream& out, std::ostream& err);

}  // namespace tensorscope::app
