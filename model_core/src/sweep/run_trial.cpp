#include "model_core/sweep_trial.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <sstream>
#include <thread>

#include "files/atomic_file.h"
#include "model_core/run_directory.h"
#include "sweep/trial_lock.h"

namespace tensorscope::model_core {
namespace {

namespace fs = std::filesystem;

/// The wall-clock budget: after `seconds` a timer thread asks the trainer to stop (it checkpoints
/// within a step). `hit()` says whether it fired before `stop()`.
class Deadline {
 public:
  Deadline(double seconds, TrainerControl& control) {
    if (seconds <= 0) return;
    timer_ = std::thread([this, seconds, &control] {
      std::unique_lock<std::mutex> l(m_);
      if (!cv_.wait_for(l, std::chrono::duration<double>(seconds), [this] { return done_; })) {
        hit_ = true;
        control.requestStop();
      }
    });
  }
  Deadline(const Deadline&) = delete;
  Deadline& operator=(const Deadline&) = delete;
  ~Deadline() { stop(); }
  void stop() {
    if (!timer_.joinable()) return;
    {
      std::lock_guard<std::mutex> l(m_);
      done_ = true;
    }
    cv_.notify_all();
    timer_.join();
  }
  bool hit() {
    std::lock_guard<std::mutex> l(m_);
    return hit_;
  }

 private:
  std::mutex m_;
  std::condition_variable cv_;
  bool done_ = false, hit_ = false;
  std::thread timer_;
};

/// Evaluates a run stopped by its budget on every split and makes that the trial's final numbers.
void evaluateAtDeadline(const SweepPlan& plan, const std::string& runDir, const std::string& firstSplit, TrialResult& r) {
  std::ostringstream budget;
  budget << plan.sweep.seconds;
  r.message = "stopped by the budget of " + budget.str() + " s at step " + std::to_string(r.steps);
  const SweepMetric& metric = plan.sweep.metric;
  const std::string split = metric.split.empty() ? firstSplit : metric.split;
  nlohmann::json evals = nlohmann::json::object();
  for (const auto& e : evaluateRun(runDir)) {
    nlohmann::json v = {{"loss", e.loss}, {"accuracy", e.accuracy}};
    if (e.exact_match >= 0) v["exact_match"] = e.exact_match;
    evals[e.split] = v;
    if (e.split == split && v.contains(metric.name)) {
      const double x = v[metric.name].get<double>();
      r.final_metric = x;
      if (!r.best_metric || (metric.higherIsBetter() ? x > *r.best_metric : x < *r.best_metric))
        r.best_metric = x, r.best_step = r.steps;
    }
  }
  r.final_eval = evals;
}

}  // namespace

TrialRun runTrial(const SweepPlan& plan, const Trial& t, TrainerControl& control, ProgressSink& sink,
                  const TrialRunOptions& options) {
  TrialRun run;
  const std::string dir = plan.trialDir(t), runDir = plan.runDir(t);
  fs::create_directories(dir);
  run.lock = dir + "/lock";
  const auto lock = TrialLock::tryAcquire(run.lock);
  if (!lock) {
    run.outcome = TrialRunOutcome::LockedElsewhere;
    return run;
  }
  if (fs::exists(dir + "/result.json")) {
    run.outcome = TrialRunOutcome::EndedBefore;
    run.before = trialStatus(plan, t);
    return run;
  }
  // Resume only a run with a committed checkpoint. One stopped before its first commit (killed, out
  // of memory, a full disk) holds only files train() writes before it (config.json, metrics, its
  // lock, temporaries): it starts again in place, from step 0.
  const bool resume = fs::exists(runDir + "/checkpoint.json") || fs::exists(runDir + "/model.safetensors");
  if (!resume && fs::exists(runDir + "/config.json") && options.onRestart) options.onRestart();
  const std::string firstSplit = evaluationSplitNames(t.config).front();
  const bool budgeted = plan.sweep.seconds > 0;
  double remaining = 0;
  if (budgeted) remaining = plan.sweep.seconds - (resume ? summariseTrialRun(runDir, plan.sweep.metric, firstSplit).wall_seconds : 0);
  TrialResult& r = run.result;
  r.where = options.where;
  bool deadlineHit = false;
  try {
    if (budgeted && remaining <= 0) {
      deadlineHit = true;  // its time was spent in earlier sessions; only the result is missing
    } else {
      Deadline deadline(budgeted ? remaining : 0, control);
      auto config = t.config;
      if (!options.device.empty()) config.train.device = options.device;
      const auto result = train(config, runDir, control, sink, resume);
      deadline.stop();  // a deadline counts only where it stopped the run, not after its last step
      deadlineHit = deadline.hit() && result.stopped_early;
      r.message = result.message;
      r.status = result.diverged ? "diverged" : "finished";
    }
    if (r.status.empty()) r.status = "finished";
  } catch (const std::exception& e) {
    r.status = "failed";
    r.message = e.what();
  }
  if (options.interrupted && options.interrupted() && !deadlineHit && r.status != "failed") {
    run.outcome = TrialRunOutcome::Interrupted;
    return run;
  }
  const auto summary = summariseTrialRun(runDir, plan.sweep.metric, firstSplit);
  r.steps = summary.steps;
  r.wall_seconds = summary.wall_seconds;
  r.tokens_per_second = summary.tokens_per_second;
  r.final_metric = summary.final_metric;
  r.best_metric = summary.best_metric;
  r.best_step = summary.best_step;
  r.final_eval = summary.final_eval;
  if (deadlineHit && r.status == "finished") evaluateAtDeadline(plan, runDir, firstSplit, r);
  files::writeFileAtomically(dir + "/result.json", trialResultToJson(r));
  run.outcome = TrialRunOutcome::Ended;
  return run;
}

}  // namespace tensorscope::model_core
