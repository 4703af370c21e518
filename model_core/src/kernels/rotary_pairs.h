#pragma once
// The rotary turn of one block of features, shared by every kernel that turns (the fused turn of
// attention/rotary.cpp, TPA's factor sums, MLA's absorbed inputs): `half` pairs, pair j turned by
// (c[j], s[j]), ρ(a, b) = (a·c − b·s, a·s + b·c), and its transpose ρᵀ(a, b) = (a·c + b·s, b·c − a·s)
// (the turn by the opposite angle: the gradient of a turn). The pairs are (j, j + half) for `Half`
// (GPT-NeoX, Llama's rotate_half, T6) and (2j, 2j + 1) for `Interleaved` (RoFormer, DeepSeek).

#include <cstdint>

namespace tensorscope::model_core::kernels {

enum class PairLayout { Half, Interleaved };

template <PairLayout P>
constexpr int64_t firstOfPair(int64_t j, int64_t half) {
  (void)half;
  return P == PairLayout::Half ? j : 2 * j;
}
template <PairLayout P>
constexpr int64_t secondOfPair(int64_t j, int64_t half) {
  return P == PairLayout::Half ? j + half : 2 * j + 1;
}

/// out = ρ(in) for one block of 2·half features.
template <PairLayout P, typename T>
inline void turnPairs(const T* __restrict in, T* __restrict out, const T* __restrict c, const T* __restrict s,
                      int64_t half) {
  for (int64_t j = 0; j < half; ++j) {
    const int64_t ia = firstOfPair<P>(j, half), ib = secondOfPair<P>(j, half);
    const T a = in[ia], b = in[ib];
    out[ia] = a * c[j] - b * s[j];
    out[ib] = a * s[j] + b * c[j];
  }
}

/// out = ρᵀ(in) for one block of 2·half features.
template <PairLayout P, typename T>
inline void turnPairsBack(const T* __restrict in, T* __restrict out, const T* __restrict c, const T* __restrict s,
                          int64_t half) {
  for (int64_t j = 0; j < half; ++j) {
    const int64_t ia = firstOfPair<P>(j, half), ib = secondOfPair<P>(j, half);
    const T a = in[ia], b = in[ib];
    out[ia] = a * c[j] + b * s[j];
    out[ib] = b * c[j] - a * s[j];
  }
}

}  // namespace tensorscope::model_core::kernels
