// Safetensors writer: the reference layout (metadata first, tensors sorted by name and
// contiguous, header space-padded to 8 bytes), streamed to disk atomically. No torch here.
#include <fcntl.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <cerrno>
#include <filesystem>
#include <random>

#include "files/atomic_file.h"
#include "io/safetensors_detail.h"
#include "model_core/safetensors.h"

namespace tensorscope::model_core {
namespace {

using namespace detail;

constexpr std::string_view kMemory = "<memory>";

void appendLe64(std::string& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xFFu));
}

// files::writeFileAtomically's protocol, streamed so a large file is never assembled in memory:
// write a temporary file beside the target, fsync, rename over the target, fsync the directory.
// The destructor removes the temporary file when commit() was not reached.
class AtomicFileWriter {
 public:
  explicit AtomicFileWriter(const std::string& target) : target_(target) {
    namespace fs = std::filesystem;
    const fs::path path(target);
    dir_ = path.has_parent_path() ? path.parent_path().string() : std::string(".");
    std::random_device rd;
    std::string name = ".";  // appended piecewise: GCC 12 warns falsely on "literal" + temporary
    name.append(path.filename().string()).append(".tmp").append(std::to_string(rd()));
    temp_ = (fs::path(dir_) / name).string();
    files::fileOperation("create");
    fd_ = ::open(temp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd_ < 0) fail(target_, sysReason("cannot create temporary file " + temp_, errno));
  }
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;
  ~AtomicFileWriter() {
    if (fd_ >= 0) ::close(fd_);
    if (!committed_) ::unlink(temp_.c_str());
  }

  void write(const void* data, std::size_t size) {
    const auto* p = static_cast<const char*>(data);
    while (size > 0) {
      files::fileOperation("write");
      const ssize_t n = ::write(fd_, p, size);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) fail(target_, sysReason("cannot write " + temp_, errno));
      p += n;
      size -= static_cast<std::size_t>(n);
    }
  }

  void commit() {
    files::fileOperation("fsync");
    if (::fsync(fd_) != 0) fail(target_, sysReason("cannot flush " + temp_, errno));
    const int closed = ::close(fd_);
    fd_ = -1;
    if (closed != 0) fail(target_, sysReason("cannot close " + temp_, errno));
    files::fileOperation("rename");
    if (::rename(temp_.c_str(), target_.c_str()) != 0) fail(target_, sysReason("cannot replace", errno));
    committed_ = true;
    // Make the rename itself durable.
    const int dirFd = ::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dirFd >= 0) {
      ::fsync(dirFd);
      ::close(dirFd);
    }
  }

 private:
  std::string target_;
  std::string dir_;
  std::string temp_;
  int fd_ = -1;
  bool committed_ = false;
};

// The 8-byte prefix and padded header, and the tensors' bytes in file order.
struct Layout {
  std::string head;
  std::vector<std::span<const std::byte>> chunks;
};

Layout layOut(const std::map<std::string, TensorView>& tensors, const std::map<std::string, std::string>& metadata,
              const std::string& target) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) {
    auto& meta = header[std::string(kMetadataKey)] = nlohmann::ordered_json::object();
    for (const auto& [key, value] : metadata) meta[key] = value;
  }
  Layout layout;
  uint64_t offset = 0;
  for (const auto& [name, view] : tensors) {  // std::map: sorted by name, byte-wise
    if (name == kMetadataKey) fail(target, "a tensor cannot be named \"__metadata__\"");
    const auto needed = byteCount(view.shape, view.dtype);
    if (!needed) fail(target, "tensor " + quote(name) + ": invalid shape " + shapeText(view.shape));
    if (view.bytes.size() != *needed) {
      fail(target, "tensor " + quote(name) + " has " + std::to_string(view.bytes.size()) + " bytes but dtype " +
                       std::string(dtypeName(view.dtype)) + " with shape " + shapeText(view.shape) + " needs " +
                       std::to_string(*needed));
    }
    header[name] = {{"dtype", dtypeName(view.dtype)}, {"shape", view.shape}, {"data_offsets", {offset, offset + *needed}}};
    offset += *needed;
    layout.chunks.push_back(view.bytes);
  }
  if (header.size() > kMaxSafetensorsEntries + 1)
    fail(target, std::to_string(header.size()) + " tensors and metadata exceed the limit of " +
                     std::to_string(kMaxSafetensorsEntries) + " per file");
  std::string json;
  try {
    json = header.dump();
  } catch (const nlohmann::ordered_json::exception& e) {
    fail(target, std::string("tensor names and metadata must be valid UTF-8: ") + e.what());
  }
  json.append((8 - json.size() % 8) % 8, ' ');  // the reference pads with spaces to 8 bytes
  if (json.size() > kMaxSafetensorsHeaderSize) {
    fail(target, "header of " + std::to_string(json.size()) + " bytes exceeds the limit of " +
                     std::to_string(kMaxSafetensorsHeaderSize) + " bytes");
  }
  appendLe64(layout.head, json.size());
  layout.head += json;
  return layout;
}

std::map<std::string, TensorView> viewsOf(const SafetensorsFile& file) {
  std::map<std::string, TensorView> views;
  for (const auto& [name, t] : file.tensors) views.emplace(name, TensorView{t.dtype, t.shape, t.bytes});
  return views;
}

}  // namespace

void writeSafetensors(const std::string& path, const std::map<std::string, TensorView>& tensors,
                      const std::map<std::string, std::string>& metadata) {
  const Layout layout = layOut(tensors, metadata, path);
  AtomicFileWriter writer(path);
  writer.write(layout.head.data(), layout.head.size());
  for (const auto& chunk : layout.chunks) writer.write(chunk.data(), chunk.size());
  writer.commit();
}

void writeSafetensors(const std::string& path, const SafetensorsFile& file) {
  writeSafetensors(path, viewsOf(file), file.metadata);
}

std::string serializeSafetensors(const SafetensorsFile& file) {
  const Layout layout = layOut(viewsOf(file), file.metadata, std::string(kMemory));
  std::string out = layout.head;
  for (const auto& chunk : layout.chunks) out.append(reinterpret_cast<const char*>(chunk.data()), chunk.size());
  return out;
}

}  // namespace tensorscope::model_core
