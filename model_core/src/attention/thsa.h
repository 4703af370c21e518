#pragma once
// thsa and thsa_linear (docs/attention-variants.md §§3, 4).

#include <torch/nn/modules/dropout.h>
#include <torch/nn/modules/linear.h>

#include "attention/attention_module.h"
#include "attention/thsa_core.h"

namespace tensorscope::model_core {

/// Shared by both THSA layers: projections q, k, v [B, N, R], the output Wo and the core C.
class ThsaBaseImpl : public AttentionModuleImpl {
 public:
  explicit ThsaBaseImpl(const spec::AttentionSpec& spec);
  torch::Tensor effectiveCore() const override { return core_->effective(); }
  std::vector<NamedWeight> namedWeights() const override;
  std::int64_t trainableParameterCount() const override;

 protected:
  torch::nn::Linear wq_{nullptr}, wk_{nullptr}, wv_{nullptr}, wo_{nullptr};
  ThsaCore core_{nullptr};
};

/// Tunable-head self-attention (Tuformer eq. 3):
///   logits[b,r,n,m] = Σ_s C[r,s]·q[b,n,s]·k[b,m,s] / √R,  P = softmax_m,
///   Ω[b,n,r] = Σ_m P[b,r,n,m]·v[b,m,r],  y = Ω·Woᵀ.
/// A Kronecker core s·(A ⊗ B) is contracted through its factors: with B = 1·1ᵀ only H distinct
/// maps exist, so the `mhsa` and `skip_right` presets cost what MHSA costs. A dense core uses
/// batched products q̃[b,r,n,s] = C[r,s]·q[b,n,s] then q̃·kᵀ (never a B·R·N·M·R tensor).
/// Maps: P per channel [B, R, N, N].
class ThsaImpl : public ThsaBaseImpl {
 public:
  explicit ThsaImpl(const spec::AttentionSpec& spec);
  AttentionOutput forward(const torch::Tensor& x, const ForwardOptions& options) override;

 private:
  /// Whether the fused dense kernel computes this core on the CPU (thsa_fused.h).
  bool denseKernelServes() const;
  bool turnsQueriesAndKeys() const override { return true; }
  /// projectQkv(x, …, heads) with q and k turned by rotary positions (blocks of D) when they are on.
  torch::Tensor projectTurned(const torch::Tensor& x, int64_t heads);

  torch::nn::Dropout dropout_{nullptr};
};

/// THSA with the ELU kernel φ(z) = elu(z) + 1 (linear attention, O(N·R²)):
///   Ω[n,r] = Σ_s φ(C_r⊙q_n)_s·S[s,r] / Σ_s φ(C_r⊙q_n)_s·z_s,  S = Σ_m φ(k_m)·v_mᵀ,  z = Σ_m φ(k_m);
/// causal: S and z are prefix sums. No 1/√R (fold any scale into C).
/// Maps: the normalised similarities sim_r(n,m)/Σ_m sim_r(n,m) [B, R, N, N].
class ThsaLinearImpl : public ThsaBaseImpl {
 public:
  explicit ThsaLinearImpl(const spec::AttentionSpec& spec);
  AttentionOutput forward(const torch::Tensor& x, const ForwardOptions& options) override;

 private:
  /// The display maps from q, k [B, N, R] (materialises [B, N, R, R]: probes only).
  static torch::Tensor linearMaps(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& C, bool causal);
};

}  // namespace tensorscope::model_core
