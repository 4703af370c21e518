#include "model_core/memory_tracker.h"

#include "runtime/torch_compat.h"

#include <c10/core/Allocator.h>
#include <c10/core/impl/alloc_cpu.h>

#include <malloc.h>

#include <atomic>
#include <cstring>

namespace tensorscope::model_core {
namespace {

std::atomic<std::int64_t> g_current{0};
std::atomic<std::int64_t> g_peak{0};
std::atomic<bool> g_installed{false};

// Blocks are counted by their usable size (glibc), read again at free, so the books balance
// without a header: data and context stay the same pointer, as raw_allocate() requires.
void countedFree(void* block) {
  g_current.fetch_sub(static_cast<std::int64_t>(malloc_usable_size(block)), std::memory_order_relaxed);
  c10::free_cpu(block);
}

class CountingAllocator final : public c10::Allocator {
 public:
  c10::DataPtr allocate(std::size_t n) TS_ALLOCATOR_ALLOCATE_CONST override {
    void* block = c10::alloc_cpu(n);
    const auto bytes = static_cast<std::int64_t>(block ? malloc_usable_size(block) : 0);
    const std::int64_t now = g_current.fetch_add(bytes, std::memory_order_relaxed) + bytes;
    std::int64_t peak = g_peak.load(std::memory_order_relaxed);
    while (now > peak && !g_peak.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
    }
    return {block, block, &countedFree, c10::Device(c10::DeviceType::CPU)};
  }
  c10::DeleterFnPtr raw_deleter() const override { return &countedFree; }
#if TS_ALLOCATOR_HAS_COPY_DATA
  void copy_data(void* dest, const void* src, std::size_t count) const override { std::memcpy(dest, src, count); }
#endif
};

CountingAllocator g_allocator;

}  // namespace

void CpuMemoryTracker::install() {
  if (g_installed.exchange(true)) return;
  // Priority above the default (0) so LibTorch's own registration cannot replace it.
  c10::SetAllocator(c10::DeviceType::CPU, &g_allocator, /*priority=*/1);
}

std::int64_t CpuMemoryTracker::currentBytes() { return g_current.load(); }
std::int64_t CpuMemoryTracker::peakBytes() { return g_peak.load(); }
void CpuMemoryTracker::resetPeak() { g_peak.store(g_current.load()); }

}  // namespace tensorscope::model_core
