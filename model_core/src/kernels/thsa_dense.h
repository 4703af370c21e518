#pragma once
// Dense-core THSA without the [B, R, N, M] tensor (docs/attention-variants.md §3): a fused, memory-lean CPU
// kernel for any dense C (trainable mask or not), causal and full, float32 and float64.
//
// Per sequence b and channel r, logits_r = (q ⊙ C[r,:]·scale)·kᵀ is an ordinary attention with the
// query q ⊙ C[r,:], the shared key k and the one-column value v[:, r]. The kernel walks
// (batch, block of channels) items, one per thread at a time:
//   * the queries of `cb` channels × 32 rows are stacked into one [cb·32, R] panel, so a single
//     GEMM against the shared kᵀ serves cb channels (the packed key is reused cb times);
//   * each row of logits is consumed where it lies in cache: max, then one vectorised pass of
//     exp + sum + dot with the value column gives Ω[b, n, r] and the row's log-sum-exp;
//   * causal layers skip the key blocks above the diagonal (rows see keys < i0 + 32).
// Only Ω and the log-sum-exp [B, R, N] are kept for backward; the backward pass recomputes each
// block of logits (the flash-attention scheme: recomputation instead of storage) and turns it in
// place into ∂logits, then two GEMMs give ∂(q ⊙ C_r) and ∂k. Rows are whole (up to N keys) per
// block, so the softmax is exact in two passes; 32 rows × N keys × cb stay inside L2 for N up to
// several thousand, and memory stays O(B·R·N) for any N.
//
// Learned from: PyTorch's aten/src/ATen/native/cpu/FlashAttentionKernel.cpp (row blocks, lse saved
// for backward, one (batch, block) per thread) and llama.cpp's CPU flash attention in ggml-cpu
// (vectorised exp and per-thread scratch). The code here is this project's own.

#include <cstdint>

#include "kernels/parallel.h"

namespace tensorscope::model_core::kernels {

template <typename T>
struct DenseThsaProblem {
  int64_t B = 0, N = 0, R = 0;
  const T* qkv = nullptr;  ///< [B, N, 3, R]: q, k, v stacked on axis 2, contiguous
  const T* C = nullptr;    ///< [R, R] effective core, row-major
  T scale = 1;             ///< the softmax scale (1/√R in the contract)
  bool causal = false;
};

/// Ω [B, N, R] and the per-channel log-sum-exp lse [B, R, N] (kept for backward).
template <typename T>
void denseThsaForward(const DenseThsaProblem<T>& p, T* omega, T* lse, const Parallel& par);

/// Gradients from ∂Ω [B, N, R]: dqkv [B, N, 3, R] and dC [R, R] (both overwritten). dC may be null
/// when C needs no gradient.
template <typename T>
void denseThsaBackward(const DenseThsaProblem<T>& p, const T* omega, const T* lse, const T* dOmega, T* dqkv, T* dC,
                       const Parallel& par);

}  // namespace tensorscope::model_core::kernels
