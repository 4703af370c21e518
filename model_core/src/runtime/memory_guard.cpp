#include "model_core/memory_guard.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <stdexcept>

#include "model_core/runtime.h"
#include "spec/cost_model.h"
#include "spec/multilinear_memory.h"

namespace tensorscope::model_core {
namespace {

/// A cgroup v2 limit on this process's memory: memory.max - memory.current of its cgroup, or 0.
double cgroupRoom() {
  std::ifstream groups("/proc/self/cgroup");
  std::string line, path;
  while (std::getline(groups, line))
    if (line.rfind("0::", 0) == 0) path = line.substr(3);
  if (path.empty()) return 0;
  const std::string dir = "/sys/fs/cgroup" + path;
  std::ifstream maxFile(dir + "/memory.max"), currentFile(dir + "/memory.current");
  std::string max;
  double current = 0;
  if (!(maxFile >> max) || max == "max" || !(currentFile >> current)) return 0;
  const double limit = std::strtod(max.c_str(), nullptr);
  return limit > current ? limit - current : 1;  // at its limit: (almost) nothing left
}

double parseLimit(const char* variable, const char* text) {
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(text, &end);
  double unit = 1;
  if (end && *end) {
    switch (*end) {
      case 'K': case 'k': unit = 1024.0; break;
      case 'M': case 'm': unit = 1024.0 * 1024; break;
      case 'G': case 'g': unit = 1024.0 * 1024 * 1024; break;
      default: unit = 0;
    }
    if (unit != 0 && end[1] != '\0') unit = 0;
  }
  if (errno != 0 || end == text || unit == 0 || !(v > 0))
    throw std::invalid_argument(std::string(variable) + " must be a positive number of bytes, optionally with K, M or G; got '" +
                                text + "'");
  return v * unit;
}

/// "1.25 GiB".
std::string formatGiB(double bytes) {
  char b[32];
  std::snprintf(b, sizeof b, "%.2f GiB", bytes / double(1ull << 30));
  return b;
}

}  // namespace

double availableMemoryBytes() {
  if (const char* limit = std::getenv("TENSORSCOPE_MEMORY_LIMIT"); limit && *limit) return parseLimit("TENSORSCOPE_MEMORY_LIMIT", limit);
  std::ifstream in("/proc/meminfo");
  std::string key, unit;
  double kb = 0, available = 0;
  while (in >> key >> kb >> unit)
    if (key == "MemAvailable:") {
      available = kb * 1024.0;
      break;
    }
  if (const double room = cgroupRoom(); room > 0) available = available > 0 ? std::min(available, room) : room;
  return available;
}

double availableGpuMemoryBytes() {
  if (const char* limit = std::getenv("TENSORSCOPE_GPU_MEMORY_LIMIT"); limit && *limit)
    return parseLimit("TENSORSCOPE_GPU_MEMORY_LIMIT", limit);
  return gpuMemory().free_bytes;
}

void requireGpuMemory(double needBytes, const std::string& what, const std::string& advice) {
  const double have = availableGpuMemoryBytes();
  if (have > 0 && needBytes > 0.8 * have)
    throw std::invalid_argument(what + " needs an estimated " + formatGiB(needBytes) + " of GPU memory; the GPU has " +
                                formatGiB(have) + " free. " + advice);
}

void requireMemory(double needBytes, const std::string& what, const std::string& advice) {
  const double have = availableMemoryBytes();
  if (have > 0 && needBytes > 0.8 * have)
    throw std::invalid_argument(what + " needs an estimated " + formatGiB(needBytes) + " of memory; this machine has " +
                                formatGiB(have) + " available. " + advice);
}

double estimateLayerMemory(const spec::AttentionSpec& s, std::int64_t batch, std::int64_t seq, int bytesPerValue,
                           bool withBackward) {
  const std::int64_t N = s.variant == spec::Variant::Multilinear ? s.sizes.seq_len : seq;
  const auto cost = spec::estimateCost(s, batch, N);
  const double scale = double(bytesPerValue) / 4.0;  // the cost model counts float32 bytes
  const double params = double(cost.parameters + cost.frozen_parameters) * bytesPerValue;
  const double io = 2.0 * double(batch) * double(N) * s.sizes.F * bytesPerValue;  // x and y
  // Without a backward pass intermediates die as the forward goes on; the largest one and its
  // inputs bound the live set. With one, every activation is kept and gradients mirror them.
  const double live = withBackward ? 2.0 * cost.activation_bytes * scale : 2.0 * cost.largest_intermediate_bytes * scale;
  return params * (withBackward ? 2.0 : 1.0) + io + live;
}

double estimateNetworkMemory(const spec::AttentionSpec& s, std::int64_t batch, std::int64_t seq, int bytesPerValue) {
  double bytes = estimateLayerMemory(s, batch, seq, bytesPerValue, false);
  // The network evaluator forms T whatever the device (the layer on the CPU does not).
  if (s.variant == spec::Variant::Multilinear)
    bytes += spec::multilinearActivationBytes(s, batch, bytesPerValue, spec::MultilinearPath::MaterialisedT);
  return bytes;
}

}  // namespace tensorscope::model_core
