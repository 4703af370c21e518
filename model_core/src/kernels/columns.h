#pragma once
// Column gathers of the fused kernels: a channel's value (or gradient) column read once into a
// contiguous row so that the vectorised row operations can stream it.

#include <cstdint>

namespace tensorscope::model_core::kernels {

/// out[c·rows + i] = m[i·ld + c] for c < cols, i < rows: columns [0, cols) of a row-major matrix,
/// each made contiguous.
template <typename T>
void gatherColumns(const T* m, int64_t ld, int64_t rows, int64_t cols, T* out) {
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t c = 0; c < cols; ++c) out[c * rows + i] = m[i * ld + c];
}

}  // namespace tensorscope::model_core::kernels
