#pragma once
/// Crash-consistent checkpoints of a run directory (docs/reliability.md).
///
/// A checkpoint is one immutable directory, `checkpoints/step-<step>.<tag>/`, holding the files the
/// trainer wrote (weights, optimizer, trainer state) and a manifest written last with every file's
/// size and FNV-1a digest, the step and counters such as the metrics logs' lengths at the commit.
/// The files are written into a staging directory and fsynced, the staging directory is renamed
/// into place, and only then does `checkpoint.json` (replaced by one atomic rename) point at it:
/// a crash at any moment leaves the previous pointer naming a complete checkpoint, or no pointer at
/// all during a run's first checkpoint. The pointer keeps the previous checkpoint too, so a
/// checkpoint damaged later (a disk error, an edit) falls back to the one before, with the reason.
///
/// Private to model_core (the trainer, warm starts, exports) and torch-free: the trainer fills the
/// staging directory through its own writers, and the fuzz harnesses build it alone.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace tensorscope::model_core {

struct CheckpointInfo {
  std::string dir;           ///< the checkpoint's directory
  std::int64_t step = 0;     ///< the training step it holds
  std::map<std::string, std::int64_t> counters;  ///< recorded at the commit (metrics log lengths)
};

class CheckpointStore {
 public:
  explicit CheckpointStore(std::string runDir);

  /// True when checkpoint.json exists: the run has committed at least one checkpoint.
  bool hasCommitted() const;
  /// An empty staging directory for the next checkpoint's files (a stale one is removed first).
  std::string stage() const;
  /// Commits the files of `staged` (from stage()) as the checkpoint of `step`: fsyncs them, writes
  /// the manifest, renames the directory into place and points checkpoint.json at it (keeping the
  /// previous one); then removes checkpoints older than the previous. Throws std::runtime_error
  /// with the path and the system's reason when any step fails: the pointer then still names the
  /// last committed checkpoint.
  CheckpointInfo commit(const std::string& staged, std::int64_t step,
                        const std::map<std::string, std::int64_t>& counters) const;
  /// The newest committed checkpoint whose files verify against its manifest: the current one,
  /// else the previous one (or, with an unreadable pointer, the newest that verifies), each
  /// passed-over checkpoint's reason appended to `notes`. nullopt when nothing was ever committed;
  /// std::invalid_argument with every reason when nothing verifies.
  std::optional<CheckpointInfo> latest(std::vector<std::string>* notes = nullptr) const;
  /// Points checkpoint.json at `checkpoint` alone (after falling back to it), so that the next
  /// commit keeps it as the previous checkpoint.
  void pointAt(const CheckpointInfo& checkpoint) const;
  /// Removes what no committed checkpoint needs: staging directories, temporary files of the run's
  /// own atomic writes and checkpoint directories the pointer does not name — only names Tensorscope
  /// makes; anything else in the folder stays. Returns what it removed.
  std::vector<std::string> removeLitter() const;
  /// Points `latest` at `checkpoint` when it names another (a kill between the pointer's commit and
  /// the link's rename leaves it behind). Returns whether it changed the link.
  bool repairLatest(const CheckpointInfo& checkpoint) const;

  /// Every call that writes or deletes (stage, commit, pointAt, removeLitter) first refuses a
  /// `checkpoints` that is a symbolic link or not a folder (std::invalid_argument with the remedy):
  /// old checkpoints are deleted there, never through a link.
  void requireOwnCheckpointsFolder() const;

 private:
  std::string runDir_;
};

/// The entries of `runDir` that Tensorscope did not make (a user's files and folders, a config.json
/// that is no run config, a symbolically linked checkpoints/, foreign names inside it), at most six:
/// a new run starts only in a folder where this is empty. Empty for a missing folder.
std::vector<std::string> foreignRunFolderEntries(const std::string& runDir);

/// Removes the run files a start wrote before its first checkpoint commit (config.json, the metrics
/// logs, the inspections, run_status.json, init.json, latest), so that the run starts again in place.
/// Returns the names removed.
std::vector<std::string> removeUncommittedRunFiles(const std::string& runDir);

/// Checks one checkpoint directory against its manifest (format, every file's size and digest).
/// Returns an empty string and fills `info` when it verifies, else the reason.
std::string verifyCheckpoint(const std::string& dir, CheckpointInfo* info);

/// The directory that holds a run's current checkpoint files: the newest verified checkpoint of a
/// run with checkpoint.json; `runDir` itself otherwise (snapshots, exports and runs written before
/// checkpoint directories keep model.safetensors at the top). Throws std::invalid_argument when
/// the run has checkpoints and none verifies.
std::string checkpointFilesDir(const std::string& runDir);

/// 64-bit FNV-1a of `bytes`, as 16 lower-case hex digits.
std::string fnv1a64Hex(const std::string& bytes);

}  // namespace tensorscope::model_core
