#pragma once
/// Exact accounting of LibTorch's CPU tensor memory, for benchmarks and run reports.
/// Installing wraps LibTorch's CPU allocator: every CPU tensor allocation made after install()
/// is counted (current and peak bytes). Tensors allocated before install() are not counted.

#include <cstdint>

namespace tensorscope::model_core {

class CpuMemoryTracker {
 public:
  /// Installs the counting allocator (idempotent, process-wide).
  static void install();
  /// Bytes of CPU tensor storage allocated after install() and not yet freed.
  static std::int64_t currentBytes();
  /// The largest currentBytes() since the last resetPeak().
  static std::int64_t peakBytes();
  /// Sets the peak to the current value.
  static void resetPeak();
};

}  // namespace tensorscope::model_core
