// The process pool and the Slurm client of sweeps (app/src/sweeps): real child processes, and
// stand-ins for squeue and sbatch put first on PATH.
#include <gtest/gtest.h>

#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "sweeps/process_pool.h"
#include "sweeps/slurm_client.h"

namespace tensorscope::sweeps {
namespace {

namespace fs = std::filesystem;

class Scratch {
 public:
  explicit Scratch(const std::string& name) : dir_(fs::temp_directory_path() / ("ts_sweeps_" + name + "_" + std::to_string(::getpid()))) {
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  ~Scratch() { fs::remove_all(dir_); }
  std::string path(const std::string& leaf) const { return (dir_ / leaf).string(); }
  /// An executable shell script named `name` in this folder.
  void script(const std::string& name, const std::string& body) const {
    std::ofstream(path(name)) << "#!/bin/sh\n" << body << "\n";
    fs::permissions(path(name), fs::perms::owner_all);
  }

 private:
  fs::path dir_;
};

/// PATH set to `dir` (only) for the scope.
class PathOnly {
 public:
  explicit PathOnly(const std::string& dir) : old_(std::getenv("PATH") ? std::getenv("PATH") : "") { ::setenv("PATH", dir.c_str(), 1); }
  ~PathOnly() { ::setenv("PATH", old_.c_str(), 1); }

 private:
  std::string old_;
};

std::optional<ProcessPool::Exit> reapWithin(ProcessPool& pool, double seconds) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < end) {
    if (auto e = pool.reap()) return e;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return std::nullopt;
}

TEST(Processes, RunAndCaptureReturnsTheStatusAndBothStreams) {
  std::string out;
  EXPECT_EQ(runAndCapture({"/bin/sh", "-c", "echo to-out; echo to-err >&2; exit 3"}, out), 3);
  EXPECT_EQ(out, "to-out\nto-err\n");
  EXPECT_EQ(runAndCapture({"/bin/sh", "-c", "kill -TERM $$"}, out), 128 + SIGTERM);
  EXPECT_EQ(runAndCapture({"no-such-program-tensorscope"}, out), 127);
  EXPECT_FALSE(selfExecutable().empty());
  EXPECT_TRUE(fs::exists(selfExecutable()));
}

TEST(ProcessPool, StartsReapsByTagAndAppendsToTheLog) {
  Scratch s("pool");
  ProcessPool pool;
  pool.start(7, {"/bin/sh", "-c", "echo trial seven; exit 4"}, s.path("log.txt"), 3);
  pool.start(9, {"/bin/sleep", "30"}, s.path("sleep.txt"), 3);
  EXPECT_EQ(pool.size(), 2u);
  const auto first = reapWithin(pool, 10);
  ASSERT_TRUE(first);
  EXPECT_EQ(first->tag, 7);
  EXPECT_EQ(first->code, 4);
  std::ifstream log(s.path("log.txt"));
  std::stringstream text;
  text << log.rdbuf();
  EXPECT_EQ(text.str(), "trial seven\n");
  EXPECT_EQ(pool.tags(), (std::vector<std::int64_t>{9}));
  EXPECT_FALSE(pool.reap());  // the sleeper still runs
  pool.signalAll(SIGTERM);
  const auto second = reapWithin(pool, 10);
  ASSERT_TRUE(second);
  EXPECT_EQ(second->tag, 9);
  EXPECT_EQ(second->code, 128 + SIGTERM);
  EXPECT_TRUE(pool.empty());
}

TEST(SlurmClient, ArraysAreFoldedAndWordsQuotedForTheShell) {
  EXPECT_EQ(arraySpec({0, 1, 2, 5, 7, 8}), "0-2,5,7-8");
  EXPECT_EQ(arraySpec({4}), "4");
  EXPECT_EQ(arraySpec({}), "");
  EXPECT_EQ(shellQuote("a b"), "'a b'");
  EXPECT_EQ(shellQuote("it's"), "'it'\\''s'");
}

TEST(SlurmClient, AResultSaysWhereItsTrialWasTrained) {
  ::setenv("SLURM_ARRAY_JOB_ID", "12", 1);
  ::setenv("SLURM_ARRAY_TASK_ID", "3", 1);
  EXPECT_EQ(whereTrained(), "slurm job 12_3");
  ::unsetenv("SLURM_ARRAY_JOB_ID");
  ::unsetenv("SLURM_ARRAY_TASK_ID");
  const std::string local = whereTrained();
  EXPECT_EQ(local.rfind("local (", 0), 0u) << local;
  EXPECT_GT(local.size(), std::string("local ()").size()) << "names the host: " << local;
}

TEST(SlurmClient, TheBatchScriptRunsOneTrialPerArrayIndex) {
  BatchRequest r;
  r.sweepDir = "/data/my sweep";
  r.sweepName = "design space";
  r.indices = {0, 1, 2, 6};
  r.executable = "/usr/bin/tensorscope";
  r.cpusPerTask = 4;
  r.gpus = 1;
  r.partition = "gpu";
  r.time = "01:00:00";
  r.arrayLimit = 2;
  EXPECT_EQ(batchArray(r), "0-2,6%2");
  const std::string script = batchScript(r);
  for (const char* line : {"#!/bin/bash\n", "#SBATCH --job-name=tensorscope-design_space\n", "#SBATCH --array=0-2,6%2\n",
                           "#SBATCH --cpus-per-task=4\n", "#SBATCH --output=/data/my sweep/slurm/%A_%a.out\n",
                           "#SBATCH --partition=gpu\n", "#SBATCH --time=01:00:00\n", "#SBATCH --gres=gpu:1\n",
                           "exec '/usr/bin/tensorscope' --threads \"${SLURM_CPUS_PER_TASK:-1}\" sweep run-trial "
                           "'/data/my sweep' \"$SLURM_ARRAY_TASK_ID\" --device cuda\n"})
    EXPECT_NE(script.find(line), std::string::npos) << line << "\n--- in ---\n" << script;
  r.gpus = 0;
  r.partition.reset();
  EXPECT_EQ(batchScript(r).find("--gres"), std::string::npos);
  EXPECT_EQ(batchScript(r).find("--device cuda"), std::string::npos);
  EXPECT_EQ(batchScript(r).find("--partition"), std::string::npos);
}

TEST(SlurmClient, SqueueIsReadAndItsAbsenceOrFailureIsSaid) {
  Scratch s("squeue");
  std::string note;
  EXPECT_TRUE(slurmStates({}, note).empty());  // no jobs: squeue is not asked
  EXPECT_TRUE(note.empty());
  const std::vector<model_core::SlurmJob> jobs = {{"12", {0, 1, 2}, "a.sbatch"}};
  {
    PathOnly path(s.path(""));  // no squeue at all
    EXPECT_TRUE(slurmStates(jobs, note).empty());
    EXPECT_EQ(note, "squeue is not available here");
  }
  s.script("squeue", "echo \"$*\" > '" + s.path("args") + "'\nprintf '12_0|RUNNING\\n12_[1-2]|PENDING\\n12_2|PENDING\\n'");
  {
    PathOnly path(s.path(""));
    note.clear();
    const auto states = slurmStates(jobs, note);
    EXPECT_TRUE(note.empty()) << note;
    ASSERT_EQ(states.size(), 2u);
    EXPECT_EQ(states.at(0), "RUNNING (job 12_0)");
    EXPECT_EQ(states.at(2), "PENDING (job 12_2)");
  }
  std::ifstream args(s.path("args"));
  std::string words;
  std::getline(args, words);
  EXPECT_EQ(words, "--noheader --array --jobs=12 --format=%i|%T");
  s.script("squeue", "echo 'slurm_load_jobs error: Invalid job id specified' >&2; exit 1");
  {
    PathOnly path(s.path(""));
    note.clear();
    EXPECT_TRUE(slurmStates(jobs, note).empty());
    EXPECT_TRUE(note.empty()) << "ids squeue forgot are no error: " << note;
  }
  s.script("squeue", "echo 'Unable to contact slurm controller' >&2; exit 1");
  {
    PathOnly path(s.path(""));
    EXPECT_TRUE(slurmStates(jobs, note).empty());
    EXPECT_EQ(note, "squeue failed: Unable to contact slurm controller\n");
  }
}

TEST(SlurmClient, SbatchGivesTheJobIdOrAClearRefusal) {
  Scratch s("sbatch");
  {
    PathOnly path(s.path(""));
    try {
      submitBatch("x.sbatch");
      ADD_FAILURE() << "no sbatch: must throw";
    } catch (const std::runtime_error& e) {
      EXPECT_STREQ(e.what(), "sbatch is not available on this machine: submit from a Slurm login node");
    }
  }
  s.script("sbatch", "echo '4242;cluster'");
  {
    PathOnly path(s.path(""));
    EXPECT_EQ(submitBatch("x.sbatch"), "4242");
  }
  s.script("sbatch", "echo 'sbatch: error: invalid partition' >&2; exit 1");
  {
    PathOnly path(s.path(""));
    try {
      submitBatch("x.sbatch");
      ADD_FAILURE() << "a refusal must throw";
    } catch (const std::runtime_error& e) {
      EXPECT_EQ(std::string(e.what()), "sbatch refused the job array (x.sbatch): sbatch: error: invalid partition\n");
    }
  }
  s.script("sbatch", "echo 'Submitted'");
  {
    PathOnly path(s.path(""));
    EXPECT_THROW(submitBatch("x.sbatch"), std::runtime_error);
  }
}

}  // namespace
}  // namespace tensorscope::sweeps
