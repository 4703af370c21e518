#pragma once
// The talking-heads core (docs/attention-variants.md §8, slots b and c) with its [B, H, N, M]
// intermediates recomputed in backward instead of kept.

#include <torch/types.h>

namespace tensorscope::model_core {

/// o = U·v with U = C′·softmax(mask(C^pre·(q·kᵀ)·scale)) mixed over heads (either mixing may be
/// undefined: that side is not mixed). q, k: [B, H, N|M, D]; v [B, L, M, D]; C^pre [H, H], C′ [L, H]
/// (to-head, from-head; L = H without C′).
/// Differentiable in q, k, v and the mixings (first order). The ATen autograd graph of this math
/// keeps the logits, the weights and the mixed weights of every head for backward (three
/// [B, H, N, M] tensors per layer); this keeps at most one, as fused MHSA does. On the CPU
/// (fusedTalkingHeadsSupports) it is the fused kernel (attention/fused_talking_heads.h), which
/// keeps the softmax weights; elsewhere (CUDA) the core keeps only its inputs and runs its ATen
/// formulation again in backward.
torch::Tensor talkingHeadsRecomputed(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                                     const torch::Tensor& mixPre, const torch::Tensor& mixPost, double scale,
                                     bool causal);

/// The mixed weights U [B, H, N, M] that meet v, with ATen ops (autograd keeps every
/// intermediate): the path for the display maps and attention dropout, and (times v) the oracle
/// of talkingHeadsRecomputed.
torch::Tensor talkingHeadsWeights(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& mixPre,
                                  const torch::Tensor& mixPost, double scale, bool causal);

}  // namespace tensorscope::model_core
