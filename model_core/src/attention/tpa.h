#pragma once
// Tensor Product Attention (contract §8.7; Zhang et al. 2025, "Tensor Product Attention Is All You
// Need"; official code tensorgi/TPA model/T6.py classes CPLinear and CausalSelfAttention, and
// model/T6_kvonly.py, read at commit 3d7f51d). Tensorscope's code is its own.

#include <torch/nn/modules/dropout.h>
#include <torch/nn/modules/linear.h>

#include "attention/attention_module.h"

namespace tensorscope::model_core {

/// TPA for a spec with slots.tpa (ranks R_Q, R_K, R_V; head size D; H heads). Per token n
///   q[n,h,d] = (1/R_Q)·Σ_r A_q[n,h,r]·ρ_n(B_q[n,r,:])[d]     (k likewise with R_K and the rotary,
///   v[n,h,d] = (1/R_V)·Σ_r A_v[n,h,r]·B_v[n,r,d]               v without it)
/// with A_q[n,h,r] = (x_n·W_A_qᵀ)[h·R_Q + r] (contextual, T6) or a learned constant A_q[h, r]
/// (contextual_a false), B_q[n,r,d] = (x_n·W_B_qᵀ)[r·D + d], and ρ_n T6's half-split rotary (the pair
/// (d, d + D/2) turned by −n·base^(−2d/D): applyRotary with RotaryTurn::Backward, rotary.h).
/// q_rank 0 (T6_kvonly): q = ρ_n(x·Wqᵀ) per head. Then the
/// softmax attention of MHSA with scale D^−½ and y = concat_h(o)·Woᵀ. Weights (no biases):
///   W_A_q.weight [H·R_Q, F] or A_q [H, R_Q] (or wq.weight [H·D, F] when R_Q = 0), W_B_q.weight
///   [R_Q·D, F]; W_A_k, W_B_k, W_A_v, W_B_v likewise with R_K, R_V; wo.weight [F, H·D].
/// The maps are the softmax weights [B, H, N, M].
class TpaImpl : public AttentionModuleImpl {
 public:
  explicit TpaImpl(const spec::AttentionSpec& spec);
  AttentionOutput forward(const torch::Tensor& x, const ForwardOptions& options) override;

 private:
  /// One factorised projection: q, k or v [B, N, H, D] of x, with the rotary on its feature factor.
  torch::Tensor factorised(const torch::Tensor& x, int which, bool rotary);

  torch::nn::Linear wq_{nullptr}, wo_{nullptr};
  torch::nn::Linear wa_[3] = {torch::nn::Linear{nullptr}, torch::nn::Linear{nullptr}, torch::nn::Linear{nullptr}};
  torch::nn::Linear wb_[3] = {torch::nn::Linear{nullptr}, torch::nn::Linear{nullptr}, torch::nn::Linear{nullptr}};
  torch::Tensor a_[3];  ///< the constant head factors [H, R] when contextual_a is false
  int ranks_[3] = {0, 0, 0};
  torch::nn::Dropout dropout_{nullptr};
};

}  // namespace tensorscope::model_core
