// Running one trial (model_core/sweep_trial.h) and the trial lock's two sides (sweep/trial_lock.h):
// the outcomes `sweep run-trial` turns into exit codes, each from real training of a tiny trial.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "files/read_file.h"
#include "model_core/sweep_trial.h"
#include "sweep/trial_lock.h"
#include "../training/training_test_util.h"

namespace tensorscope::model_core {
namespace {

using nlohmann::json;
using testing::TempDir;
using testing::tinyRun;

/// One MHSA trial of `steps` steps (seconds: the sweep's time budget, 0 for none), planned in tmp/sw.
SweepPlan oneTrialSweep(const TempDir& tmp, int steps, double seconds = 0) {
  json j = {{"format", "tensorscope.sweep"},
            {"version", 1},
            {"name", "one trial"},
            {"base", json::parse(runConfigToJson(tinyRun("mhsa", steps)))},
            {"axes", {{{"path", "train.lr"}, {"values", {0.002}}}}},
            {"seeds", {1}},
            {"budget", seconds > 0 ? json{{"steps", steps}, {"seconds", seconds}} : json{{"steps", steps}}},
            {"metric", "loss"}};
  const auto sweep = sweepFromJson(j.dump());
  writeSweepDirectory(tmp.path("sw"), sweep, expandSweep(sweep));
  return readSweepPlan(tmp.path("sw"));
}

TEST(TrialLock, HeldExclusivelyUntilReleasedAndSeenByTheStatusSide) {
  TempDir tmp("trial_lock");
  const std::string path = tmp.path("lock");
  EXPECT_FALSE(trialLockHeld(path));  // no file: nobody trains
  {
    auto lock = TrialLock::tryAcquire(path);
    ASSERT_TRUE(lock);
    EXPECT_TRUE(trialLockHeld(path));
    EXPECT_FALSE(TrialLock::tryAcquire(path));  // a second taker (another open file) is refused
    auto moved = std::move(*lock);              // ownership moves; the lock stays held
    EXPECT_TRUE(trialLockHeld(path));
  }
  EXPECT_FALSE(trialLockHeld(path));
  EXPECT_TRUE(TrialLock::tryAcquire(path));
  EXPECT_THROW(TrialLock::tryAcquire(tmp.path("no/such/folder/lock")), std::runtime_error);
}

class NoProgress : public ProgressSink {};

TEST(TrialRun, TrainsWritesItsResultAndNeverRunsAnEndedOrLockedTrialAgain) {
  TempDir tmp("trial_run");
  const auto plan = oneTrialSweep(tmp, 6);
  const Trial& t = plan.trials.at(0);
  NoProgress sink;
  TrainerControl control;
  TrialRunOptions options;
  options.where = "local (test)";
  {  // another process trains it: nothing is done, nothing written
    auto held = TrialLock::tryAcquire(plan.trialDir(t) + "/lock");
    ASSERT_TRUE(held);
    const auto run = runTrial(plan, t, control, sink, options);
    EXPECT_EQ(run.outcome, TrialRunOutcome::LockedElsewhere);
    EXPECT_EQ(run.lock, plan.trialDir(t) + "/lock");
    EXPECT_FALSE(std::filesystem::exists(plan.trialDir(t) + "/result.json"));
  }
  const auto run = runTrial(plan, t, control, sink, options);
  ASSERT_EQ(run.outcome, TrialRunOutcome::Ended);
  EXPECT_EQ(run.result.status, "finished") << run.result.message;
  EXPECT_EQ(run.result.steps, 6);
  EXPECT_EQ(run.result.where, "local (test)");
  ASSERT_TRUE(run.result.final_metric);
  const auto written = parseTrialResult(files::readBoundedFile(plan.trialDir(t) + "/result.json"), "result.json", "loss");
  EXPECT_EQ(written.status, "finished");
  EXPECT_EQ(written.steps, 6);
  EXPECT_DOUBLE_EQ(*written.final_metric, *run.result.final_metric);
  EXPECT_FALSE(trialLockHeld(run.lock));  // released when the run ended
  const auto again = runTrial(plan, t, control, sink, options);
  EXPECT_EQ(again.outcome, TrialRunOutcome::EndedBefore);
  EXPECT_EQ(again.before.state, TrialState::Finished);
}

TEST(TrialRun, AnInterruptedTrialWritesNoResultAndResumesFromItsCheckpoint) {
  TempDir tmp("trial_interrupted");
  const auto plan = oneTrialSweep(tmp, 8);
  const Trial& t = plan.trials.at(0);
  NoProgress sink;
  TrainerControl control;
  control.requestStop();  // as a signal handler would, before the first step
  TrialRunOptions options;
  options.interrupted = [] { return true; };
  EXPECT_EQ(runTrial(plan, t, control, sink, options).outcome, TrialRunOutcome::Interrupted);
  EXPECT_FALSE(std::filesystem::exists(plan.trialDir(t) + "/result.json"));
  TrainerControl fresh;
  bool restarted = false;
  options.interrupted = [] { return false; };
  options.onRestart = [&] { restarted = true; };
  const auto run = runTrial(plan, t, fresh, sink, options);
  EXPECT_EQ(run.outcome, TrialRunOutcome::Ended);
  EXPECT_EQ(run.result.status, "finished") << run.result.message;
  EXPECT_EQ(run.result.steps, 8);
  // It stopped before its first checkpoint or after it: either it resumed, or it said it restarted.
  const bool resumedOrRestarted = restarted || std::filesystem::exists(plan.runDir(t) + "/checkpoint.json");
  EXPECT_TRUE(resumedOrRestarted);
}

TEST(TrialRun, ATrialWhoseBudgetIsSpentIsEvaluatedWhereItStoppedAndSaysSo) {
  TempDir tmp("trial_budget");
  const auto plan = oneTrialSweep(tmp, 100000, 0.5);  // far more steps than half a second allows
  const Trial& t = plan.trials.at(0);
  NoProgress sink;
  TrainerControl control;
  const auto run = runTrial(plan, t, control, sink, {});
  ASSERT_EQ(run.outcome, TrialRunOutcome::Ended);
  EXPECT_EQ(run.result.status, "finished") << run.result.message;
  EXPECT_LT(run.result.steps, 100000);
  EXPECT_NE(run.result.message.find("stopped by the budget of 0.5 s at step " + std::to_string(run.result.steps)),
            std::string::npos) << run.result.message;
  ASSERT_TRUE(run.result.final_metric);  // evaluated at the step where the budget stopped it
  EXPECT_EQ(run.result.best_step <= run.result.steps, true);
  EXPECT_FALSE(run.result.final_eval.empty()) << run.result.final_eval.dump();
}

}  // namespace
}  // namespace tensorscope::model_core
