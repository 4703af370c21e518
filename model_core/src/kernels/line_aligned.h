#pragma once
// Buffers on 64-byte boundaries for the torch-free kernels: a cache line, one AVX-512 vector. A
// kernel that reads and writes a buffer a vector at a time never splits a vector across two lines.
#include <cstddef>
#include <new>
#include <vector>

namespace tensorscope::model_core::kernels {

/// A std::allocator on 64-byte boundaries.
template <typename T>
struct LineAligned {
  using value_type = T;
  LineAligned() = default;
  template <typename U>
  LineAligned(const LineAligned<U>&) {}
  T* allocate(std::size_t n) { return static_cast<T*>(::operator new(n * sizeof(T), std::align_val_t(64))); }
  void deallocate(T* p, std::size_t) { ::operator delete(p, std::align_val_t(64)); }
  template <typename U>
  bool operator==(const LineAligned<U>&) const { return true; }
};

/// A vector whose data starts on a cache line.
template <typename T>
using LineVector = std::vector<T, LineAligned<T>>;

}  // namespace tensorscope::model_core::kernels
