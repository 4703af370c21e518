#include "spec/atomic_file.h"

#include "spec/checkpoint_store.h"  // fileOperation: the crash tests' hook

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>

namespace tensorscope::spec {
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

std::string readWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + path + ": " + std::strerror(errno));
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw std::runtime_error("cannot read " + path + ": " + std::strerror(errno));
  return ss.str();
}

}  // namespace tensorscope::spec
