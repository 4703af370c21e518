#pragma once
// Multi-token attention (contract §8.8; Golovneva, Wang, Weston, Sukhbaatar 2025, "Multi-Token
// Attention", arXiv 2504.00927; official code facebookresearch/RAM projects/mta/mta_transformer.py,
// class Attention, read at commit e6f051f). Tensorscope's code is its own.

#include <torch/nn/modules/dropout.h>
#include <torch/nn/modules/linear.h>

#include "attention/attention_module.h"
#include "attention/head_mixing.h"

namespace tensorscope::model_core {

/// An mhsa or fixed_head layer with slots.mta set. With S = q·kᵀ/√D per head [B, H, N, M]:
///   S ← conv_{θ}(S with future entries zeroed)     mta_kernel [H, c_q, c_k]   (causal: mask after)
///   S ← mix_pre ∘ S                                 mix_pre [H, H] (to, from)  (slots.pre_mix, `wpsm`)
///   P = softmax(S + mask)
///   P ← conv_{θ'}(P), masked entries zeroed again    mta_kernel_after_sm [H, c_q', c_k']
///   P ← head convolution in groups of g             head_kernel [H/g, g, g] (from, to)
///       or mix_post ∘ P                             mix_post [H, H] (to, from) (slots.post_mix, `wposm`)
///   o_h = P_h·v_h, then RMSNorm over D (subln.weight [D], ε 1e-5, optionally × (1 − λ_init)),
///   then o_h ← o_h ⊙ σ(gate(o_h)) (gate.weight [1, D] or [D, D], gate.bias), y = concat(o)·Woᵀ.
/// The convolution reads query n − c_q + 1 … n and keys m − p … m − p + c_k − 1, zero outside the map,
/// with p = (c_k − 1)/2 (pad both), c_k − 1 (left) or 0 (right). Every kernel and mixing starts
/// as the identity (the official init_method "identity"), so a new layer is MHSA (plus its norm
/// and gate); a spec's drawn values (spec/slot_values.h) replace those starts, and frozen entries
/// of a mixing keep their drawn value. Maps: the weights that meet V [B, H, N, M].
class MtaImpl : public AttentionModuleImpl {
 public:
  /// `layer`: the block's index (0 first), for norm_rescale's λ_init.
  explicit MtaImpl(const spec::AttentionSpec& spec, int layer = 0);
  AttentionOutput forward(const torch::Tensor& x, const ForwardOptions& options) override;

 private:
  bool turnsQueriesAndKeys() const override { return true; }

  int64_t groups_ = 0;  ///< key/value heads G
  double normScale_ = 1.0;  ///< 1 − λ_init with norm_rescale, else 1
  torch::nn::Linear wq_{nullptr}, wk_{nullptr}, wv_{nullptr}, wo_{nullptr}, gate_{nullptr};
  HeadMixingWeights mixPre_, mixPost_;
  torch::Tensor kernel_, kernelAfter_, headKernel_, sublnWeight_;
  std::shared_ptr<torch::nn::Module> subln_;
  torch::nn::Dropout dropout_{nullptr};
};

/// The depthwise key-query convolution of maps [B, H, N, M] by kernel [H, c_q, c_k] (zero padding:
/// c_q − 1 earlier queries; keys as `pad`). Causal: the future entries (m > n) are zero before the
/// convolution, and with zeroFuture after it too. On the fused CPU pass where fusedRowsSupport
/// (attention/mta_convolution.h), else the ATen formulation. Exposed for the tests.
torch::Tensor mtaConvolution(const torch::Tensor& maps, const torch::Tensor& kernel, spec::MtaPad pad, bool causal,
                             bool zeroFuture = false);

/// The identity kernel [H, c_q, c_k] for `pad`: one 1 at the newest query and the key offset 0.
torch::Tensor mtaIdentityKernel(int64_t heads, int64_t cq, int64_t ck, spec::MtaPad pad);

}  // namespace tensorscope::model_core
