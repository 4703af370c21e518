#pragma once
// The block-term (multilinear) contraction without the B·N³ tensor T: the CPU path of a
// `multilinear` layer (docs/attention-variants.md §6, docs/decisions.md). The T-materialising
// formulation (multilinearAten in multilinear.h) stays the CUDA path and the tests' oracle.

#include <torch/types.h>

#include <cstdint>
#include <vector>

#include "spec/cost_model.h"

namespace tensorscope::model_core {

/// y[b,i,f] = Σ_r a[b,i,r]·M_i[b,f,r] with M_i[b,f,r] = Σ_{j,k} Wo[f, j·N + k]·k[b,j,r]·v[b,k,r]
/// (causal: j ≤ i and k ≤ i), i.e. Wo·vec(T[b,i,:,:]) with T[b,i,j,k] = Σ_r a[b,i,r]·k[b,j,r]·v[b,k,r],
/// never forming T. `a` = q ⊙ ḡ, k, v are [B, N, R]; Wo is [F, N²]; the result is [B, N, F]
/// (no bias).
///   full:   X[j,f,b,r] = Σ_k Wo[f,j,k]·v[b,k,r],  M[f,b,r] = Σ_j k[b,j,r]·X[j,f,b,r];
///   causal: M_i − M_{i−1} = v_i ⊙ U_i + k_i ⊙ V_i with U_i[f,r] = Σ_{j<i} Wo[f,j,i]·k_j[r] and
///           V_i[f,r] = Σ_{k≤i} Wo[f,i,k]·v_k[r] (the pairs (j, k) with max(j, k) = i), and the
///           masked Wo rows cut to the positions a block of i can see (no GEMM over the zero triangle).
/// Output features are processed in blocks of Fb = multilinearFeatureBlock(...) so the work tensors
/// ([N, Fb, B, R]) stay within `blockElements` values (or one feature); backward recomputes them.
/// Kept for backward: a, k, v and Wo (a parameter) — O(B·N·R), linear in N. Time O(B·F·N²·R).
/// Differentiable in a, k, v and Wo (first order). Any device and dtype ATen supports; the layer
/// uses it for CPU float32/float64.
torch::Tensor multilinearBlocked(const torch::Tensor& a, const torch::Tensor& k, const torch::Tensor& v,
                                 const torch::Tensor& Wo, bool causal,
                                 std::int64_t blockElements = spec::kMultilinearBlockElements);

/// The tensors the autograd node of a multilinearBlocked output keeps for backward (a, k, v, Wo),
/// for tests that check what the formulation stores. Throws std::invalid_argument when `out` does
/// not come from multilinearBlocked.
std::vector<torch::Tensor> multilinearBlockedSavedTensors(const torch::Tensor& out);

}  // namespace tensorscope::model_core
