#pragma once
// multilinear (docs/attention-variants.md §6) and dimwise (§7).

#include <torch/nn/modules/dropout.h>
#include <torch/nn/modules/linear.h>

#include <functional>

#include "attention/attention_module.h"

namespace tensorscope::model_core {

/// The block-term contraction with T materialised: from a = q ⊙ ḡ, k, v [B, N, R] and Wo [F, N²],
///   T[b,i,j,k] = Σ_r a[b,i,r]·k[b,j,r]·v[b,k,r] [B, N, N, N] (causal: zero unless j, k ≤ i),
///   y[b,i,:] = Wo·vec(T[b,i,:,:]) [B, N, F] (no bias).
/// The CUDA path of a multilinear layer and the oracle of multilinearBlocked (multilinear_blocked.h);
/// it keeps B·N²·R and B·N³ tensors for backward.
torch::Tensor multilinearAten(const torch::Tensor& a, const torch::Tensor& k, const torch::Tensor& v,
                              const torch::Tensor& Wo, bool causal);

/// Multi-linear attention by block-term decomposition (Tensorized Transformer):
///   T[b,i,j,k] = (1/P)·Σ_p Σ_r g_p[r]·q[b,i,r]·k[b,j,r]·v[b,k,r],  y_i = Wo·vec(T[b,i,:,:]).
/// Effective core weights are softmax(g_p) (core_softmax, the paper) or g_p (the authors' code);
/// the sum over p collapses to the mean ḡ. Causal: T[b,i,j,k] = 0 unless j ≤ i and k ≤ i — the
/// authors' language-model code builds this mask and never applies it; here it is applied.
/// N is fixed at build time (wo is [F, N²]). On CPU float32/float64 (and while the fused kernels are
/// enabled) the layer never forms T: multilinearBlocked contracts Wo with k and v first
/// (y_i[f] = Σ_r ḡ_r·q_ir·M_i[f,r], M_i[f,r] = Σ_{j,k≤i} Wo[f,j,k]·k_jr·v_kr), in O(B·F·N²·R) time,
/// keeping O(B·N·R) for backward; on CUDA it takes multilinearAten (T, B·N³). Forward refuses a
/// batch whose activations (spec::estimateCost for the CPU path, T and a⊙k for the CUDA path) exceed
/// `maxActivationBytes`, with the estimate in the message.
/// Maps: A[b,i,j] = Σ_r ḡ[r]·q[b,i,r]·k[b,j,r] [B, N, N].
class MultilinearImpl : public AttentionModuleImpl {
 public:
  explicit MultilinearImpl(const spec::AttentionSpec& spec);
  AttentionOutput forward(const torch::Tensor& x, const ForwardOptions& options) override;

  /// Upper bound on activation memory for one forward (default 4 GiB).
  void setMaxActivationBytes(double bytes) { maxActivationBytes_ = bytes; }
  /// The effective core weights [P, R] (softmax(g) or g).
  torch::Tensor effectiveCores() const;

 private:
  torch::nn::Linear wq_{nullptr}, wk_{nullptr}, wv_{nullptr}, wo_{nullptr};
  torch::Tensor cores_;  // g [P, R]
  double maxActivationBytes_ = 4.0 * (1ull << 30);
};

/// The filters of dimension-wise attention written with ATen operations: the CUDA path, the path of
/// full layers, and the oracle of the fused causal kernel. From q, k, v [B, N, d] and W [c, d, d]:
/// O [B, N, c, d] and the maps f ([B, d, d]; causal: [B, N, d, d], the prefix sums S⁽ⁱ⁾ built with
/// cumsum over a [B, N, d, d] tensor). `dropout`, when given, is applied to f before the filters.
struct DimwiseAtenOutput {
  torch::Tensor O, f;
};
DimwiseAtenOutput dimwiseAten(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                              const torch::Tensor& W, bool causal,
                              const std::function<torch::Tensor(const torch::Tensor&)>& dropout = {});

/// Dimension-wise attention (TensorCoder): one projection set of width d = R.
///   S = qᵀ·k [B, d, d],  f(S) = softmax over the last axis of S/√N,
///   O_c = v·(W_c ⊙ f(S))ᵀ for each filter W_c (never the N×d×d Khatri-Rao tensor),
///   y = concat_c(O_c)·Woᵀ.  Cost O(N·d²): linear in N.
/// Causal: position i uses S⁽ⁱ⁾ = Σ_{n≤i} q_nᵀk_n scaled by 1/√i (prefix sums), and
///   O_c[i,j] = Σ_m W_c[j,m]·f(S⁽ⁱ⁾)[j,m]·v[i,m].
/// Maps: f(S) [B, d, d]; causal: f(S⁽ᴺ⁾), the map of the last position.
/// A causal layer on CPU float32/float64 tensors (and no dropout while training) runs on the fused
/// kernel (dimwise_fused.h, kernels/dimwise_causal.h), which keeps no [B, N, d, d] tensor; every
/// other case, and CUDA, takes the ATen formulation dimwiseAten.
class DimwiseImpl : public AttentionModuleImpl {
 public:
  explicit DimwiseImpl(const spec::AttentionSpec& spec);
  AttentionOutput forward(const torch::Tensor& x, const ForwardOptions& options) override;

 private:
  torch::nn::Linear wq_{nullptr}, wk_{nullptr}, wv_{nullptr}, wo_{nullptr};
  torch::Tensor conv_;  // W [c, d, d]
  torch::nn::Dropout dropout_{nullptr};
};

}  // namespace tensorscope::model_core
