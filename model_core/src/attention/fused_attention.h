#pragma once
// Fused multi-head scaled-dot-product attention for the CPU: the kernel behind mhsa, fixed_head,
// tp and the THSA cores that equal MHSA (docs/attention-variants.md §§1–3, 5), and in its grouped
// form behind MQA/GQA (shared key and value heads), MLA's absorbed order (one shared key head
// [c, k_pe] and one value head c, §8.6) and differential attention (value heads of 2D, §8.5).
//
// Why it exists: the same math written with ATen ops (what the exported PyTorch module does)
// spends a third of a training step around the two attention products: matmul copies the strided
// head views, masked_fill and the 1/√D scale each make a full pass over the [B,H,N,N] scores (and
// again in backward), the causal half of every product is computed and then thrown away, and each
// 128×128×32 product runs on all threads, which is slower per core than one product per thread.
// This kernel reads q, k, v in place from the fused projection [B, N, 3, H, D], gives every
// (batch, head) pair to one thread with single-threaded BLAS calls, folds the scale into the GEMM,
// skips the masked blocks of a causal layer (row blocks of 32: 62% of the work at N = 128) and
// writes o directly as [B, N, H, D], so merging the heads is a free view. The forward softmax runs
// on each block of scores right after its GEMM, in cache, on the vectorised row operations
// (kernels/row_ops.h; a causal row over its seen keys only), written in place as the probabilities
// kept for backward (no separate [B,H,N,M] score tensor). The backward pass never materialises a
// [B,H,N,N] gradient: each block of dP = dO·vᵀ lives in a per-thread buffer, becomes
// dS = P ⊙ (dP − dO·o) in place and is used at once for dq and dk. Gradients are exact
// (tests/model_core/attention/test_fused_attention.cpp).
//
// One implementation serves both entry points: the [B, N, 3, H, D] one reads three strided views of
// the one buffer and writes its gradient into one buffer of the same layout; the grouped one reads
// q, k, v wherever they are (slices of a fused projection in place). The backward pass gives a
// thread a (batch, key/value group) and loops over the group's heads, so dk and dv sum over the
// heads without races; with fewer such pairs than threads a group's heads are split into chunks
// whose partial dk, dv are added in a fixed order (tests/model_core/attention/test_grouped_attention.cpp).

#include <torch/types.h>

namespace tensorscope::model_core {

struct FusedAttentionOutput {
  torch::Tensor o;  ///< [B, N, H, D] (grouped: [B, N, H, Dv]), contiguous
  torch::Tensor P;  ///< [B, H, N, M] attention probabilities (zero above the diagonal when causal); no gradient
};

/// Whether the fused kernel serves tensors like `x`: CPU, float32 or float64, and not disabled.
bool fusedAttentionSupports(const torch::Tensor& x);

/// Switches the fused kernel off (process-wide) so the modules take the ATen formulation they use
/// on CUDA: for tests that compare the two paths, and benchmarks. On by default.
void setFusedAttentionEnabled(bool enabled);
/// Whether the fused CPU kernels are on (setFusedAttentionEnabled): the rotary turn follows it too.
bool fusedAttentionEnabled();
/// Whether the fused row passes that need no BLAS (the rotary turn, GELU, multi-token attention's
/// convolution) serve tensors like `x`: on, CPU, float32 or float64.
bool fusedRowsSupport(const torch::Tensor& x);

/// softmax(scale·q·kᵀ [+ causal mask])·v for every head. `qkv` is [B, N, 3, H, D] (q, k, v stacked
/// on axis 2; last axis contiguous). Differentiable in `qkv` (first order).
FusedAttentionOutput fusedAttention(const torch::Tensor& qkv, double scale, bool causal);

/// Grouped-query attention (PyTorch SDPA's enable_gqa): q [B, N, H, Dk], k [B, M, G, Dk],
/// v [B, M, G, Dv] with G dividing H; query head h reads key/value group h / (H/G). Returns
/// o [B, N, H, Dv] = softmax(scale·q·kᵀ [+ causal mask])·v and P [B, H, N, M]. Causal: row n sees
/// keys 0 … n (SDPA's is_causal, top-left aligned when N ≠ M). Views whose last axis is contiguous
/// are read in place (e.g. narrow()s of a fused projection); others are copied once.
/// Differentiable in q, k and v (first order); dk and dv sum over the heads of each group.
FusedAttentionOutput fusedGroupedAttention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                                           double scale, bool causal);

}  // namespace tensorscope::model_core
