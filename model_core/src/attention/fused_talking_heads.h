#pragma once
// The talking-heads core (contract §8, slots b and c) fused on the CPU: per block of query rows,
// every head's scores, the pre-softmax mixing, the softmax, the post-softmax mixing and the
// products with v run on blocks that stay in cache, and backward runs the same way from the
// softmax weights it keeps. Post-softmax mixing in a fused kernel is what FlashAttention declined
// (Dao-AILab/flash-attention#303) and FlexAttention has no hook for (pytorch/pytorch#153221):
// mixing normalised rows across heads needs every head's whole row, so this kernel is not an
// online softmax; its blocks hold whole rows of all heads instead (H·rows·M values).

#include <torch/types.h>

namespace tensorscope::model_core {

/// o = U·v with U = C′·softmax(mask(C·(q·kᵀ)·scale)) mixed over heads, as talkingHeadsWeights
/// (its oracle) times v. q [B, H, N, Dk], k [B, H, M, Dk], v [B, L, M, Dv] (strided head views
/// are read in place; expanded key heads too); mixPre [H, H], mixPost [L, H] (to-head, from-head)
/// or undefined (that side is not mixed; L = H without C′). A rectangular C′ mixes H maps into L
/// heads, as differential attention's [H, 2H] pairs P₁ − λ·P₂. Returns o [B, L, N, Dv] (a view of
/// [B, N, L, Dv]).
/// Differentiable in q, k, v and both mixings, first order; a backward that builds a graph runs
/// the ATen formulation's. Between forward and backward it keeps the softmax weights
/// [B, H, N, M] (what fused MHSA keeps) and its inputs. CPU float32/float64 with a BLAS
/// (fusedAttentionSupports). `rowBlock` > 0 fixes the query rows per block (tests); 0 chooses.
/// Backward runs one batch entry per thread.
torch::Tensor fusedTalkingHeads(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                                const torch::Tensor& mixPre, const torch::Tensor& mixPost, double scale, bool causal,
                                int64_t rowBlock = 0);

/// Whether fusedTalkingHeads serves these operands: fusedAttentionSupports, one dtype, and sizes
/// within the BLAS integer range.
bool fusedTalkingHeadsSupports(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v);

}  // namespace tensorscope::model_core
