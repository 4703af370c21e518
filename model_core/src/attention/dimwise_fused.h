#pragma once
// Autograd entry point of the fused causal dimension-wise attention kernel
// (model_core/src/kernels/dimwise_causal.h): the CPU path of a causal `dimwise` layer. The ATen
// formulation (dimwiseAten in multilinear.h) stays the CUDA path and the tests' oracle.

#include <torch/types.h>

#include <vector>

#include "kernels/dimwise_causal.h"

namespace tensorscope::model_core {

/// Causal dimension-wise attention (docs/attention-variants.md §7): O [B, N, c, d] from qkv
/// [B, N, 3, d] (q, k, v stacked on axis 2) and the filters W [c, d, d], with
///   O[b,i,c,j] = Σ_m W[c,j,m]·softmax_m(S⁽ⁱ⁾[j,:]/√(i+1))·v[b,i,m],  S⁽ⁱ⁾ = Σ_{n≤i} q_nᵀk_n,
/// in O(N·c·d²) time keeping O(B·N·d + B·⌈N/K⌉·d²) for backward (K = `segment`, the positions
/// between two checkpoints of the state). Differentiable in qkv and W (first order). CPU
/// float32/float64.
torch::Tensor dimwiseCausalAttention(const torch::Tensor& qkv, const torch::Tensor& W,
                                     int64_t segment = kernels::kDimwiseSegment);

/// The tensors the autograd node of a dimwiseCausalAttention output keeps for backward (qkv, W,
/// lse, checkpoints), for tests that check what the kernel stores. Throws std::invalid_argument
/// when `out` does not come from dimwiseCausalAttention.
std::vector<torch::Tensor> dimwiseCausalSavedTensors(const torch::Tensor& out);

}  // namespace tensorscope::model_core
