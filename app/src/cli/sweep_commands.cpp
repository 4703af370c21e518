/// `sweep plan | run-trial` and the dispatch of every sweep command (run, submit, status and report
/// have files of their own): arguments, printing, signals and exit status. Running a trial is
/// model_core's (model_core/sweep_trial.h).
#include <cstdio>
#include "cli/sweep_commands.h"

#include <algorithm>
#include <cctype>
#include <atomic>
#include <ostream>

#include "cli/cli.h"
#include "cli/progress_sinks.h"
#include "cli/stop_signals.h"
#include "cli/sweep_text.h"
#include "model_core/sweep_trial.h"
#include "sweeps/slurm_client.h"

namespace tensorscope::app {
namespace {

using model_core::SweepPlan;
using model_core::Trial;
using model_core::TrialState;
using sweep_text::fixed;
using sweep_text::kUsage;
using sweep_text::pad;

int planCommand(Args& args, std::ostream& out) {
  const auto dir = args.takeOption("--out");
  const auto pos = args.positionals(1, 1, kUsage);
  if (!dir) throw UsageError(std::string("sweep plan needs --out DIR\nusage: ") + kUsage);
  const auto sweep = model_core::readSweepFile(pos[0]);
  const auto trials = model_core::expandSweep(sweep);
  model_core::writeSweepDirectory(*dir, sweep, trials);
  out << "sweep '" << sweep.name << "': " << trials.size() << " trials in " << *dir << "\n";
  std::size_t w = 8, mw = 9;
  // "D=13", or with "match" the cost it matched and the residual: "kv_groups=2 kv +0.00%".
  const auto matchedText = [](const model_core::Trial& t) {
    if (t.matched.empty()) return std::string("-");
    if (t.match_on.empty()) return t.matched;
    char r[32];
    std::snprintf(r, sizeof r, "%+.2f%%", 100 * t.match_residual);
    return t.matched + " " + t.match_on + " " + r;
  };
  for (const auto& t : trials) w = std::max(w, t.name.size() + 2), mw = std::max(mw, matchedText(t).size() + 2);
  out << pad("trial", w) << pad("attention params", 18) << pad("matched", mw) << pad("steps", 8)
      << pad("attn GFLOP/step", 17) << "memory estimate\n";
  double total = 0;
  for (const auto& t : trials) {
    const double memory = model_core::estimateTrainingMemory(t.config);
    total += t.attention_gflop_per_step * double(t.config.train.steps);
    out << pad(t.name, w) << pad(std::to_string(t.attention_parameters), 18) << pad(matchedText(t), mw)
        << pad(std::to_string(t.config.train.steps), 8)
        << pad(fixed(t.attention_gflop_per_step, t.attention_gflop_per_step < 1 ? 4 : 2), 17)
        << fixed(memory / 1e6, 0) << " MB\n";
  }
  out << "attention layers, forward and backward, all trials: " << fixed(total / 1000, total < 100 ? 4 : 1) << " TFLOP";
  if (sweep.seconds > 0) out << "; each trial stops after " << sweep.seconds << " s of training";
  out << "\nrun it: tensorscope sweep run " << *dir << " [--jobs J]\n";
  return kExitOk;
}

// ---- run-trial: one trial in this process --------------------------------------------------------

int runTrialCommand(const SweepPlan& plan, const Trial& t, const std::string& device, std::ostream& out, std::ostream& err) {
  model_core::TrainerControl control;
  model_core::TrialRunOptions options;
  options.device = device;
  options.where = sweeps::whereTrained();
  std::atomic<bool> signalled{false};
  options.interrupted = [&signalled] { return signalled.load(); };
  options.onRestart = [&] {
    out << "{\"event\": \"restart\", \"trial\": \"" << t.name
        << "\", \"reason\": \"its run stopped before its first checkpoint; it starts again from step 0\"}" << std::endl;
  };
  JsonLinesSink sink(out, 50);
  // SIGINT or SIGTERM (Slurm's before a time limit): checkpoint and stop (cli/stop_signals.h).
  const auto run = [&] {
    stopsignals::Scope stopOnSignal([&](int) {
      signalled = true;
      control.requestStop();
    });
    return model_core::runTrial(plan, t, control, sink, options);
  }();
  switch (run.outcome) {
    case model_core::TrialRunOutcome::LockedElsewhere:
      err << "tensorscope: trial " << t.name << " is being trained by another process (" << run.lock << " is locked)\n";
      return kExitRunElsewhere;
    case model_core::TrialRunOutcome::EndedBefore:
      out << "trial " << t.name << " has ended already (" << model_core::trialStateName(run.before.state) << ")\n";
      if (!run.before.damaged.empty()) err << "tensorscope: trial " << t.name << ": " << run.before.damaged << "\n";
      return kExitTrialEndedBefore;
    case model_core::TrialRunOutcome::Interrupted:
      out << "{\"event\": \"interrupted\", \"trial\": \"" << t.name << "\"}" << std::endl;
      err << "tensorscope: trial " << t.name << " interrupted; it resumes from its checkpoint\n";
      return kExitTrialInterrupted;
    case model_core::TrialRunOutcome::Ended:
      break;
  }
  const auto& r = run.result;
  out << "{\"event\": \"trial_end\", \"trial\": \"" << t.name << "\", \"status\": \"" << r.status << "\"}" << std::endl;
  if (r.status != "failed") return kExitOk;
  err << "tensorscope: trial " << t.name << " failed: " << model_core::displayText(r.message) << "\n";
  return kExitFailure;
}

const Trial& trialAt(const SweepPlan& plan, const std::string& index) {
  std::size_t used = 0;
  long long i = -1;
  try {
    i = std::stoll(index, &used);
  } catch (const std::exception&) {
  }
  if (used != index.size() || i < 0 || i >= static_cast<long long>(plan.trials.size()))
    throw UsageError("trial index '" + index + "' is not in [0, " + std::to_string(plan.trials.size() - 1) + "]");
  return plan.trials[static_cast<std::size_t>(i)];
}

}  // namespace

int runSweepCommand(Args& args, std::ostream& out, std::ostream& err) {
  const auto sub = args.takeCommand();
  if (sub == "plan") return planCommand(args, out);
  if (sub == "run") return sweepRunCommand(args, out, err);
  if (sub == "run-trial") {
    const auto device = args.takeOption("--device");
    const auto pos = args.positionals(2, 2, kUsage);
    if (device && *device != "cpu" && *device != "cuda") throw UsageError("--device takes cpu or cuda, not '" + *device + "'");
    const auto plan = model_core::readSweepPlan(pos[0]);
    return runTrialCommand(plan, trialAt(plan, pos[1]), device.value_or(""), out, err);
  }
  if (sub == "submit") return sweepSubmitCommand(args, out, err);
  if (sub == "status") return sweepStatusCommand(args, out);
  if (sub == "report") return sweepReportCommand(args, out, err);
  throw UsageError("sweep needs a sub-command: plan, run, run-trial, status or report\nusage: " + std::string(kUsage));
}

}  // namespace tensorscope::app
