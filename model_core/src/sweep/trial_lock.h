#pragma once
/// Both sides of a trial's lock (TRIAL/lock, an flock(2) lock): the process training a trial holds
/// it exclusively for as long as it trains (released by the kernel when the process dies, so a
/// killed trial never looks running), and `trialStatus` asks whether anyone holds it.

#include <optional>
#include <string>

namespace tensorscope::model_core {

/// An exclusive lock on a trial's lock file, held until destruction.
class TrialLock {
 public:
  /// Takes the lock without waiting. Returns nothing when another process holds it. Throws
  /// std::runtime_error naming the file when it cannot be opened (or created).
  static std::optional<TrialLock> tryAcquire(const std::string& path);
  TrialLock(TrialLock&& other) noexcept;
  TrialLock& operator=(TrialLock&&) = delete;
  TrialLock(const TrialLock&) = delete;
  ~TrialLock();

 private:
  explicit TrialLock(int fd) : fd_(fd) {}
  int fd_ = -1;
};

/// Whether a process holds the lock at `path` now (false for a file that does not exist).
bool trialLockHeld(const std::string& path);

}  // namespace tensorscope::model_core
