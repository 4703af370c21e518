#pragma once
// THSA with a low-rank core C = U·Vᵀ (U, V: R × ρ; docs/attention-variants.md §3, wave 2) through its
// factors: a fused CPU kernel whose cost follows ρ, causal and full, float32 and float64.
//
//   G_j = (q ⊙ V[:,j])·kᵀ           ρ base maps per sequence (2·N·M·R·ρ)
//   logits_r = t·Σ_j U[r,j]·G_j     one GEMM [R, ρ]·[ρ, N·M] per block (2·N·M·R·ρ), t = 1/√R
//   Ω[n,r] = softmax_m(logits_r)·v[:,r]
// Items are (sequence, block of 32 query rows); the channels' logits are made and consumed in
// chunks that stay in cache (max, then one vectorised exp + sum + dot pass per row, as in
// thsa_dense.h). Only Ω and the log-sum-exp [B, R, N] are kept; backward recomputes the base maps
// and the logits of a block, turns each chunk of logits into ∂logits in place, and two GEMMs give
// ∂U and ∂G; then ρ pairs of GEMMs give ∂(q ⊙ V_j) and ∂k.

#include <cstdint>

#include "kernels/parallel.h"

namespace tensorscope::model_core::kernels {

template <typename T>
struct LowRankThsaProblem {
  int64_t B = 0, N = 0, R = 0, rank = 0;
  const T* qkv = nullptr;  ///< [B, N, 3, R], contiguous
  const T* U = nullptr;    ///< [R, rank]
  const T* V = nullptr;    ///< [R, rank]
  T scale = 1;             ///< t = 1/√R
  bool causal = false;
};

/// Ω [B, N, R] and lse [B, R, N].
template <typename T>
void lowRankThsaForward(const LowRankThsaProblem<T>& p, T* omega, T* lse, const Parallel& par);

/// From ∂Ω: dqkv [B, N, 3, R] (overwritten), dU and dV [R, rank] (overwritten; may be null).
template <typename T>
void lowRankThsaBackward(const LowRankThsaProblem<T>& p, const T* omega, const T* lse, const T* dOmega, T* dqkv, T* dU,
                         T* dV, const Parallel& par);

}  // namespace tensorscope::model_core::kernels
