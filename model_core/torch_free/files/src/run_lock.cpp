#include "files/run_lock.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>

#include "files/atomic_file.h"

namespace tensorscope::files {
namespace {

std::string lockPath(const std::string& runDir) { return runDir + "/" + kRunLockName; }

/// The holder's line from an open lock file (at most 512 bytes, control characters dropped).
std::string readHolder(int fd) {
  char buf[512];
  const ssize_t n = ::pread(fd, buf, sizeof buf, 0);
  std::string s;
  for (ssize_t i = 0; i < n; ++i)
    if (static_cast<unsigned char>(buf[i]) >= 0x20) s += buf[i];
  return s.empty() ? "another process (it has not said who it is yet)" : s;
}

/// An open-file-description lock (fcntl F_OFD_*) over the whole file: like flock(2) it belongs to
/// the open file and goes with the last close or the process's death, and unlike flock a reader
/// can test it (F_OFD_GETLK) without taking it, so a window polling the lock never makes a trainer
/// starting at that moment see it held.
struct flock wholeFile(short type) {
  struct flock fl {};
  fl.l_type = type;
  fl.l_whence = SEEK_SET;
  fl.l_start = 0;
  fl.l_len = 0;
  fl.l_pid = 0;
  return fl;
}

std::string describeSelf(const std::string& program) {
  char host[256] = {0};
  if (::gethostname(host, sizeof host - 1) != 0) std::strcpy(host, "this host");
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  ::gmtime_r(&now, &tm);
  char when[64];
  std::strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S UTC", &tm);
  return program + ", process " + std::to_string(::getpid()) + " on " + host + ", since " + when;
}

}  // namespace

RunLockedError::RunLockedError(const std::string& runDir, std::string holder)
    : std::runtime_error(runDir + " is being trained by " + holder +
                         "; one run folder has one writer: stop that training first (or wait for it), or "
                         "choose another folder"),
      holder_(std::move(holder)) {}

RunLock RunLock::acquire(const std::string& runDir, const std::string& program) {
  const std::string path = lockPath(runDir);
  fileOperation("create");
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0)
    throw std::runtime_error("cannot open the lock file " + path + ": " + std::strerror(errno));
  struct flock fl = wholeFile(F_WRLCK);
  if (::fcntl(fd, F_OFD_SETLK, &fl) != 0) {
    const int err = errno;
    if (err == EAGAIN || err == EACCES) {
      std::string holder = readHolder(fd);
      ::close(fd);
      throw RunLockedError(runDir, std::move(holder));
    }
    ::close(fd);
    throw std::runtime_error("cannot lock " + path + ": " + std::strerror(err));
  }
  // Who holds it, for the refusals of others; best effort (a full disk still trains).
  const std::string line = describeSelf(program) + "\n";
  if (::ftruncate(fd, 0) == 0) {
    const ssize_t ignored = ::pwrite(fd, line.data(), line.size(), 0);
    (void)ignored;
  }
  return RunLock(fd);
}

RunLock::RunLock(RunLock&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }

RunLock& RunLock::operator=(RunLock&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

RunLock::~RunLock() {
  // The description stays in the file; nobody holds the lock once it is closed, and a reader
  // probes the lock, not the text.
  if (fd_ >= 0) ::close(fd_);
}

std::optional<std::string> runLockHolder(const std::string& runDir) {
  const std::string path = lockPath(runDir);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return std::nullopt;
  std::optional<std::string> holder;
  struct flock fl = wholeFile(F_WRLCK);  // "could a writer lock it?": answered without locking
  if (::fcntl(fd, F_OFD_GETLK, &fl) == 0 && fl.l_type != F_UNLCK) holder = readHolder(fd);
  ::close(fd);
  return holder;
}

}  // namespace tensorscope::files
