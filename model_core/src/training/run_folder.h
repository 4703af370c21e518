#pragma once
/// Opening a run folder for training (private to model_core's trainer; docs/reliability.md, "Run
/// folders"): the checks that come before anything is written or deleted, the one-writer lock, the
/// checkpoint a resume continues, and the repairs of what a kill left. Torch-free.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "files/run_lock.h"
#include "training/checkpoint_store.h"

namespace tensorscope::model_core {

struct OpenedRunFolder {
  files::RunLock lock;                 ///< held for the whole training
  std::optional<CheckpointInfo> from;  ///< the checkpoint a resume continues; nullopt: a new run or the legacy layout
  bool fellBack = false;               ///< the current checkpoint did not verify: `from` is an earlier one
  std::vector<std::string> notes;      ///< what the user is told (fallbacks, clean-up, repairs)
};

/// Creates `runDir` when needed (a name the file system cannot hold is said in a sentence), refuses
/// a new run in a folder that is neither empty nor its own, takes the folder's lock (RunLockedError
/// naming the holder), refuses a linked checkpoints/, checks that a new run finds no run and a
/// resume finds a complete checkpoint, then removes the litter of killed writes (only names
/// Tensorscope makes), the files of a start stopped before its first commit (a new run starts
/// again in place) and points a stale `latest` at the checkpoint again. Throws
/// std::invalid_argument with the reason and the remedy.
OpenedRunFolder openRunFolder(const std::string& runDir, bool resume);

/// The step of the run's inspection file; -1 without a readable one.
std::int64_t inspectionStep(const std::string& runDir);

/// RUN/run_status.json: how the run ended (finished, stopped, diverged, failed) and the step of
/// the checkpoint it left.
void writeRunStatus(const std::string& runDir, const std::string& status, const std::string& message,
                    std::int64_t checkpointStep);

}  // namespace tensorscope::model_core
