#pragma once
/// The Slurm client of sweeps (plain C++: no Qt, no torch): the cluster's own scheduler runs the
/// trials as a job array, one trial per array index, each task running
/// `tensorscope sweep run-trial DIR INDEX`. Each trial's outcome stays in its folder (result.json),
/// so reports never need Slurm's accounting; squeue tells what is queued or running.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "model_core/sweep.h"

namespace tensorscope::sweeps {

/// What squeue says of these jobs' array tasks: trial index -> e.g. "PENDING (job 12_3)". `note`
/// says why squeue could not be asked (not installed, no controller); ids squeue no longer knows
/// (all ended and forgotten) are no error.
std::map<std::int64_t, std::string> slurmStates(const std::vector<model_core::SlurmJob>& jobs, std::string& note);
/// slurmStates of the jobs recorded in SWEEP_DIR/slurm.json.
std::map<std::int64_t, std::string> slurmQueue(const std::string& sweepDir, std::string& note);

/// Where this process trains, for a trial's result: "slurm job J_I" inside a Slurm array task,
/// "local (HOST)" elsewhere.
std::string whereTrained();

/// Slurm's array specification of sorted indices, runs folded: {0,1,2,5} -> "0-2,5".
std::string arraySpec(const std::vector<std::int64_t>& indices);
/// `s` quoted for a POSIX shell.
std::string shellQuote(const std::string& s);

struct BatchRequest {
  std::string sweepDir;   ///< absolute, without control characters
  std::string sweepName;
  std::vector<std::int64_t> indices;
  std::string executable;  ///< the tensorscope to run
  std::int64_t cpusPerTask = 1;
  std::int64_t gpus = 0;
  std::optional<std::string> partition, time;  ///< checked by the caller (letters, digits, ":-_.,")
  std::optional<std::int64_t> arrayLimit;
};
/// The sbatch script of a job array running one trial per index.
std::string batchScript(const BatchRequest& request);
/// The array specification the script asks for (with its %limit).
std::string batchArray(const BatchRequest& request);

/// Submits a batch script with `sbatch --parsable` and returns the job id. Throws
/// std::runtime_error saying why (no sbatch here, sbatch's refusal, an answer that is no id).
std::string submitBatch(const std::string& scriptPath);

}  // namespace tensorscope::sweeps
