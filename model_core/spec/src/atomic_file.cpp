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

std::runtime_error sysError(const std::string& what, const std::string& path) {
  return std::runtime_error(what + " " + path + ": " + std::strerror(errno));
}

}  // namespace

void writeFileAtomically(const std::string& path, std::string_view contents) {
  namespace fs = std::filesystem;
  const fs::path target(path);
  const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  std::random_device rd;
  const std::string tmp =
      (dir / ("." + target.filename().string() + ".tmp" + std::to_string(rd()))).string();

  fileOperation("create");
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) throw sysError("cannot create", tmp);
  const char* p = contents.data();
  size_t left = contents.size();
  while (left > 0) {
    fileOperation("write");
    const ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      auto err = sysError("cannot write", tmp);
      ::close(fd);
      ::unlink(tmp.c_str());
      throw err;
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  fileOperation("fsync");
  if (::fsync(fd) != 0) {
    auto err = sysError("cannot flush", tmp);
    ::close(fd);
    ::unlink(tmp.c_str());
    throw err;
  }
  if (::close(fd) != 0) {
    auto err = sysError("cannot close", tmp);
    ::unlink(tmp.c_str());
    throw err;
  }
  fileOperation("rename");
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    auto err = sysError("cannot replace", path);
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
  if (!in) throw sysError("cannot open", path);
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw sysError("cannot read", path);
  return ss.str();
}

}  // namespace tensorscope::spec
