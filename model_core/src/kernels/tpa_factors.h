#pragma once
// Tensor Product Attention's factor sums (docs/attention-variants.md §8.7; tensorgi/TPA model/T6.py
// CPLinear) in one pass per token: a fused CPU kernel, float32 and float64.
//
// A token's factor projections p [W] (one GEMM of x with the stacked factor weights) hold, for each
// of q, k and v in that order, its head factors A [H, R] (row-major, T6's view of W_A(x)) and then
// its feature factors B [R, D] (T6's view of W_B(x)); with R = 0 (the queries of T6_kvonly) the
// query heads [H, D] themselves. The kernel writes
//     out[i, h, :] = (1/R)·Σ_r A[h, r]·ρ_n(B[r, :])         (or ρ_n(p_q[h, :]) when R = 0)
// for i = q, k, v into qkv [tokens, 3, H, D], the layout the fused attention kernel reads, with
// ρ_n the rotary turn of the token's position n when that part is turned (pairs (j, j + D/2):
// ρ(a, b) = (a·c − b·s, a·s + b·c), c = cos and s the signed sine of the turn's angle at n).
// Backward, with g = ∂out and ρᵀ(ga, gb) = (ga·c + gb·s, −ga·s + gb·c):
//     ∂A[h, r] = (1/R)·⟨g[h, :], ρ_n(B[r, :])⟩,      ∂B[r, :] = (1/R)·ρ_nᵀ(Σ_h A[h, r]·g[h, :]).
// Nothing but p (and the two angle tables) is kept for backward; the turned factors are formed
// again. Tokens are independent: the work items are tokens, each one's turned factors in a
// per-range buffer of max R·D values, so results do not depend on the thread split.

#include <cstdint>

#include "kernels/parallel.h"

namespace tensorscope::model_core::kernels {

template <typename T>
struct TpaFactorProblem {
  int64_t tokens = 0;  ///< B·N; token t sits at position t mod N
  int64_t N = 1;       ///< positions of a sequence (rows of the angle tables)
  int64_t H = 0, D = 0;
  int64_t ranks[3] = {0, 0, 0};          ///< R_Q (0: the query heads as they are), R_K, R_V (≥ 1)
  bool turn[3] = {false, false, false};  ///< rotary on q, k, v (T6 turns q and k)
  const T* proj = nullptr;               ///< [tokens, W], W = tpaProjectionWidth(H, D, ranks)
  const T* cos = nullptr;                ///< [N, D/2]: cos of the angle of pair j at position n
  const T* sin = nullptr;                ///< [N, D/2]: the signed sine (T6's backward turn: −sin)
};

/// The width W of a token's factor projections: Σ over q, k, v of R·(H + D), or H·D when R = 0.
int64_t tpaProjectionWidth(int64_t H, int64_t D, const int64_t ranks[3]);

/// qkv [tokens, 3, H, D] from the problem's projections.
template <typename T>
void tpaFactorsForward(const TpaFactorProblem<T>& p, T* qkv, const Parallel& parallel);

/// dproj [tokens, W] (overwritten) from g = ∂qkv [tokens, 3, H, D].
template <typename T>
void tpaFactorsBackward(const TpaFactorProblem<T>& p, const T* g, T* dproj, const Parallel& parallel);

}  // namespace tensorscope::model_core::kernels
