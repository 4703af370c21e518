#pragma once
// How the torch-free kernels run in parallel: the caller supplies the loop (at::parallel_for in
// model_core, a serial or std::thread loop in tests). A body gets a half-open range of work items.

#include <cstdint>
#include <functional>

namespace tensorscope::model_core::kernels {

using RangeBody = std::function<void(int64_t begin, int64_t end)>;

struct Parallel {
  /// Runs body over [0, count) split into ranges, possibly concurrently.
  std::function<void(int64_t count, const RangeBody& body)> run;
  /// How many threads run may use (sizes the partial accumulators).
  int threads = 1;
};

/// One thread, in order.
inline Parallel serialParallel() {
  return {[](int64_t count, const RangeBody& body) {
            if (count > 0) body(0, count);
          },
          1};
}

}  // namespace tensorscope::model_core::kernels
