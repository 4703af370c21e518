#include "sweeps/process_pool.h"

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <stdexcept>

namespace tensorscope::sweeps {
namespace {

std::vector<char*> argvOf(std::vector<std::string>& words) {
  std::vector<char*> argv;
  for (auto& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);
  return argv;
}

int exitCode(int wstatus) { return WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : 128 + WTERMSIG(wstatus); }

/// In a child between fork and exec: no signal blocked. The command line blocks SIGINT and SIGTERM in
/// every thread (cli/stop_signals.h) and a child inherits its thread's mask; what it runs (sbatch, a
/// trial) must be interruptible as usual. sigprocmask is async-signal-safe.
void unblockSignalsInChild() {
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
}

}  // namespace

int runAndCapture(const std::vector<std::string>& words, std::string& output) {
  int pipeFd[2];
  if (::pipe(pipeFd) != 0) throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  std::vector<std::string> copy = words;
  const auto argv = argvOf(copy);  // built before fork: the child only calls async-signal-safe functions
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(pipeFd[0]);
    ::close(pipeFd[1]);
    throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  }
  if (pid == 0) {
    unblockSignalsInChild();
    ::dup2(pipeFd[1], 1);
    ::dup2(pipeFd[1], 2);
    ::close(pipeFd[0]);
    ::close(pipeFd[1]);
    ::execvp(argv[0], argv.data());
    _exit(127);
  }
  ::close(pipeFd[1]);
  output.clear();
  char buf[4096];
  ssize_t n;
  while ((n = ::read(pipeFd[0], buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR))
    if (n > 0) output.append(buf, static_cast<std::size_t>(n));
  ::close(pipeFd[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return exitCode(status);
}

std::string selfExecutable() {
  std::error_code ec;
  const auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) throw std::runtime_error("cannot find this program's path (/proc/self/exe): " + ec.message());
  return p.string();
}

void ProcessPool::start(std::int64_t tag, const std::vector<std::string>& words, const std::string& logPath,
                        int orphanExitCode) {
  std::vector<std::string> copy = words;
  const auto argv = argvOf(copy);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error(std::string("cannot start a process: ") + std::strerror(errno));
  if (pid == 0) {
    // A child outlives no parent: when it dies (even by kill -9) the child gets SIGTERM, which a
    // trial turns into a checkpoint and a stop. A parent gone before prctl took effect is seen here.
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != parent) _exit(orphanExitCode);
    const int fd = ::open(logPath.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd >= 0) ::dup2(fd, 1), ::dup2(fd, 2);
    std::signal(SIGINT, SIG_DFL);
    unblockSignalsInChild();
    ::execv(argv[0], argv.data());
    _exit(127);
  }
  running_[pid] = tag;
}

std::optional<ProcessPool::Exit> ProcessPool::reap() {
  int wstatus = 0;
  const pid_t pid = ::waitpid(-1, &wstatus, WNOHANG);
  const auto it = pid > 0 ? running_.find(pid) : running_.end();
  if (it == running_.end()) return std::nullopt;
  Exit e{it->second, exitCode(wstatus)};
  running_.erase(it);
  return e;
}

void ProcessPool::signalAll(int signal) const {
  for (const auto& [pid, tag] : running_) ::kill(pid, signal);
}

std::vector<std::int64_t> ProcessPool::tags() const {
  std::vector<std::int64_t> t;
  for (const auto& [pid, tag] : running_) t.push_back(tag);
  return t;
}

}  // namespace tensorscope::sweeps
