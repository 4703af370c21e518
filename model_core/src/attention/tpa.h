#pragma once
// Tensor Product Attention (contract §8.7; Zhang et al. 2025, "Tensor Product Attention Is All You
// Need"; official code tensorgi/TPA model/T6.py classes CPLinear and CausalSelfAttention, and
// model/T6_kvonly.py, read at commit 3d7f51d). Tensorscope's code is its own.

#include <torch/nn/modules/dropout.h>

#include <array>
#include <torch/nn/modules/linear.h>

#include "attention/attention_module.h"

namespace tensorscope::model_core {

/// TPA for a spec with slots.tpa (ranks R_Q, R_K, R_V; head size D; H heads). Per token n
///   q[n,h,d] = (1/R_Q)·Σ_r A_q[n,h,r]·ρ_n(B_q[n,r,:])[d]     (k likewise with R_K and the rotary,
///   v[n,h,d] = (1/R_V)·Σ_r A_v[n,h,r]·B_v[n,r,d]               v without it)
/// with A_q[n,h,r] = (x_n·W_A_qᵀ)[h·R_Q + r] (contextual, T6) or a learned constant A_q[h, r]
/// (contextual_a false), B_q[n,r,d] = (x_n·W_B_qᵀ)[r·D + d] or a learned constant B_q[r, d]
/// (contextual_b false), and ρ_n T6's half-split rotary (the pair
/// (d, d + D/2) turned by −n·base^(−2d/D): applyRotary with RotaryTurn::Backward, rotary.h).
/// q_rank 0 (T6_kvonly): q = ρ_n(x·Wqᵀ) per head. Then the
/// softmax attention of MHSA with scale D^−½, T6's optional head norm o_h ← γ ⊙ RMSNorm(o_h)
/// (group_norm; ε 1e-5, γ = subln.weight [D] shared by the heads), and y = concat_h(o)·Woᵀ.
/// Weights (no biases): W_A_q.weight [H·R_Q, F] or A_q [H, R_Q] (or wq.weight [H·D, F] when
/// R_Q = 0), W_B_q.weight [R_Q·D, F] or B_q [R_Q, D]; W_A_k, W_B_k, W_A_v, W_B_v likewise with R_K,
/// R_V; subln.weight [D]; wo.weight [F, H·D].
/// The maps are the softmax weights [B, H, N, M].
/// q, k, v [B, N, 3, H, D] of TPA from a token's factor projections proj [B, N, W] (per part q, k,
/// v: the head factors [H, R] then the feature factors [R, D], or the query heads [H, D] when
/// ranks[0] = 0), T6's half-split rotary on q and k when `rope`: the fused CPU kernel
/// (kernels/tpa_factors.h), differentiable in proj, keeping only proj for backward. CPU
/// float32/float64. The ATen formulation (TpaImpl with the fused kernels switched off) is its oracle.
torch::Tensor tpaFactorQkv(const torch::Tensor& proj, int64_t H, int64_t D, const std::array<int64_t, 3>& ranks,
                           bool rope, double base);

class TpaImpl : public AttentionModuleImpl {
 public:
  explicit TpaImpl(const spec::AttentionSpec& spec);
  AttentionOutput forward(const torch::Tensor& x, const ForwardOptions& options) override;

 private:
  /// One factorised projection: q, k or v [B, N, H, D] of x, with the rotary on its feature factor.
  torch::Tensor factorised(const torch::Tensor& x, int which, bool rotary);
  /// T6's head norm of o [B, N, H, D] when group_norm is on; o itself otherwise.
  torch::Tensor headNorm(const torch::Tensor& o) const;

  torch::nn::Linear wq_{nullptr}, wo_{nullptr};
  torch::nn::Linear wa_[3] = {torch::nn::Linear{nullptr}, torch::nn::Linear{nullptr}, torch::nn::Linear{nullptr}};
  torch::nn::Linear wb_[3] = {torch::nn::Linear{nullptr}, torch::nn::Linear{nullptr}, torch::nn::Linear{nullptr}};
  torch::Tensor a_[3];  ///< the constant head factors [H, R] when contextual_a is false
  torch::Tensor b_[3];  ///< the constant feature factors [R, D] when contextual_b is false
  std::shared_ptr<torch::nn::Module> subln_;  ///< holds `weight` [D] of T6's head norm (group_norm)
  torch::Tensor sublnWeight_;
  int ranks_[3] = {0, 0, 0};
  torch::nn::Dropout dropout_{nullptr};
};

}  // namespace tensorscope::model_core
