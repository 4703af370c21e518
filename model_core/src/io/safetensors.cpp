// Safetensors reader: header validation as strict as the reference implementation (plus unknown
// keys, duplicate names and nesting depth), and streamed reads into caller storage. No torch here.
#include "model_core/safetensors.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <tuple>
#include <utility>

#include "io/safetensors_detail.h"
#include "spec/json_reader.h"

namespace tensorscope::model_core {
namespace detail {

void fail(const std::string& source, const std::string& reason) { throw SafetensorsError(source, reason); }

std::string sysReason(const std::string& what, int err) { return what + ": " + std::strerror(err); }

std::string quote(std::string_view s) {
  return nlohmann::json(std::string(s)).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// Built with append: GCC 12 warns falsely (-Wrestrict) on "literal" + std::string temporaries.
std::string shapeText(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) s.append(", ");
    s.append(std::to_string(shape[i]));
  }
  return s.append("]");
}

std::string rangeText(uint64_t begin, uint64_t end) {
  std::string s = "[";
  s.append(std::to_string(begin)).append(", ").append(std::to_string(end)).append(")");
  return s;
}

std::optional<uint64_t> byteCount(const std::vector<int64_t>& shape, DType dtype) {
  uint64_t n = dtypeSize(dtype);
  for (int64_t d : shape) {
    if (d < 0) return std::nullopt;
    const auto u = static_cast<uint64_t>(d);
    if (u != 0 && n > std::numeric_limits<uint64_t>::max() / u) return std::nullopt;
    n *= u;
  }
  return n;
}

}  // namespace detail

namespace {

using namespace detail;

using Json = nlohmann::json;

// A JSON value for an error message, cut short when long.
std::string brief(const Json& v) {
  std::string s = v.dump(-1, ' ', false, Json::error_handler_t::replace);
  if (s.size() > 60) s = s.substr(0, 57) + "...";
  return s;
}

uint64_t decodeLe64(const unsigned char* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

// The header size N from the prefix, checked against the limit and the bytes that follow.
uint64_t checkedHeaderSize(uint64_t totalSize, const unsigned char* prefix, const std::string& source) {
  const uint64_t n = decodeLe64(prefix);
  if (n > kMaxSafetensorsHeaderSize) {
    fail(source, "header size " + std::to_string(n) + " exceeds the limit of " +
                     std::to_string(kMaxSafetensorsHeaderSize) + " bytes");
  }
  if (n > totalSize - kPrefixSize) {
    fail(source, "header size " + std::to_string(n) + " exceeds the " + std::to_string(totalSize - kPrefixSize) +
                     " bytes after the 8-byte prefix (truncated file?)");
  }
  return n;
}

void checkLongEnough(uint64_t totalSize, const std::string& source) {
  if (totalSize < kPrefixSize) {
    fail(source, "file is " + std::to_string(totalSize) + " bytes, shorter than the 8-byte header-size prefix");
  }
}

// The shared bounded parser (spec/json_reader.h): linear time, duplicate keys refused (nlohmann
// keeps the last silently), nesting bounded (a valid header needs 3 levels) so no recursive walk
// over a hostile header can overflow the stack, and a NUL byte refused (nlohmann's lexer would stop
// there and ignore the rest; the format's reference rejects the file).
Json parseHeaderJson(std::string_view text, const std::string& source) {
  constexpr int kMaxDepth = 32;
  try {
    return spec::parseUntrustedJson(text, kMaxDepth, kMaxSafetensorsEntries + 1);  // + __metadata__
  } catch (const spec::DuplicateKeyError& e) {
    fail(source, e.depth() == 1 ? "duplicate tensor name " + quote(e.key()) + " in the header"
                                : "duplicate key " + quote(e.key()) + " in a header object");
  } catch (const spec::JsonError& e) {
    if (std::string(e.what()).find("members") != std::string::npos)
      fail(source, "header names more than " + std::to_string(kMaxSafetensorsEntries) +
                       " tensors or metadata keys (the most Tensorscope reads in one file)");
    fail(source, std::string("header is not valid JSON: ") + e.what());
  }
  return {};
}

std::optional<uint64_t> asIndex(const Json& v) {
  if (v.is_number_unsigned()) return v.get<uint64_t>();
  if (v.is_number_integer() && v.get<int64_t>() >= 0) return static_cast<uint64_t>(v.get<int64_t>());
  return std::nullopt;
}

TensorInfo parseEntry(const std::string& name, const Json& entry, uint64_t dataSize, const std::string& source) {
  const std::string what = "tensor " + quote(name) + ": ";
  if (!entry.is_object()) fail(source, what + "entry is not a JSON object (got " + brief(entry) + ")");
  for (const char* key : {"dtype", "shape", "data_offsets"}) {
    if (!entry.contains(key)) fail(source, what + "entry is missing \"" + key + "\"");
  }
  for (const auto& item : entry.items()) {
    if (item.key() != "dtype" && item.key() != "shape" && item.key() != "data_offsets") {
      fail(source, what + "entry has unexpected key " + quote(item.key()));
    }
  }
  TensorInfo info;
  const Json& dtype = entry.at("dtype");
  if (!dtype.is_string()) fail(source, what + "dtype is not a string (got " + brief(dtype) + ")");
  const auto parsed = dtypeFromName(dtype.get<std::string>());
  if (!parsed) fail(source, what + "unknown or unsupported dtype " + quote(dtype.get<std::string>()));
  info.dtype = *parsed;

  const Json& shape = entry.at("shape");
  const std::string badShape = what + "shape must be an array of non-negative integers (got " + brief(shape) + ")";
  if (!shape.is_array()) fail(source, badShape);
  for (const Json& d : shape) {
    const auto dim = asIndex(d);
    if (!dim || *dim > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) fail(source, badShape);
    info.shape.push_back(static_cast<int64_t>(*dim));
  }
  const auto needed = byteCount(info.shape, info.dtype);
  if (!needed) fail(source, what + "shape " + shapeText(info.shape) + " has more bytes than fit in 64 bits");

  const Json& offsets = entry.at("data_offsets");
  const bool pair = offsets.is_array() && offsets.size() == 2;
  const auto first = pair ? asIndex(offsets[0]) : std::nullopt;
  const auto second = pair ? asIndex(offsets[1]) : std::nullopt;
  if (!first || !second) {
    fail(source, what + "data_offsets must be [begin, end] of non-negative integers (got " + brief(offsets) + ")");
  }
  info.begin = *first;
  info.end = *second;
  if (info.begin > info.end) {
    fail(source, what + "data_offsets begin " + std::to_string(info.begin) + " is after end " + std::to_string(info.end));
  }
  if (info.end > dataSize) {
    fail(source, what + "data_offsets end " + std::to_string(info.end) + " is beyond the data buffer (" +
                     std::to_string(dataSize) + " bytes)");
  }
  if (info.byteSize() != *needed) {
    fail(source, what + "data_offsets " + rangeText(info.begin, info.end) + " hold " +
                     std::to_string(info.byteSize()) + " bytes but dtype " + std::string(dtypeName(info.dtype)) +
                     " with shape " + shapeText(info.shape) + " needs " + std::to_string(*needed) + " bytes");
  }
  return info;
}

std::vector<std::map<std::string, TensorInfo>::const_iterator> fileOrder(
    const std::map<std::string, TensorInfo>& tensors) {
  std::vector<std::map<std::string, TensorInfo>::const_iterator> order;
  for (auto it = tensors.begin(); it != tensors.end(); ++it) order.push_back(it);
  std::stable_sort(order.begin(), order.end(), [](auto a, auto b) {
    return std::tie(a->second.begin, a->second.end) < std::tie(b->second.begin, b->second.end);
  });
  return order;
}

// As the reference implementation: sorted by offsets, the tensors must tile the buffer exactly.
void checkCoverage(const SafetensorsHeader& header, const std::string& source) {
  uint64_t cursor = 0;
  const std::pair<const std::string, TensorInfo>* previous = nullptr;
  for (auto it : fileOrder(header.tensors)) {
    const TensorInfo& info = it->second;
    if (info.begin < cursor) {
      fail(source, "tensors " + quote(previous->first) + " " + rangeText(previous->second.begin, previous->second.end) +
                       " and " + quote(it->first) + " " + rangeText(info.begin, info.end) +
                       " overlap in the data buffer");
    }
    if (info.begin > cursor) {
      fail(source, "hole in the data buffer: bytes " + rangeText(cursor, info.begin) + " belong to no tensor");
    }
    cursor = info.end;
    previous = &*it;
  }
  if (cursor != header.data_size) {
    fail(source, "hole in the data buffer: bytes " + rangeText(cursor, header.data_size) +
                     " at its end belong to no tensor");
  }
}

SafetensorsHeader validateHeader(std::string_view text, uint64_t dataSize, const std::string& source) {
  const Json json = parseHeaderJson(text, source);
  if (!json.is_object()) fail(source, std::string("header is not a JSON object (got ") + json.type_name() + ")");
  if (text.front() != '{') fail(source, "header does not start with '{'");
  SafetensorsHeader header;
  header.header_size = text.size();
  header.data_size = dataSize;
  for (const auto& item : json.items()) {
    if (item.key() != kMetadataKey) {
      header.tensors.emplace(item.key(), parseEntry(item.key(), item.value(), dataSize, source));
      continue;
    }
    if (!item.value().is_object()) {
      fail(source, "__metadata__ must be an object of strings (got " + brief(item.value()) + ")");
    }
    for (const auto& kv : item.value().items()) {
      if (!kv.value().is_string()) {
        fail(source, "__metadata__ value of key " + quote(kv.key()) + " is not a string (got " + brief(kv.value()) + ")");
      }
      header.metadata.emplace(kv.key(), kv.value().get<std::string>());
    }
  }
  if (header.tensors.size() > kMaxSafetensorsEntries)
    fail(source, "header names more than " + std::to_string(kMaxSafetensorsEntries) +
                     " tensors or metadata keys (the most Tensorscope reads in one file)");
  checkCoverage(header, source);
  return header;
}

class FileHandle {
 public:
  explicit FileHandle(int fd) : fd_(fd) {}
  FileHandle(const FileHandle&) = delete;
  FileHandle& operator=(const FileHandle&) = delete;
  ~FileHandle() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

void readExactly(int fd, void* destination, uint64_t size, uint64_t offset, const std::string& path) {
  auto* out = static_cast<char*>(destination);
  while (size > 0) {
    const ssize_t n = ::pread(fd, out, std::min<uint64_t>(size, 1u << 30), static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail(path, sysReason("cannot read", errno));
    if (n == 0) fail(path, "file ended at byte " + std::to_string(offset) + " (was it changed while being read?)");
    out += n;
    size -= static_cast<uint64_t>(n);
    offset += static_cast<uint64_t>(n);
  }
}

int openForReading(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail(path, sysReason("cannot open", errno));
  return fd;
}

SafetensorsHeader readHeaderFrom(int fd, const std::string& path) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) fail(path, sysReason("cannot stat", errno));
  if (!S_ISREG(st.st_mode)) fail(path, "not a regular file");
  const auto fileSize = static_cast<uint64_t>(st.st_size);
  checkLongEnough(fileSize, path);
  unsigned char prefix[kPrefixSize];
  readExactly(fd, prefix, kPrefixSize, 0, path);
  const uint64_t headerSize = checkedHeaderSize(fileSize, prefix, path);
  std::string text(headerSize, '\0');
  readExactly(fd, text.data(), headerSize, kPrefixSize, path);
  return validateHeader(text, fileSize - kPrefixSize - headerSize, path);
}

}  // namespace

SafetensorsError::SafetensorsError(const std::string& source, const std::string& reason)
    : std::runtime_error(source + ": " + reason), source_(source), reason_(reason) {}

std::vector<std::string> SafetensorsHeader::namesInFileOrder() const {
  std::vector<std::string> names;
  for (auto it : fileOrder(tensors)) names.push_back(it->first);
  return names;
}

SafetensorsHeader readSafetensorsHeader(const std::string& path) {
  const FileHandle file(openForReading(path));
  return readHeaderFrom(file.get(), path);
}

SafetensorsHeader readSafetensorsInto(const std::string& path, const TensorDestination& destination) {
  const FileHandle file(openForReading(path));
  SafetensorsHeader header = readHeaderFrom(file.get(), path);
  const uint64_t dataStart = kPrefixSize + header.header_size;
  for (auto it : fileOrder(header.tensors)) {
    const TensorInfo& info = it->second;
    const std::span<std::byte> out = destination(it->first, info);
    if (out.size() != info.byteSize()) {
      fail(path, "destination for tensor " + quote(it->first) + " has " + std::to_string(out.size()) +
                     " bytes; it needs " + std::to_string(info.byteSize()));
    }
    readExactly(file.get(), out.data(), out.size(), dataStart + info.begin, path);
  }
  return header;
}

SafetensorsFile readSafetensors(const std::string& path) {
  SafetensorsFile file;
  const SafetensorsHeader header = readSafetensorsInto(path, [&](const std::string& name, const TensorInfo& info) {
    TensorData& t = file.tensors[name];
    t.dtype = info.dtype;
    t.shape = info.shape;
    t.bytes.resize(info.byteSize());
    return std::span<std::byte>(t.bytes);
  });
  file.metadata = header.metadata;
  return file;
}

SafetensorsFile parseSafetensors(std::string_view bytes, const std::string& source) {
  checkLongEnough(bytes.size(), source);
  const uint64_t headerSize =
      checkedHeaderSize(bytes.size(), reinterpret_cast<const unsigned char*>(bytes.data()), source);
  const std::string_view data = bytes.substr(kPrefixSize + headerSize);
  const SafetensorsHeader header = validateHeader(bytes.substr(kPrefixSize, headerSize), data.size(), source);
  SafetensorsFile file;
  file.metadata = header.metadata;
  for (const auto& [name, info] : header.tensors) {
    TensorData t{info.dtype, info.shape, std::vector<std::byte>(info.byteSize())};
    if (!t.bytes.empty()) std::memcpy(t.bytes.data(), data.data() + info.begin, t.bytes.size());
    file.tensors.emplace(name, std::move(t));
  }
  return file;
}

}  // namespace tensorscope::model_core
