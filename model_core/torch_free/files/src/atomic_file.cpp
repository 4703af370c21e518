#include "files/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>
#include <stdexcept>

namespace tensorscope::files {
namespace {

/// "cannot write PATH: <reason> (<step>)": the file the user asked for, not the temporary one.
std::runtime_error sysError(const std::string& step, const std::string& path) {
  return std::runtime_error("cannot write " + path + ": " + std::strerror(errno) + " (" + step + ")");
}

}  // namespace

void writeFileAtomically(const std::string& path, std::string_view contents) {
  namespace fs = std::filesystem;
  const fs::path target(path);
  const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  std::random_device rd;
  std::string leaf = ".";  // appended step by step: GCC 12 warns (-Wrestrict, falsely) on "." + string
  leaf += target.filename().string();
  leaf += ".tmp";
  leaf += std::to_string(rd());
  const std::string tmp = (dir / leaf).string();

  fileOperation("create");
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) throw sysError("creating its temporary file " + tmp, path);
  const char* p = contents.data();
  size_t left = contents.size();
  while (left > 0) {
    fileOperation("write");
    const ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      auto err = sysError("writing", path);
      ::close(fd);
      ::unlink(tmp.c_str());
      throw err;
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  fileOperation("fsync");
  if (::fsync(fd) != 0) {
    auto err = sysError("flushing to disk", path);
    ::close(fd);
    ::unlink(tmp.c_str());
    throw err;
  }
  if (::close(fd) != 0) {
    auto err = sysError("closing", path);
    ::unlink(tmp.c_str());
    throw err;
  }
  fileOperation("rename");
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    auto err = sysError("replacing the previous file", path);
    ::unlink(tmp.c_str());
    throw err;
  }
  // Make the rename itself durable.
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

void fileOperation(const char* what) {
  static const long long killAt = [] {
    const char* v = std::getenv("TENSORSCOPE_KILL_AT_FILE_OP");
    return v ? std::atoll(v) : 0LL;
  }();
  static std::atomic<long long> count{0};
  if (killAt > 0 && ++count == killAt) {
    std::fprintf(stderr, "tensorscope: TENSORSCOPE_KILL_AT_FILE_OP=%lld: killed before %s\n", killAt, what);
    std::raise(SIGKILL);
  }
}

}  // namespace tensorscope::files
