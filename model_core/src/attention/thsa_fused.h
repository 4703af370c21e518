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

}  // namespace tensorscope::model_core
