// inspectRunDirectory: what a run directory holds, for the explorer's Open run… and Resume.

#include <filesystem>
#include <string>

#include "files/read_file.h"
#include "model_core/run_config.h"
#include "model_core/run_directory.h"
#include "model_core/run_files.h"
#include "model_core/safetensors.h"
#include "training/checkpoint_store.h"

namespace tensorscope::model_core {

RunDirectoryState inspectRunDirectory(const std::string& runDir) {
  namespace fs = std::filesystem;
  RunDirectoryState out;
  const auto problem = [&](const std::string& what) { out.problems.push_back(what); };
  try {
    readRunConfig(runDir + "/config.json");
  } catch (const std::exception& e) {
    problem(e.what());
    return out;  // without a config nothing else can be read as this run's
  }
  std::string dir;
  try {
    dir = checkpointFilesDir(runDir);  // the newest checkpoint that verifies, or the run itself
  } catch (const std::exception& e) {
    problem(e.what());
    return out;
  }
  const std::string statePath = dir + "/trainer_state.json", weightsPath = dir + "/model.safetensors";
  const bool hasState = fs::exists(statePath), hasWeights = fs::exists(weightsPath);
  if (!hasState && !hasWeights) return out;  // stopped before its first checkpoint: no history
  std::int64_t step = -1;
  if (!hasState) {
    problem(statePath + " is missing: the weights have no training state to resume from");
  } else {
    try {
      step = parseTrainerState(files::readBoundedFile(statePath), statePath).step;
    } catch (const std::exception& e) {
      problem(e.what());
    }
  }
  if (!hasWeights) {
    problem(weightsPath + " is missing: the run has a training state but no weights");
  } else {
    try {
      readSafetensorsHeader(weightsPath);
    } catch (const std::exception& e) {
      problem(weightsPath + ": " + e.what());
    }
  }
  if (out.problems.empty()) out.checkpoint_step = step;
  return out;
}

}  // namespace tensorscope::model_core
