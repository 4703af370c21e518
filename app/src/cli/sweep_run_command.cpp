/// `sweep run DIR [--jobs J] [--retry-failed]`: the pending trials of a sweep, J at a time, each in
/// its own `tensorscope sweep run-trial` process (the sweeps library's ProcessPool); Ctrl-C and
/// SIGTERM reach every trial, which checkpoints.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <ostream>
#include <sstream>
#include <thread>

#include "cli/cli.h"
#include "cli/stop_signals.h"
#include "cli/sweep_commands.h"
#include "cli/sweep_text.h"
#include "model_core/run_config.h"
#include "model_core/runtime.h"
#include "model_core/sweep.h"
#include "sweeps/process_pool.h"
#include "sweeps/slurm_client.h"

#include <nlohmann/json.hpp>

namespace tensorscope::app {
namespace {

using model_core::SweepPlan;
using model_core::Trial;
using model_core::TrialState;
using sweep_text::fixed;
using sweep_text::kUsage;
using sweep_text::pad;

std::atomic<bool> g_runSignalled{false};

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

/// What `sweep run` counts as its trial processes end, and how it shows them.
struct RunTally {
  const SweepPlan& plan;
  bool jsonLines;
  std::ostream& out;
  int ended = 0, skipped = 0;  ///< before this run: ended; not started here: skipped (run elsewhere)
  int finished = 0, failed = 0, interrupted = 0, endedElsewhere = 0;

  void event(const std::string& what, const Trial& t, const std::string& extra = "") const {
    if (jsonLines)
      out << "{\"event\": \"" << what << "\", \"trial\": \"" << t.name << "\", \"index\": " << t.index << extra << "}" << std::endl;
  }
  int endedNow() const { return ended + finished + failed + endedElsewhere; }

  /// A trial process ended with `code`: counted from its exit status and its files.
  void trialEnded(const Trial& t, int code, bool signalled) {
    const auto st = model_core::trialStatus(plan, t);
    // "Finished now" counts only trials this process trained: another `sweep run` on the same
    // folder may have trained (kExitTrialEndedBefore) or be training (kExitRunElsewhere) this one.
    if (code == kExitRunElsewhere) ++skipped;
    else if (code == kExitTrialEndedBefore) ++endedElsewhere;
    else if (code == kExitTrialInterrupted || (signalled && !st.result)) ++interrupted;
    else if (st.state == TrialState::Finished && code == kExitOk) ++finished;
    else ++failed;
    std::string extra = ", \"state\": \"" + std::string(model_core::trialStateName(st.state)) + "\"";
    if (st.result && st.result->final_metric)
      extra += ", \"" + plan.sweep.metric.name + "\": " + std::to_string(*st.result->final_metric);
    event("trial_end", t, extra);
    if (jsonLines) return;
    out << "\r\033[K" << pad(t.name, 28) << model_core::trialStateName(st.state);
    if (st.result && st.result->final_metric) out << "  " << plan.sweep.metric.name << " " << fixed(*st.result->final_metric, 4);
    if (st.result) out << "  " << fixed(st.result->wall_seconds, 0) << " s";
    if (code == kExitRunElsewhere) out << "  (being trained by another process)";
    else if (code == kExitTrialEndedBefore) out << "  (trained by another process)";
    else if (!st.result && code != kExitTrialInterrupted) out << "  (exit " << code << "; see " << plan.trialDir(t) << "/log.txt)";
    out << "\n";
  }

  /// The terminal's one-line progress: trials ended and each running trial's step.
  void drawProgress(const sweeps::ProcessPool& pool) const {
    std::ostringstream line;
    line << "[" << endedNow() << "/" << plan.trials.size() << " ended, " << pool.size() << " running]";
    for (const auto index : pool.tags()) {
      const Trial& t = plan.trials[static_cast<std::size_t>(index)];
      line << "  " << t.name.substr(0, 24) << " " << model_core::trialStatus(plan, t).step << "/" << t.config.train.steps;
    }
    out << "\r\033[K" << line.str().substr(0, 160) << std::flush;
  }

  void printEnd() const {
    if (jsonLines) {
      out << "{\"event\": \"end\", \"finished\": " << finished << ", \"failed\": " << failed << ", \"interrupted\": "
          << interrupted << ", \"run_elsewhere\": " << skipped << "}\n";
      return;
    }
    out << "\r\033[K" << "sweep '" << plan.sweep.name << "': " << finished << " trials finished now, " << failed
        << " failed or diverged, " << interrupted << " interrupted"
        << (skipped ? ", " + std::to_string(skipped) + " run elsewhere" : std::string()) << "; " << endedNow() << " of "
        << plan.trials.size() << " have ended\n";
  }
};

/// Runs the plan's trials that have not ended, J at a time (one `sweep run` without --until-settled).
int runPendingTrials(const SweepPlan& plan, int J, bool retry, bool jsonLines, std::ostream& out, std::ostream& err) {
  // J trials share the cores: each gets cores / J LibTorch threads (at least one) unless the
  // command line's --threads says otherwise.
  int threads = std::max(1, model_core::runtimeInfo().hardware_threads / J);
  if (model_core::threadsOverride() > 0) threads = model_core::threadsOverride();
  else if (std::getenv("TENSORSCOPE_THREADS")) threads = std::max(1, model_core::runtimeInfo().intra_op_threads);
  const auto q = queueTrials(plan, retry, err);
  RunTally tally{plan, jsonLines, out, q.ended, q.skipped};
  const auto elsewhereNote = [&](int n) {
    err << "tensorscope: the sweep has not ended: " << n << " trial" << (n > 1 ? "s are" : " is")
        << " being trained elsewhere; when they end, run it again: tensorscope sweep run " << model_core::displayText(plan.dir)
        << " (or follow them: tensorscope sweep status " << model_core::displayText(plan.dir) << ")\n";
    return kExitRunElsewhere;
  };
  if (q.trials.empty()) {
    out << "sweep '" << plan.sweep.name << "': nothing to run (" << q.ended << " of " << plan.trials.size() << " trials have ended"
        << (q.skipped ? ", " + std::to_string(q.skipped) + " run elsewhere" : std::string()) << ")\n";
    return q.skipped ? elsewhereNote(q.skipped) : kExitOk;
  }
  const std::string exe = sweeps::selfExecutable();
  g_runSignalled = false;
  stopsignals::Scope stopOnSignal([](int) { g_runSignalled = true; });  // cli/stop_signals.h
  sweeps::ProcessPool pool;
  std::size_t next = 0;
  bool forwarded = false;
  if (!jsonLines)
    out << "sweep '" << plan.sweep.name << "': " << q.trials.size() << " trials to run, " << J << " at a time, " << threads
        << " thread" << (threads > 1 ? "s" : "") << " each (logs: trials/NAME/log.txt; Ctrl-C stops and keeps checkpoints)\n";
  auto lastDraw = std::chrono::steady_clock::now() - std::chrono::seconds(10);
  while (true) {
    if (g_runSignalled && !forwarded) {
      forwarded = true;  // children in our process group got a terminal's Ctrl-C too; a kill reached only us
      pool.signalAll(SIGINT);
    }
    while (!g_runSignalled && pool.size() < static_cast<std::size_t>(J) && next < q.trials.size()) {
      const Trial& t = *q.trials[next++];
      pool.start(t.index, {exe, "--threads", std::to_string(threads), "sweep", "run-trial", plan.dir, std::to_string(t.index)},
                 plan.trialDir(t) + "/log.txt", kExitTrialInterrupted);
      tally.event("trial_start", t);
    }
    if (pool.empty()) break;
    if (const auto exit = pool.reap()) {
      tally.trialEnded(plan.trials[static_cast<std::size_t>(exit->tag)], exit->code, g_runSignalled);
      continue;
    }
    if (!jsonLines && std::chrono::steady_clock::now() - lastDraw > std::chrono::milliseconds(500)) {
      lastDraw = std::chrono::steady_clock::now();
      tally.drawProgress(pool);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  tally.printEnd();
  if (g_runSignalled || tally.interrupted) {
    err << "tensorscope: stopped; interrupted trials resume from their checkpoints: tensorscope sweep run " << plan.dir << "\n";
    return 130;
  }
  if (tally.failed) return kExitFailure;
  return tally.skipped ? elsewhereNote(tally.skipped) : kExitOk;
}

/// Says a settle round's decision (JSON line or text).
void printRound(const SweepPlan& plan, const model_core::SettleRound& r, bool jsonLines, std::ostream& out) {
  const auto list = [](const std::vector<std::string>& v) {
    std::string s;
    for (const auto& x : v) s += (s.empty() ? "" : ", ") + model_core::displayText(x);
    return s.empty() ? std::string("none") : s;
  };
  if (jsonLines) {
    out << "{\"event\": \"" << (r.added.empty() ? "settled" : "settle_round") << "\"";
    if (!r.added.empty()) out << ", \"round\": " << r.round << ", \"seed\": " << r.seed << ", \"trials\": " << r.added.size();
    out << ", \"open\": " << nlohmann::json(r.open).dump() << ", \"at_cap\": " << nlohmann::json(r.at_cap).dump()
        << ", \"settled\": " << nlohmann::json(r.settled).dump() << "}" << std::endl;
    return;
  }
  if (r.added.empty())
    out << "sweep '" << plan.sweep.name << "': every verdict is settled or at the cap (settled: " << list(r.settled)
        << "; open at the cap: " << list(r.at_cap) << ")\n";
  else
    out << "sweep '" << plan.sweep.name << "': round " << r.round << " adds seed " << r.seed << " (" << r.added.size()
        << " trials) for the open verdicts of " << list(r.open) << "\n";
}

}  // namespace

model_core::SettleRule settleRuleFromOptions(const SweepPlan& plan, const std::optional<std::string>& alpha,
                                             const std::optional<long long>& maxSeeds) {
  model_core::SettleRule rule;
  rule.initial_seeds = static_cast<int>(plan.sweep.seeds.size());
  rule.alpha = plan.settle ? plan.settle->alpha : plan.sweep.alpha;
  rule.max_seeds = plan.settle ? plan.settle->max_seeds : std::max(10, rule.initial_seeds);
  if (alpha) {
    char* end = nullptr;
    const double a = std::strtod(alpha->c_str(), &end);
    if (alpha->empty() || *end != '\0' || !(a > 0 && a <= 0.5))
      throw UsageError("--alpha takes a significance level in (0, 0.5], e.g. 0.01; got '" + *alpha + "'");
    rule.alpha = a;
  }
  if (maxSeeds) rule.max_seeds = static_cast<int>(*maxSeeds);
  if (rule.max_seeds < rule.initial_seeds)
    throw UsageError("--max-seeds " + std::to_string(rule.max_seeds) + " is below the sweep's own " +
                     std::to_string(rule.initial_seeds) + " seeds");
  return rule;
}

int sweepRunCommand(Args& args, std::ostream& out, std::ostream& err) {
  const auto jobs = args.takeInt("--jobs", 1, 256);
  const bool retry = args.takeFlag("--retry-failed");
  const bool jsonLines = args.takeFlag("--json") || !isatty(fileno(stdout));
  const bool untilSettled = args.takeFlag("--until-settled");
  const auto alpha = args.takeOption("--alpha");
  const auto maxSeeds = args.takeInt("--max-seeds", 2, model_core::kMaxSweepTrials);
  const auto pos = args.positionals(1, 1, kUsage);
  auto plan = model_core::readSweepPlan(pos[0]);
  const int J = static_cast<int>(jobs.value_or(1));
  if (!untilSettled) {
    if (alpha || maxSeeds) throw UsageError("--alpha and --max-seeds go with --until-settled");
    return runPendingTrials(plan, J, retry, jsonLines, out, err);
  }
  model_core::recordSettleRule(plan, settleRuleFromOptions(plan, alpha, maxSeeds));
  while (true) {
    const int code = runPendingTrials(plan, J, retry, jsonLines, out, err);
    if (code != kExitOk) return code;  // interrupted, failed or run elsewhere: the rounds go on from here next time
    plan = model_core::readSweepPlan(plan.dir);
    const auto round = model_core::planSettleRound(plan, model_core::buildReport(plan));
    printRound(plan, round, jsonLines, out);
    if (round.added.empty()) return kExitOk;
    model_core::extendSweepPlan(plan, round.added);
  }
}

}  // namespace tensorscope::app
