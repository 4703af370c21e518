#include "tasks/data_sources.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <stdexcept>

namespace tensorscope::model_core::tasks {
namespace {

constexpr int64_t kMaxCount = 100'000'000;
constexpr int64_t kMaxSide = 4096;

std::string hex32(std::uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08X", v);
  return buf;
}

/// gzFile with errors that name the file.
class GzReader {
 public:
  explicit GzReader(const std::string& path) : path_(path), file_(gzopen(path.c_str(), "rb")) {
    if (!file_) throw std::runtime_error("cannot open " + path + ": " + std::strerror(errno ? errno : ENOMEM));
    gzbuffer(file_, 1 << 18);
  }
  ~GzReader() { gzclose(file_); }
  GzReader(const GzReader&) = delete;
  GzReader& operator=(const GzReader&) = delete;

  /// Reads up to n bytes; fewer only at the end of the data. Throws on a corrupt stream.
  std::size_t read(void* out, std::size_t n) {
    std::size_t done = 0;
    while (done < n) {
      const auto chunk = static_cast<unsigned>(std::min<std::size_t>(n - done, 1u << 30));
      const int got = gzread(file_, static_cast<char*>(out) + done, chunk);
      if (got < 0 || (got == 0 && !gzeof(file_))) fail();
      if (got == 0) break;
      done += static_cast<std::size_t>(got);
    }
    int err = Z_OK;
    gzerror(file_, &err);
    if (err != Z_OK && err != Z_STREAM_END) fail();  // e.g. a truncated gzip stream
    return done;
  }

  /// Reads exactly n bytes or throws "truncated: expected n bytes of <what>, got k".
  void readExactly(void* out, std::size_t n, const std::string& what) {
    const std::size_t got = read(out, n);
    if (got != n)
      throw std::runtime_error(path_ + ": truncated: expected " + std::to_string(n) + " bytes of " + what + ", got " +
                               std::to_string(got));
  }

  /// Reads exactly n bytes, growing the buffer as data arrives, so a header that promises more
  /// than the file holds fails as "truncated" without allocating what it promised.
  std::vector<std::uint8_t> readBlock(std::size_t n, const std::string& what) {
    constexpr std::size_t kChunk = std::size_t{1} << 24;
    std::vector<std::uint8_t> out;
    out.reserve(std::min(n, 4 * kChunk));
    while (out.size() < n) {
      const std::size_t old = out.size();
      const std::size_t chunk = std::min(n - old, kChunk);
      out.resize(old + chunk);
      const std::size_t got = read(out.data() + old, chunk);
      out.resize(old + got);
      if (got < chunk) break;
    }
    if (out.size() != n)
      throw std::runtime_error(path_ + ": truncated: expected " + std::to_string(n) + " bytes of " + what + ", got " +
                               std::to_string(out.size()));
    return out;
  }

  void expectEnd(const std::string& what) {
    char extra = 0;
    if (read(&extra, 1) != 0)
      throw std::runtime_error(path_ + ": unexpected data after the " + what + " (the file is longer than its header says)");
  }

  std::uint32_t readBigEndian(const std::string& what) {
    unsigned char b[4];
    readExactly(b, 4, what);
    return (std::uint32_t{b[0]} << 24) | (std::uint32_t{b[1]} << 16) | (std::uint32_t{b[2]} << 8) | b[3];
  }

 private:
  [[noreturn]] void fail() {
    int err = Z_OK;
    const char* msg = gzerror(file_, &err);
    throw std::runtime_error(path_ + ": corrupt or truncated gzip data (" + (msg ? msg : "unknown zlib error") + ")");
  }

  std::string path_;
  gzFile file_;
};

void checkMagic(std::uint32_t magic, std::uint32_t expected, const std::string& path, const char* kind) {
  if (magic != expected)
    throw std::runtime_error(path + ": not an IDX " + kind + " file: magic number " + hex32(magic) + ", expected " +
                             hex32(expected));
}

int64_t checkedDimension(std::uint32_t v, int64_t max, const std::string& path, const std::string& what) {
  if (v == 0 || v > max)
    throw std::runtime_error(path + ": " + what + " " + std::to_string(v) + " is out of range [1, " + std::to_string(max) + "]");
  return v;
}

}  // namespace

IdxImages readIdxImages(const std::string& path) {
  GzReader in(path);
  checkMagic(in.readBigEndian("IDX header"), kIdxImagesMagic, path, "image (unsigned byte, 3 dimensions)");
  IdxImages im;
  im.count = checkedDimension(in.readBigEndian("IDX header"), kMaxCount, path, "image count");
  im.rows = checkedDimension(in.readBigEndian("IDX header"), kMaxSide, path, "image rows");
  im.cols = checkedDimension(in.readBigEndian("IDX header"), kMaxSide, path, "image columns");
  im.pixels = in.readBlock(static_cast<std::size_t>(im.count * im.rows * im.cols),
                           "pixel data for " + std::to_string(im.count) + " images");
  in.expectEnd(std::to_string(im.count) + " images");
  return im;
}

std::vector<std::uint8_t> readIdxLabels(const std::string& path, int num_classes) {
  GzReader in(path);
  checkMagic(in.readBigEndian("IDX header"), kIdxLabelsMagic, path, "label (unsigned byte, 1 dimension)");
  const int64_t count = checkedDimension(in.readBigEndian("IDX header"), kMaxCount, path, "label count");
  const std::vector<std::uint8_t> labels = in.readBlock(static_cast<std::size_t>(count), std::to_string(count) + " labels");
  in.expectEnd(std::to_string(count) + " labels");
  for (std::size_t i = 0; i < labels.size(); ++i)
    if (labels[i] >= num_classes)
      throw std::runtime_error(path + ": label " + std::to_string(labels[i]) + " at index " + std::to_string(i) +
                               " is out of range 0.." + std::to_string(num_classes - 1));
  return labels;
}

}  // namespace tensorscope::model_core::tasks
