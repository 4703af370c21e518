#pragma once
// Attention on a GPU through LibTorch's fused scaled-dot-product attention (issue 39).
//
// LibTorch 2.1+ has at::scaled_dot_product_attention, whose CUDA kernels (FlashAttention-2 for
// half precision, the memory-efficient CUTLASS kernel for float32) never store the [B, H, N, M]
// probabilities: their memory is linear in N and forward + backward are a few kernel launches
// instead of a dozen ATen passes over the scores. MHSA, fixed-head and TP attention map onto it
// directly; every head-mixing THSA core maps onto it as *widened multi-query attention*
// (docs/cuda-attention.md):
//
//   channel r's logits  Σ_s C[r, s]·q[n, s]·k[m, s] = (q_n ⊙ C[r, :])·k_m
//
// so the R channels are R query heads of width R (query head r = q ⊙ C[r, :]) over one shared key
// head k, and channel r's output is its map applied to value column r. Each query head therefore
// gets a value head of its own column(s), zero-padded to the kernel's alignment (4 floats, or 8
// half-precision values): the value side costs R·N·M·4 multiply-adds against R²·N·M for the logits
// (3% extra at R = 128), not the 2× of giving every head all R value columns. Where the channels of
// a head share one map (B = 1·1ᵀ: skip_right, collaborative, heads-only), the G = H distinct rows of C
// are the query heads and each value head is that head's D columns.
//
// Without LibTorch 2.1 (Debian's 1.13) or off CUDA, `sdpaAttentionSupports` is false and the modules
// keep their ATen formulation, which stays the reference the tests compare this path with.

#include <torch/types.h>

#include <string>

namespace tensorscope::model_core {

/// Whether this build has the fused path (LibTorch >= 2.1).
bool sdpaAttentionBuilt();

/// Whether the fused path serves tensors like `x`: a CUDA tensor, a LibTorch with the fused kernels,
/// and not switched off (setSdpaAttentionEnabled, or TENSORSCOPE_CUDA_ATTENTION=aten in the
/// environment, read once).
bool sdpaAttentionSupports(const torch::Tensor& x);

/// Which formulation attention takes on CUDA, in words ("fused scaled-dot-product attention" or
/// "ATen formulation (...why...)"), for benchmark reports and --version.
std::string cudaAttentionPath();

/// Switches the fused path off (process-wide) so the modules take their ATen formulation on CUDA:
/// for the tests and benchmarks that compare the two. On by default.
void setSdpaAttentionEnabled(bool enabled);

/// softmax(scale·q·kᵀ [+ causal mask])·v for q, k, v [B, H, N, D] (the last axis contiguous):
/// [B, H, N, D]. Differentiable.
torch::Tensor sdpaAttention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v, double scale,
                            bool causal);

/// Head mixing as widened multi-query attention: for q, k, v [B, N, R] and `rows` [G, R] (G divides
/// R; G = R for a core C whose every channel has its own map, else the G distinct rows of C), query
/// head g is q ⊙ rows[g], its key is k and its values are v's columns g·R/G … (g+1)·R/G − 1.
/// Returns Ω [B, N, R], Ω[b, n, g·W + w] = Σ_m softmax_m(scale·(q_n ⊙ rows[g])·k_m)·v[b, m, g·W + w]
/// with W = R/G. Differentiable in q, k, v and rows.
torch::Tensor sdpaHeadMixing(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                             const torch::Tensor& rows, double scale, bool causal);

}  // namespace tensorscope::model_core
