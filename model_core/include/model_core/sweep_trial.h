#pragma once
/// Running one trial of a sweep (docs/sweeps.md): the trial's lock, resuming it, its wall-clock
/// budget, training, evaluating a trial stopped by its budget where it stopped, and its result.json.
/// The command line (`sweep run-trial`) adds its arguments, signals, printing and exit status.

#include <functional>
#include <string>

#include "model_core/sweep.h"
#include "model_core/trainer.h"

namespace tensorscope::model_core {

struct TrialRunOptions {
  std::string device;  ///< overrides the trial's device when set ("cuda" on a GPU node); "" keeps it
  std::string where;   ///< who trains it, for result.json ("local (host)", "slurm job 12_3")
  /// Asked when training has stopped: true when a signal stopped it (not its budget). Such a trial
  /// writes no result and resumes from its checkpoint next time.
  std::function<bool()> interrupted;
  /// Called before training when a run that never committed a checkpoint starts again from step 0.
  std::function<void()> onRestart;
};

enum class TrialRunOutcome {
  Ended,            ///< result.json written (finished, diverged or failed: see TrialRun::result)
  Interrupted,      ///< stopped by a signal; no result, it resumes from its checkpoint
  LockedElsewhere,  ///< another process holds the trial's lock (it trains it); nothing done
  EndedBefore,      ///< the trial had a result already; nothing done (TrialRun::before says which)
};

struct TrialRun {
  TrialRunOutcome outcome = TrialRunOutcome::Ended;
  TrialResult result;   ///< Ended: what result.json now holds
  TrialStatus before;   ///< EndedBefore: the trial's status as found
  std::string lock;     ///< the trial's lock file
};

/// Trains trial `t` of `plan` to its budget (steps, and the sweep's seconds over all its sessions),
/// resuming a run that committed a checkpoint, and writes TRIAL/result.json atomically. A trial
/// stopped by its time budget is evaluated on every split where it stopped, so every trial's final
/// number is measured at its last step. `control` may be stopped from another thread (a signal
/// handler); `sink` receives the training's progress. A failing training is an Ended trial with
/// status "failed" and the error as its message; only I/O errors of the trial folder throw.
TrialRun runTrial(const SweepPlan& plan, const Trial& t, TrainerControl& control, ProgressSink& sink,
                  const TrialRunOptions& options);

}  // namespace tensorscope::model_core
