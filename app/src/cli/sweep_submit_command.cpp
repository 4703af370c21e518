/// `sweep submit DIR --slurm`: hands a sweep's pending trials to Slurm as one job array (the batch
/// script and sbatch are the Slurm client's, sweeps/slurm_client.h) and records the job in slurm.json.
#include <cctype>
#include <filesystem>
#include <ostream>

#include "cli/cli.h"
#include "cli/sweep_commands.h"
#include "cli/sweep_text.h"
#include "files/atomic_file.h"
#include "model_core/run_config.h"
#include "model_core/sweep.h"
#include "sweeps/process_pool.h"
#include "sweeps/slurm_client.h"

namespace tensorscope::app {

namespace fs = std::filesystem;
using model_core::TrialState;

int sweepSubmitCommand(Args& args, std::ostream& out, std::ostream& err) {
  const bool slurm = args.takeFlag("--slurm");
  sweeps::BatchRequest request;
  request.partition = args.takeOption("--partition");
  request.time = args.takeOption("--time");
  request.cpusPerTask = args.takeInt("--cpus-per-task", 1, 1024).value_or(1);
  request.gpus = args.takeInt("--gpus", 0, 64).value_or(0);
  request.arrayLimit = args.takeInt("--array-limit", 1, 100000);
  const bool retry = args.takeFlag("--retry-failed");
  const bool dryRun = args.takeFlag("--dry-run");
  const bool untilSettled = args.takeFlag("--until-settled");
  const auto alpha = args.takeOption("--alpha");
  const auto maxSeeds = args.takeInt("--max-seeds", 2, model_core::kMaxSweepTrials);
  const auto pos = args.positionals(1, 1, sweep_text::kUsage);
  if (!slurm)
    throw UsageError("sweep submit hands trials to a scheduler: say --slurm (the one supported)\nusage: " +
                     std::string(sweep_text::kUsage));
  const auto safe = [](const std::string& v, const char* what) {
    for (unsigned char c : v)
      if (!std::isalnum(c) && std::string(":-_.,").find(char(c)) == std::string::npos)
        throw UsageError(std::string(what) + " '" + v + "' has a character Slurm does not take here");
  };
  if (request.partition) safe(*request.partition, "--partition");
  if (request.time) safe(*request.time, "--time");
  if (!untilSettled && (alpha || maxSeeds)) throw UsageError("--alpha and --max-seeds go with --until-settled");
  auto plan = model_core::readSweepPlan(fs::absolute(pos[0]).lexically_normal().string());
  // The path goes into the batch script's comments, #SBATCH lines and command: a newline there would
  // end a directive and start a command.
  for (unsigned char c : plan.dir)
    if (c < 0x20 || c == 0x7f)
      throw UsageError("the sweep folder's path " + model_core::displayText(plan.dir) +
                       " holds a control character; Slurm scripts cannot name it safely: move the folder "
                       "(mv) to a path without one and submit from there");
  auto jobs = model_core::readSlurmJobs(plan.dir);
  std::string note;
  const auto queued = sweeps::slurmStates(jobs, note);
  if (untilSettled) {
    // One round a submission: when every trial has ended (none queued, running or waiting), the
    // report decides the next round's seeds and they go to Slurm as a new job array; otherwise
    // what has not ended is (re)submitted as without --until-settled.
    model_core::recordSettleRule(plan, settleRuleFromOptions(plan, alpha, maxSeeds));
    bool allEnded = true;
    for (const auto& t : plan.trials) {
      const auto st = model_core::trialStatus(plan, t);
      const bool failed = st.state == TrialState::Failed || st.state == TrialState::Diverged;
      if (queued.count(t.index) || !(st.state == TrialState::Finished || (failed && !retry))) allEnded = false;
    }
    if (allEnded) {
      const auto round = model_core::planSettleRound(plan, model_core::buildReport(plan));
      if (round.added.empty()) {
        out << "settled: every verdict is settled or at the cap of " << plan.settle->max_seeds
            << " seeds; nothing to submit (tensorscope sweep report " << plan.dir << ")\n";
        return kExitOk;
      }
      if (dryRun) {
        out << "round " << round.round << " would add seed " << round.seed << " (" << round.added.size()
            << " trials); not added (--dry-run)\n";
        return kExitOk;
      }
      model_core::extendSweepPlan(plan, round.added);
      out << "round " << round.round << ": seed " << round.seed << " for " << round.open.size() << " open verdict"
          << (round.open.size() == 1 ? "" : "s") << " (" << round.added.size() << " trials)\n";
    }
  }
  int ended = 0, inQueue = 0, elsewhere = 0;
  for (const auto& t : plan.trials) {
    const auto st = model_core::trialStatus(plan, t);
    const bool failed = st.state == TrialState::Failed || st.state == TrialState::Diverged;
    if (queued.count(t.index)) {
      ++inQueue;
    } else if (st.state == TrialState::Running) {
      ++elsewhere;
    } else if (st.state == TrialState::Finished || (failed && !retry)) {
      ++ended;
    } else {
      if (failed) model_core::clearTrialResult(plan, t, st);
      request.indices.push_back(t.index);
    }
  }
  if (!note.empty()) err << "tensorscope: " << note << "\n";
  if (request.indices.empty()) {
    out << "nothing to submit: " << ended << " trials have ended, " << inQueue << " are queued or running in Slurm"
        << (elsewhere ? ", " + std::to_string(elsewhere) + " run elsewhere" : std::string()) << "\n";
    return kExitOk;
  }
  request.sweepDir = plan.dir;
  request.sweepName = plan.sweep.name;
  request.executable = sweeps::selfExecutable();
  fs::create_directories(plan.dir + "/slurm");
  const std::string script = plan.dir + "/slurm/submit-" + std::to_string(jobs.size() + 1) + ".sbatch";
  const std::string text = sweeps::batchScript(request);
  files::writeFileAtomically(script, text);
  fs::permissions(script, fs::perms::owner_exec, fs::perm_options::add);
  if (dryRun) {
    out << "wrote " << script << " (not submitted: --dry-run)\n" << text;
    return kExitOk;
  }
  const std::string id = sweeps::submitBatch(script);
  jobs.push_back({id, request.indices, script});
  model_core::writeSlurmJobs(plan.dir, jobs);
  out << "submitted Slurm job " << id << ": " << request.indices.size() << " trials (array "
      << sweeps::batchArray(request) << ")\n"
      << "follow it: tensorscope sweep status " << plan.dir << "\n";
  return kExitOk;
}

}  // namespace tensorscope::app
