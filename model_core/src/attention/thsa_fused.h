#pragma once
// Autograd entry points of the fused THSA kernels (model_core/src/kernels): the CPU path of every
// head-mixing core. The ATen formulation in thsa.cpp stays the CUDA path and the tests' oracle.

#include <torch/types.h>

#include "kernels/parallel.h"

namespace tensorscope::model_core {

/// at::parallel_for with LibTorch's intra-op threads, for the torch-free kernels.
kernels::Parallel atenParallel();

/// Dense-core THSA: Ω [B, N, R] from qkv [B, N, 3, R] (q, k, v stacked on axis 2) and the effective
/// core C [R, R]; logits_r = scale·(q ⊙ C[r,:])·kᵀ. Differentiable in qkv and C (first order).
/// CPU float32/float64 (see fusedAttentionSupports).
torch::Tensor denseThsaAttention(const torch::Tensor& qkv, const torch::Tensor& C, double scale, bool causal);

/// Linear THSA (thsa_linear, docs/attention-variants.md §4): Ω [B, N, R] from qkv [B, N, 3, R] and C [R, R]
/// with φ = elu + 1, in O(N·R²) time and O(B·N·R) memory (kernels/thsa_linear.h).
/// Differentiable in qkv and C (first order). CPU float32/float64.
torch::Tensor linearThsaAttention(const torch::Tensor& qkv, const torch::Tensor& C, bool causal);

/// THSA with a low-rank core C = U·Vᵀ through its factors (kernels/thsa_lowrank.h): Ω [B, N, R]
/// from qkv [B, N, 3, R], U and V [R, ρ]; `scale` = 1/√R. Differentiable in qkv, U and V.
torch::Tensor lowRankThsaAttention(const torch::Tensor& qkv, const torch::Tensor& U, const torch::Tensor& V,
                                   double scale, bool causal);

/// THSA with a core s·(A ⊗ B), B = 1·1ᵀ or c₂c₃ᵀ, through its H head maps (kernels/thsa_heads.h):
/// Ω [B, N, H·D] from qkv [B, N, 3, H·D]. `A` [H, H] undefined means the identity (no mixing);
/// `c2`, `c3` [D] undefined means B = 1·1ᵀ (both defined: rank one). `scale` = s/√R.
/// Differentiable in qkv, A, c2 and c3 (first order). CPU float32/float64.
torch::Tensor headMapThsaAttention(const torch::Tensor& qkv, int64_t heads, const torch::Tensor& A,
                                   const torch::Tensor& c2, const torch::Tensor& c3, double scale, bool causal);

}  // namespace tensorscope::model_core
