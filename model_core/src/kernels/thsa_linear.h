#pragma once
// Linear THSA (docs/attention-variants.md §4) without any tensor of size N·R²: a fused CPU kernel, causal and
// full, float32 and float64.
//
// With φ(u) = elu(u) + 1, K_m = φ(k_m), channel r at position n reads
//     Ω[n,r] = Σ_s φ(C[r,s]·q[n,s])·S[s,r] / Σ_s φ(C[r,s]·q[n,s])·z[s],
// S = Σ_m K_m·v[m,:]ᵀ and z = Σ_m K_m (prefix sums over m ≤ n when causal). Forward items are
// (sequence, panel of up to 64 channels): the panel's state columns S[:, panel] stay in L1/L2 while
// the item walks the positions, taking a rank-one update per position (causal), and one pass over s
// vectorised across the panel's channels (RowOps::phiPanel) gives every numerator and denominator
// with no horizontal sums. φ is max(u, 0) + e^min(u, 0): one exp serves φ and φ'. Only Ω and the
// denominators [B, N, R] are kept. Backward items are (sequence, block of channels), walking the
// positions in reverse, 32 at a time (RowOps::phiBackwardBlock): four channels' rows of C, states,
// suffix ∂S̄ and ∂C stay in registers across the 32 positions, so a position stores only dq, ∂z
// and ∂K, shared by the four (and, causal, the ∂v partial sums). A causal layer rewinds
// its prefix states in those registers (S_{n-1} = S_n − K_n·v_nᵀ) from an exact checkpoint taken
// every 32 positions (one GEMM per 32 positions; memory (N/32)·block·R per thread), so that
// rounding cannot build up over more positions than the forward's own prefix sums add; never all N states.
// φ in the two hot passes is computed in base 2 (row_ops_impl.h, phiBase2).

#include <cstdint>

#include "kernels/parallel.h"

namespace tensorscope::model_core::kernels {

template <typename T>
struct LinearThsaProblem {
  int64_t B = 0, N = 0, R = 0;
  const T* qkv = nullptr;  ///< [B, N, 3, R], contiguous
  const T* C = nullptr;    ///< [R, R]
  bool causal = false;
};

/// Ω [B, N, R] and the denominators den [B, N, R] (kept for backward).
template <typename T>
void linearThsaForward(const LinearThsaProblem<T>& p, T* omega, T* den, const Parallel& par);

/// From ∂Ω: dqkv [B, N, 3, R] (overwritten) and dC [R, R] (overwritten; may be null).
template <typename T>
void linearThsaBackward(const LinearThsaProblem<T>& p, const T* omega, const T* den, const T* dOmega, T* dqkv, T* dC,
                        const Parallel& par);

}  // namespace tensorscope::model_core::kernels
