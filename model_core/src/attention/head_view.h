#pragma once
// How the fused CPU attention kernels (fused_attention.cpp, fused_talking_heads.cpp) read a
// [B, ·, ·, D] operand in place: the positions on axis 1 ([B, N, H, D], the projections' own layout)
// or on axis 2 ([B, H, N, D]), the heads on the other middle axis, the last axis contiguous.

#include <torch/types.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <type_traits>

namespace tensorscope::model_core {

/// Head h of batch b starts at p + b·sb + h·sh, its positions sn apart.
template <typename P>
struct HeadView {
  P* p;
  int64_t sb, sh, sn;
  P* at(int64_t b, int64_t h) const { return p + b * sb + h * sh; }
};

/// The heads of t, its positions on axis `positions` (1 or 2).
template <typename T, typename P = const T>
HeadView<P> headView(const torch::Tensor& t, int positions) {
  // One position: its stride is never stepped, but BLAS wants a leading dimension of at least a row.
  const int64_t sn = t.size(positions) <= 1 ? std::max<int64_t>(t.size(3), 1) : t.stride(positions);
  return {t.template data_ptr<std::remove_const_t<P>>(), t.stride(0), t.stride(3 - positions), sn};
}

/// t itself when its heads can be read in place (last axis contiguous, positions at least a head
/// apart, strides within the BLAS integer range), else a contiguous copy; positions on axis
/// `positions` (1 or 2).
inline torch::Tensor readableHeads(const torch::Tensor& t, int positions) {
  const int64_t limit = std::numeric_limits<int>::max();
  const bool ok = (t.size(3) <= 1 || t.stride(3) == 1) &&
                  (t.size(positions) <= 1 ||
                   (t.stride(positions) >= std::max<int64_t>(t.size(3), 1) && t.stride(positions) <= limit));
  return ok ? t : t.contiguous();
}

}  // namespace tensorscope::model_core
