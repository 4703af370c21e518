#pragma once
/// Child processes of `sweep run` and the Slurm client (plain C++: no Qt, no torch): running a
/// program to capture what it prints, and a pool of trial processes started, reaped and signalled
/// without blocking.

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace tensorscope::sweeps {

/// Runs a program (no shell; found on PATH) and returns its exit status (128 + signal when killed,
/// 127 when it could not be started) with what it printed on stdout and stderr in `output`.
/// Throws std::runtime_error when no process can be created.
int runAndCapture(const std::vector<std::string>& words, std::string& output);

/// This program's own path (/proc/self/exe), to start copies of it. Throws std::runtime_error.
std::string selfExecutable();

/// Processes running at once, each known by a caller's tag (a trial index).
class ProcessPool {
 public:
  struct Exit {
    std::int64_t tag = -1;
    int code = 0;  ///< exit status, or 128 + the signal that killed it
  };

  /// Starts `words` (words[0] is the executable's path) with stdout and stderr appended to `logPath`.
  /// The child gets SIGTERM when this process dies, even by kill -9 (PR_SET_PDEATHSIG); one whose
  /// parent died before that took effect exits at once with `orphanExitCode`. Throws
  /// std::runtime_error when no process can be created.
  void start(std::int64_t tag, const std::vector<std::string>& words, const std::string& logPath, int orphanExitCode);
  /// One child that has ended, without waiting; nothing when every child still runs.
  std::optional<Exit> reap();
  /// Sends `signal` to every running child.
  void signalAll(int signal) const;
  std::size_t size() const { return running_.size(); }
  bool empty() const { return running_.empty(); }
  /// The tags of the running children, in start order of their process ids.
  std::vector<std::int64_t> tags() const;

 private:
  std::map<pid_t, std::int64_t> running_;
};

}  // namespace tensorscope::sweeps
