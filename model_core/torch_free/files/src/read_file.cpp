#include "files/read_file.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace tensorscope::files {

std::string readBoundedFile(const std::string& path, std::uintmax_t maxBytes) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) throw std::runtime_error("cannot open " + path + ": " + std::strerror(errno));
  if (S_ISDIR(st.st_mode)) throw std::runtime_error(path + " is a directory, not a file");
  if (!S_ISREG(st.st_mode))
    throw std::runtime_error(path + " is not a regular file (a device, FIFO or socket); give a file");
  if (std::uintmax_t(st.st_size) > maxBytes)
    throw std::runtime_error(path + " is " + std::to_string(st.st_size) + " bytes; files of this kind may hold at most " +
                             std::to_string(maxBytes) + " bytes");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + path + ": " + std::strerror(errno));
  std::string text;
  text.resize(std::size_t(st.st_size));
  in.read(text.data(), std::streamsize(text.size()));
  if (in.gcount() != std::streamsize(text.size()) || in.bad())
    throw std::runtime_error("cannot read " + path + ": it changed while being read, or " + std::strerror(errno));
  return text;
}

std::string readWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + path + ": " + std::strerror(errno));
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw std::runtime_error("cannot read " + path + ": " + std::strerror(errno));
  return ss.str();
}

}  // namespace tensorscope::files
