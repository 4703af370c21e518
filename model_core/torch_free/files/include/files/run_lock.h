#pragma once
/// One writer per run folder (docs/reliability.md, "One writer"): a training process holds an
/// exclusive open-file-description lock (fcntl F_OFD_SETLK) on RUN/train.lock for as long as it
/// trains that folder. The lock file says
/// who holds it (program, process id, host, start time) so that a refusal can name the holder; the
/// kernel releases the lock when the holder exits or is killed, so a crash never leaves a folder
/// locked. Such locks belong to an open file description, so two trainings of one folder inside
/// one process (two explorer runs) exclude each other as well as two processes do.

#include <optional>
#include <stdexcept>
#include <string>

namespace tensorscope::files {

inline constexpr const char* kRunLockName = "train.lock";

/// Thrown when another process (or another training in this one) holds the folder's lock. what()
/// names the folder and the holder; holder() is the holder's description alone.
class RunLockedError : public std::runtime_error {
 public:
  RunLockedError(const std::string& runDir, std::string holder);
  const std::string& holder() const { return holder_; }

 private:
  std::string holder_;
};

/// The lock of one run folder, held until destroyed (movable, not copyable).
class RunLock {
 public:
  /// Takes RUN/train.lock (the folder must exist) and records `program` ("tensorscope train",
  /// "the Tensorscope explorer", …) with this process's id, host and the time as the holder.
  /// Throws RunLockedError when the lock is held, std::runtime_error when the lock file cannot be
  /// created or locked (with the system's reason).
  static RunLock acquire(const std::string& runDir, const std::string& program);
  RunLock(RunLock&& other) noexcept;
  RunLock& operator=(RunLock&& other) noexcept;
  RunLock(const RunLock&) = delete;
  RunLock& operator=(const RunLock&) = delete;
  ~RunLock();

 private:
  explicit RunLock(int fd) : fd_(fd) {}
  int fd_ = -1;
};

/// Who holds the lock of `runDir` ("tensorscope train, process 4242 on host, since 2026-11-26
/// 15:02:11 UTC"), or nullopt when nobody does (no lock file, or one nobody holds). Cheap: one open,
/// one lock test that takes nothing and a bounded read; safe to call a few times a second.
std::optional<std::string> runLockHolder(const std::string& runDir);

}  // namespace tensorscope::files
