#pragma once
// mhsa, fixed_head and tp (docs/attention-variants.md §§1, 2, 5).

#include <torch/nn/modules/dropout.h>
#include <torch/nn/modules/linear.h>

#include "attention/attention_module.h"
#include "attention/head_mixing.h"

namespace tensorscope::model_core {

/// Multi-head self-attention: q = x·Wqᵀ split into H heads of size D, P = softmax(q·kᵀ/√D),
/// o = P·v, y = concat(o)·Woᵀ. `fixed_head` is the same module with D = d_p chosen freely
/// (Low-Rank Bottleneck paper, scale 1/√d_p). `tp` adds roles r = x·Wrᵀ and binds each head's
/// filler by the Hadamard product o_h ⊙ r_h before Wo (TP-Transformer).
/// Maps: P [B, H, N, N]; roles: r [B, H, N, D].
///
/// The slots (spec.slots, docs/attention-variants.md §8) make it every headed design of the one
/// network: K and V of G groups shared by H/G query heads each (wk, wv [G·D, F]; MQA, GQA), the
/// talking-heads mixings before (mix_pre [H, H]) and after (mix_post [H, H]) the softmax, and the
/// output gate σ(x·W^Gᵀ) (wg [H·D, F] elementwise or [H, F] headwise). With talking heads the
/// maps are the mixed weights that meet V.
///
/// Differential attention (slots.differential; microsoft/unilm Diff-Transformer/multihead_diffattn.py):
/// wq [2·H·D, F] gives each head two query maps (rows (2h + i)·D …), wk [2·G·D, F] the key maps and
/// wv [G·2D, F] value heads of size 2D (G = H unless shared, read as the official repeat_kv); A_h = P_{h,0} − λ·P_{h,1} with λ = e^{λq1·λk1} − e^{λq2·λk2} + λ_init
/// (parameters lambda_q1 … lambda_k2 [D]); o_h = RMSNorm(A_h·V_h)·subln.weight·(1 − λ_init).
/// Its maps are A [B, H, N, M]; `map_parts` holds P [B, H, 2, N, M].
///
/// Collaborative attention (slots.collaborative; epfml/collaborative-attention): wq, wk [D̃, F]
/// without bias form one shared query and key space, `mixing` [H, D̃] reads it per head and the
/// optional `content_bias` [H, F] adds x_m·w^c_h to head h's logits for key m:
/// logits[h,n,m] = ((q̃_n ⊙ m_h)·k̃_m + x_m·w^c_h)/√(D̃/H); values and Wo as MHSA.
class MhsaImpl : public AttentionModuleImpl {
 public:
  /// `layer`: the block's index in its model (0 first); differential attention's λ_init depends on it.
  explicit MhsaImpl(const spec::AttentionSpec& spec, int layer = 0);
  AttentionOutput forward(const torch::Tensor& x, const ForwardOptions& options) override;

 private:
  /// The ATen formulation (every slot; CUDA; attention dropout): o [B, H, N, D].
  torch::Tensor attend(const torch::Tensor& x, const ForwardOptions& options, AttentionOutput& out);
  /// o [B, N, H, D] gated by σ(x·W^Gᵀ) (headwise: one gate per head).
  torch::Tensor gate(const torch::Tensor& x, const torch::Tensor& o) const;
  /// Collaborative attention: o [B, N, H, D].
  torch::Tensor collaborative(const torch::Tensor& x, const ForwardOptions& options, AttentionOutput& out);
  /// Differential attention: o [B, N, H, 2D] (normalised and scaled).
  torch::Tensor differential(const torch::Tensor& x, const ForwardOptions& options, AttentionOutput& out);

  bool turnsQueriesAndKeys() const override { return true; }

  int64_t groups_ = 0;  ///< key/value heads G (H without shared K and V)
  torch::nn::Linear wq_{nullptr}, wk_{nullptr}, wv_{nullptr}, wo_{nullptr}, wr_{nullptr}, wg_{nullptr};
  torch::nn::Linear contentBias_{nullptr};  ///< collaborative attention: w^c [H, F]
  torch::Tensor mixing_;                     ///< collaborative attention: m [H, D̃]
  HeadMixingWeights mixPre_, mixPost_;  ///< [H, H] talking-heads mixings (to-head, from-head), or undefined
  double lambdaInit_ = 0.0;                               ///< differential attention: λ_init of this block
  torch::Tensor lambdaQ1_, lambdaK1_, lambdaQ2_, lambdaK2_;  ///< [D] λ's reparameterisation
  std::shared_ptr<torch::nn::Module> subln_;              ///< holds `weight` [2D] of the head RMSNorm
  torch::Tensor sublnWeight_;
  torch::nn::Dropout dropout_{nullptr};
};

}  // namespace tensorscope::model_core
