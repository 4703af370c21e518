#pragma once
// Deterministic accumulation for the fused kernels' backward passes: sums that cross threads are
// made of partials added in a fixed order, so a gradient does not depend on which thread finished
// first (resumed runs stay bit-identical).

#include <algorithm>
#include <cstdint>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

namespace tensorscope::model_core::kernels {

/// Per-range accumulators (one per parallel range, keyed by its first item), summed in range order.
template <typename T>
class RangeSums {
 public:
  void add(int64_t begin, std::vector<T>&& part) {
    std::lock_guard lock(mutex_);
    parts_.emplace(begin, std::move(part));
  }
  /// out[i] = Σ_ranges part[i] for i < n, in range order.
  void sumInto(T* out, size_t n) const {
    std::fill(out, out + n, T(0));
    for (const auto& [first, part] : parts_)
      for (size_t i = 0; i < n; ++i) out[i] += part[i];
  }

 private:
  std::mutex mutex_;
  std::map<int64_t, std::vector<T>> parts_;
};

/// How a backward pass splits its work: item = (sequence, group of blocks). With enough sequences
/// for the threads (4 items per thread) there is one group per sequence and an item owns every
/// per-sequence sum; otherwise a sequence's blocks are split into groups, each accumulating into
/// its own slab, and the slabs are added afterwards in group order.
struct ItemGroups {
  int64_t groups = 1, blocksPerGroup = 1, blocks = 1;
  ItemGroups(int64_t sequences, int64_t blocksPerSequence, int threads)
      : groups(std::clamp<int64_t>((4 * int64_t(threads) + sequences - 1) / sequences, 1, blocksPerSequence)),
        blocksPerGroup((blocksPerSequence + groups - 1) / groups),
        blocks(blocksPerSequence) {}
  int64_t firstBlock(int64_t group) const { return group * blocksPerGroup; }
  int64_t endBlock(int64_t group) const { return std::min(blocks, (group + 1) * blocksPerGroup); }
  /// Where item (sequence b, group) accumulates per-sequence sums of width 2R: the rows of dqkv
  /// [B, N, 3R] from column `offset` (one group), else the group's slab [N, 2R] of `slabs`
  /// [G, B, N, 2R]. Returns the first row and the row stride.
  template <typename T>
  std::pair<T*, int64_t> target(std::vector<T>& slabs, T* dqkv, int64_t b, int64_t group, int64_t B, int64_t N,
                                int64_t R, int64_t offset) const {
    if (groups > 1) return {slabs.data() + (group * B + b) * N * 2 * R, 2 * R};
    return {dqkv + b * N * 3 * R + offset, 3 * R};
  }
};

/// Adds slabs [groups, B, N, width] to rows of dst (row (b, n) at dst + (b·N + n)·ld + offset).
template <typename T>
void addSlabs(const std::vector<T>& slabs, int64_t groups, int64_t B, int64_t N, int64_t width, T* dst, int64_t ld,
              int64_t offset) {
  for (int64_t g = 0; g < groups; ++g)
    for (int64_t b = 0; b < B; ++b)
      for (int64_t n = 0; n < N; ++n) {
        const T* src = slabs.data() + ((g * B + b) * N + n) * width;
        T* row = dst + (b * N + n) * ld + offset;
        for (int64_t c = 0; c < width; ++c) row[c] += src[c];
      }
}

}  // namespace tensorscope::model_core::kernels
