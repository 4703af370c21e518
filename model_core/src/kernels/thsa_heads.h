#pragma once
// THSA with a Kronecker core C = s·(A ⊗ B) whose B is 1·1ᵀ or rank one c₂c₃ᵀ (docs/attention-variants.md §3):
// the skip_left, skip_right and single-head-mixing members of the design space, and any A ⊗ c₂c₃ᵀ.
// A fused, memory-lean CPU kernel, causal and full, float32 and float64.
//
// Through the structure, channel (h, d) of such a core sees
//     logits_(h,d) = t·γ_d·G_h,   G_h = Σ_h' A[h,h']·base_h',   base_h' = (q_h' ⊙ β)·k_h'ᵀ,
// with t = s/√R, β = c₃ and γ = c₂ (rank one) or β = γ = 1 (ones). So a sequence needs only H base
// maps (the cost of MHSA's logits) and H² axpys to mix them; then
//   * B = 1·1ᵀ: one softmax per head, o_h = P_h·v_h (MHSA's cost: skip_right),
//   * B = c₂c₃ᵀ: D softmaxes per head at temperatures t·c₂[d], each read against its one value
//     column in the same vectorised pass (skip_left: D exp passes over an N×M block in cache).
// Items are (sequence, block of 32 query rows); only the outputs and the log-sum-exp of every
// softmax row are kept, and backward recomputes the base maps of a block (flash-attention scheme).
// Learned from the same sources as thsa_dense.h.

#include <cstdint>

#include "kernels/parallel.h"

namespace tensorscope::model_core::kernels {

template <typename T>
struct HeadMapThsaProblem {
  int64_t B = 0, N = 0, H = 0, D = 0;
  const T* qkv = nullptr;  ///< [B, N, 3, H·D]: q, k, v stacked on axis 2, contiguous
  const T* A = nullptr;    ///< [H, H] head mixing; ignored when identityA
  const T* c2 = nullptr;   ///< [D] channel temperatures γ (rank one only)
  const T* c3 = nullptr;   ///< [D] query weights β (rank one only)
  bool identityA = false;  ///< A = I: no mixing
  bool rank1 = false;      ///< B = c₂c₃ᵀ (else B = 1·1ᵀ)
  T scale = 1;             ///< t = s/√R
  bool causal = false;
  int64_t R() const { return H * D; }
  /// Softmax rows kept per position: one per head (ones) or per channel (rank one).
  int64_t softmaxes() const { return rank1 ? H * D : H; }
};

/// Ω [B, N, H·D] and the log-sum-exp lse [B, softmaxes, N].
template <typename T>
void headMapThsaForward(const HeadMapThsaProblem<T>& p, T* omega, T* lse, const Parallel& par);

/// From ∂Ω [B, N, H·D]: dqkv [B, N, 3, H·D] (overwritten) and, as asked, dA [H, H], dc2 [D],
/// dc3 [D] (overwritten; pass null for those not asked).
template <typename T>
void headMapThsaBackward(const HeadMapThsaProblem<T>& p, const T* omega, const T* lse, const T* dOmega, T* dqkv,
                         T* dA, T* dc2, T* dc3, const Parallel& par);

}  // namespace tensorscope::model_core::kernels
