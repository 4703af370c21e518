/// `sweep plan | run | run-trial | submit` and the dispatch of every sweep command: arguments,
/// printing, signals and exit status. Running a trial is model_core's (sweep_trial.h); the process
/// pool and the Slurm client are the sweeps library's (sweeps/).
#include "cli/sweep_commands.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <ostream>
#include <thread>

#include "cli/cli.h"
#include "cli/progress_sinks.h"
#include "cli/sweep_text.h"
#include "files/atomic_file.h"
#include "model_core/runtime.h"
#include "model_core/sweep_trial.h"
#include "sweeps/process_pool.h"
#include "sweeps/slurm_client.h"

namespace tensorscope::app {
namespace {

namespace fs = std::filesystem;
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
  std::size_t w = 8;
  for (const auto& t : trials) w = std::max(w, t.name.size() + 2);
  out << pad("trial", w) << pad("attention params", 18) << pad("matched", 9) << pad("steps", 8)
      << pad("attn GFLOP/step", 17) << "memory estimate\n";
  double total = 0;
  for (const auto& t : trials) {
    const double memory = model_core::estimateTrainingMemory(t.config);
    total += t.attention_gflop_per_step * double(t.config.train.steps);
    out << pad(t.name, w) << pad(std::to_string(t.attention_parameters), 18) << pad(t.matched.empty() ? "-" : t.matched, 9)
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

model_core::TrainerControl* g_trialControl = nullptr;
volatile std::sig_atomic_t g_trialSignalled = 0;
extern "C" void onTrialSignal(int) {
  g_trialSignalled = 1;
  if (g_trialControl) g_trialControl->requestStop();
}

int runTrialCommand(const SweepPlan& plan, const Trial& t, const std::string& device, std::ostream& out, std::ostream& err) {
  model_core::TrainerControl control;
  model_core::TrialRunOptions options;
  options.device = device;
  options.where = sweeps::whereTrained();
  options.interrupted = [] { return g_trialSignalled != 0; };
  options.onRestart = [&] {
    out << "{\"event\": \"restart\", \"trial\": \"" << t.name
        << "\", \"reason\": \"its run stopped before its first checkpoint; it starts again from step 0\"}" << std::endl;
  };
  JsonLinesSink sink(out, 50);
  g_trialControl = &control;
  g_trialSignalled = 0;
  std::signal(SIGINT, onTrialSignal);
  std::signal(SIGTERM, onTrialSignal);
  const auto run = model_core::runTrial(plan, t, control, sink, options);
  g_trialControl = nullptr;
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);
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

// ---- run: a pool of run-trial processes ------------------------------------------------------------

volatile std::sig_atomic_t g_runSignalled = 0;
extern "C" void onRunSignal(int) { g_runSignalled = 1; }

/// The trials `sweep run` starts: neither ended (unless --retry-failed), nor running, nor in
/// Slurm's queue. Counts the others and says why each is skipped.
struct RunQueue {
  std::vector<const Trial*> trials;
  int ended = 0, skipped = 0;
};
RunQueue queueTrials(const SweepPlan& plan, bool retry, std::ostream& err) {
  RunQueue q;
  std::string note;
  const auto queued = sweeps::slurmQueue(plan.dir, note);  // trials handed to Slurm are its to run
  if (!note.empty())  // a submitted trial may then also start here; its lock keeps the two from training at once
    err << "tensorscope: " << note << "; trials submitted to Slurm cannot be told apart from pending ones\n";
  for (const auto& t : plan.trials) {
    const auto st = model_core::trialStatus(plan, t);
    if (!st.damaged.empty() && !retry) err << "tensorscope: trial " << t.name << ": " << st.damaged << "\n";
    const bool failed = st.state == TrialState::Failed || st.state == TrialState::Diverged;
    if (st.state != TrialState::Finished && queued.count(t.index)) {
      ++q.skipped;
      err << "tensorscope: trial " << t.name << " is in Slurm's queue (" << queued.at(t.index) << "); not starting it\n";
    } else if (st.state == TrialState::Running) {
      ++q.skipped;
      err << "tensorscope: trial " << t.name << " is being trained by another process; not starting it\n";
    } else if (st.state == TrialState::Finished || (failed && !retry)) {
      ++q.ended;
    } else {
      if (failed) model_core::clearTrialResult(plan, t, st);
      q.trials.push_back(&t);
    }
  }
  return q;
}

int runCommand(Args& args, std::ostream& out, std::ostream& err) {
  const auto jobs = args.takeInt("--jobs", 1, 256);
  const bool retry = args.takeFlag("--retry-failed");
  const bool jsonLines = args.takeFlag("--json") || !isatty(fileno(stdout));
  const auto pos = args.positionals(1, 1, kUsage);
  const auto plan = model_core::readSweepPlan(pos[0]);
  const int J = static_cast<int>(jobs.value_or(1));
  // J trials share the cores: each gets cores / J LibTorch threads (at least one) unless the
  // command line's --threads says otherwise.
  int threads = std::max(1, model_core::runtimeInfo().hardware_threads / J);
  if (model_core::threadsOverride() > 0) threads = model_core::threadsOverride();
  else if (std::getenv("TENSORSCOPE_THREADS")) threads = std::max(1, model_core::runtimeInfo().intra_op_threads);
  auto [queue, ended, skipped] = queueTrials(plan, retry, err);
  const std::size_t total = plan.trials.size();
  const auto elsewhereNote = [&](int n) {
    err << "tensorscope: the sweep has not ended: " << n << " trial" << (n > 1 ? "s are" : " is")
        << " being trained elsewhere; when they end, run it again: tensorscope sweep run " << model_core::displayText(plan.dir)
        << " (or follow them: tensorscope sweep status " << model_core::displayText(plan.dir) << ")\n";
    return kExitRunElsewhere;
  };
  if (queue.empty()) {
    out << "sweep '" << plan.sweep.name << "': nothing to run (" << ended << " of " << total << " trials have ended"
        << (skipped ? ", " + std::to_string(skipped) + " run elsewhere" : std::string()) << ")\n";
    return skipped ? elsewhereNote(skipped) : kExitOk;
  }
  const std::string exe = sweeps::selfExecutable();
  g_runSignalled = 0;
  std::signal(SIGINT, onRunSignal);
  std::signal(SIGTERM, onRunSignal);
  sweeps::ProcessPool pool;
  std::size_t next = 0;
  int finished = 0, failed = 0, interrupted = 0, endedElsewhere = 0;
  bool forwarded = false;
  const auto event = [&](const std::string& what, const Trial& t, const std::string& extra = "") {
    if (jsonLines)
      out << "{\"event\": \"" << what << "\", \"trial\": \"" << t.name << "\", \"index\": " << t.index << extra << "}" << std::endl;
  };
  if (!jsonLines)
    out << "sweep '" << plan.sweep.name << "': " << queue.size() << " trials to run, " << J << " at a time, " << threads
        << " thread" << (threads > 1 ? "s" : "") << " each (logs: trials/NAME/log.txt; Ctrl-C stops and keeps checkpoints)\n";
  auto lastDraw = std::chrono::steady_clock::now() - std::chrono::seconds(10);
  while (true) {
    if (g_runSignalled && !forwarded) {
      forwarded = true;  // children in our process group got a terminal's Ctrl-C too; a kill reached only us
      pool.signalAll(SIGINT);
    }
    while (!g_runSignalled && pool.size() < static_cast<std::size_t>(J) && next < queue.size()) {
      const Trial& t = *queue[next++];
      pool.start(t.index, {exe, "--threads", std::to_string(threads), "sweep", "run-trial", plan.dir, std::to_string(t.index)},
                 plan.trialDir(t) + "/log.txt", kExitTrialInterrupted);
      event("trial_start", t);
    }
    if (pool.empty()) break;
    if (const auto exit = pool.reap()) {
      const Trial& t = plan.trials[static_cast<std::size_t>(exit->tag)];
      const int code = exit->code;
      const auto st = model_core::trialStatus(plan, t);
      // "Finished now" counts only trials this process trained: another `sweep run` on the same
      // folder may have trained (kExitTrialEndedBefore) or be training (kExitRunElsewhere) this one.
      if (code == kExitRunElsewhere) ++skipped;
      else if (code == kExitTrialEndedBefore) ++endedElsewhere;
      else if (code == kExitTrialInterrupted || (g_runSignalled && !st.result)) ++interrupted;
      else if (st.state == TrialState::Finished && code == kExitOk) ++finished;
      else ++failed;
      std::string extra = ", \"state\": \"" + std::string(model_core::trialStateName(st.state)) + "\"";
      if (st.result && st.result->final_metric)
        extra += ", \"" + plan.sweep.metric.name + "\": " + std::to_string(*st.result->final_metric);
      event("trial_end", t, extra);
      if (!jsonLines) {
        out << "\r\033[K" << pad(t.name, 28) << model_core::trialStateName(st.state);
        if (st.result && st.result->final_metric) out << "  " << plan.sweep.metric.name << " " << fixed(*st.result->final_metric, 4);
        if (st.result) out << "  " << fixed(st.result->wall_seconds, 0) << " s";
        if (code == kExitRunElsewhere) out << "  (being trained by another process)";
        else if (code == kExitTrialEndedBefore) out << "  (trained by another process)";
        else if (!st.result && code != kExitTrialInterrupted) out << "  (exit " << code << "; see " << plan.trialDir(t) << "/log.txt)";
        out << "\n";
      }
      continue;
    }
    if (!jsonLines && std::chrono::steady_clock::now() - lastDraw > std::chrono::milliseconds(500)) {
      lastDraw = std::chrono::steady_clock::now();
      std::string line = "[" + std::to_string(ended + finished + failed + endedElsewhere) + "/" + std::to_string(total) +
                         " ended, " + std::to_string(pool.size()) + " running]";
      for (const auto index : pool.tags()) {
        const Trial& t = plan.trials[static_cast<std::size_t>(index)];
        line += "  " + t.name.substr(0, 24) + " " + std::to_string(model_core::trialStatus(plan, t).step) + "/" +
                std::to_string(t.config.train.steps);
      }
      out << "\r\033[K" << line.substr(0, 160) << std::flush;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);
  if (!jsonLines) out << "\r\033[K";
  const std::string afterSkipped = skipped ? ", " + std::to_string(skipped) + " run elsewhere" : std::string();
  if (jsonLines)
    out << "{\"event\": \"end\", \"finished\": " << finished << ", \"failed\": " << failed << ", \"interrupted\": "
        << interrupted << ", \"run_elsewhere\": " << skipped << "}\n";
  else
    out << "sweep '" << plan.sweep.name << "': " << finished << " trials finished now, " << failed << " failed or diverged, "
        << interrupted << " interrupted" << afterSkipped << "; " << ended + finished + failed + endedElsewhere << " of "
        << total << " have ended\n";
  if (g_runSignalled || interrupted) {
    err << "tensorscope: stopped; interrupted trials resume from their checkpoints: tensorscope sweep run " << plan.dir << "\n";
    return 130;
  }
  if (failed) return kExitFailure;
  return skipped ? elsewhereNote(skipped) : kExitOk;
}

}  // namespace

int runSweepCommand(Args& args, std::ostream& out, std::ostream& err) {
  const auto sub = args.takeCommand();
  if (sub == "plan") return planCommand(args, out);
  if (sub == "run") return runCommand(args, out, err);
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
