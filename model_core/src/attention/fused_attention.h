#pragma once
// Fused multi-head scaled-dot-product attention for the CPU: the kernel behind mhsa, fixed_head,
// tp and the THSA cores that equal MHSA (docs/attention-variants.md §§1–3, 5).
//
// Why it exists: the same math written with ATen ops (what the exported PyTorch module does)
// spends a third of a training step around the two attention products: matmul copies the strided
// head views, masked_fill and the 1/√D scale each make a full pass over the [B,H,N,N] scores (and
// again in backward), the causal half of every product is computed and then thrown away, and each
// 128×128×32 product runs on all threads, which is slower per core than one product per thread.
// This kernel reads q, k, v in place from the fused projection [B, N, 3, H, D], gives every
// (batch, head) pair to one thread with single-threaded BLAS calls, folds the scale into the GEMM,
// skips the masked blocks of a causal layer (row blocks of 32: 62% of the work at N = 128) and
// writes o directly as [B, N, H, D], so merging the heads is a free view. The forward softmax is
// ATen's vectorised kernel; the backward pass never materialises a [B,H,N,N] gradient: each block
// of dP = dO·vᵀ lives in a per-thread buffer, becomes dS = P ⊙ (dP − dO·o) in place and is used
// at once for dq and dk. Gradients are exact (tests/model_core/attention/test_fused_attention.cpp).

#include <torch/types.h>

namespace tensorscope::model_core {

struct FusedAttentionOutput {
  torch::Tensor o;  ///< [B, N, H, D], contiguous
  torch::Tensor P;  ///< [B, H, N, N] attention probabilities (zero above the diagonal when causal); no gradient
};

/// Whether the fused kernel serves tensors like `x`: CPU, float32 or float64, and not disabled.
bool fusedAttentionSupports(const torch::Tensor& x);

/// Switches the fused kernel off (process-wide) so the modules take the ATen formulation they use
/// on CUDA: for tests that compare the two paths, and benchmarks. On by default.
void setFusedAttentionEnabled(bool enabled);

/// softmax(scale·q·kᵀ [+ causal mask])·v for every head. `qkv` is [B, N, 3, H, D] (q, k, v stacked
/// on axis 2; last axis contiguous). Differentiable in `qkv` (first order).
FusedAttentionOutput fusedAttention(const torch::Tensor& qkv, double scale, bool causal);

}  // namespace tensorscope::model_core
