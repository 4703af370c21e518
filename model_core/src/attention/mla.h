#pragma once
// Multi-head latent attention (contract §8.6; DeepSeek-V2/V3, deepseek-ai/DeepSeek-V3
// inference/model.py class MLA, commit 1ea5a1a7ed7429e25ba2fa2c76fe74fa5968d348).

#include <torch/nn/modules/dropout.h>
#include <torch/nn/modules/linear.h>

#include "attention/attention_module.h"

namespace tensorscope::model_core {

/// MLA for a spec with slots.latent (kv_rank L, q_rank, rope_dim r; head content size D is both
/// qk_nope_head_dim and v_head_dim). Weights under the official names, none with a bias:
///   wq.weight [H·(D + r), F]   or (q_rank > 0) wq_a.weight [q_rank, F], q_norm.weight [q_rank],
///                                             wq_b.weight [H·(D + r), q_rank];
///   wkv_a.weight [L + r, F], kv_norm.weight [L], wkv_b.weight [H·2D, L], wo.weight [F, H·D].
/// Rows h·(D + r) … of the query: the head's content part (D), then its rotary part (r). Rows of
/// wkv_a: the latent (L), then the rotary key (r) shared by all heads. Rows h·2D … of wkv_b: the
/// head's key part W^UK (D), then its value part W^UV (D). RMSNorms have ε = 1e-6; the rotary turn
/// is DeepSeek's interleaved one (pairs (2j, 2j+1), frequency θ^(−2j/r), θ = 10⁴, positions 0 … N−1,
/// no YaRN scaling); logits are scaled by (D + r)^−½. The maps are the softmax weights [B, H, N, M].
/// slots.latent.order chooses naive (per-head keys and values) or absorbed (W^UK folded into the
/// query, W^UV after the softmax): the same function.
class MlaImpl : public AttentionModuleImpl {
 public:
  explicit MlaImpl(const spec::AttentionSpec& spec);
  AttentionOutput forward(const torch::Tensor& x, const ForwardOptions& options) override;

 private:
  torch::nn::Linear wq_{nullptr}, wqA_{nullptr}, wqB_{nullptr}, wkvA_{nullptr}, wkvB_{nullptr}, wo_{nullptr};
  std::shared_ptr<torch::nn::Module> qNorm_, kvNorm_;  ///< hold `weight` of the two RMSNorms
  torch::Tensor qNormWeight_, kvNormWeight_;
  torch::nn::Dropout dropout_{nullptr};
};

/// The absorbed order's inputs to the grouped attention kernel (one shared key and value head):
///   query [B, N, H, L + r] = [q_nope_h·W^UK_h, ρ(q_pe_h)] per head,
///   key   [B, N, 1, L + r] = [RMSNorm(c)·g, ρ(k_pe)],   value [B, N, 1, L] = RMSNorm(c)·g,
/// with ρ DeepSeek's interleaved turn (mlaRotary) and the RMSNorm's ε `eps`.
struct MlaAbsorbedInputs {
  torch::Tensor query, key, value;
};

/// The absorbed inputs from the projections: `q` [B, N, H·(D + r)] (head h's [q_nope, q_pe] at
/// h·(D + r)) and `kv` [B, N, L + r] ([c, k_pe]); or, with `kv` undefined, `q` [B, N, H·(D + r) + L + r]
/// holding both (the stacked projection of wq and wkv_a, read in place). wUK [H, D, L] (rows 0 … D−1
/// of each head's block of wkv_b), normWeight g [L]. On the CPU in float32/float64 one fused
/// function (kernels/mla_latent.h): the per-head products on the GEMM, the turns, the RMSNorm and
/// the key and value written in one pass, and in backward one pass that writes the gradient of the
/// whole stacked projection (no split or concatenation, no zero-filled slices). Elsewhere, or with
/// the fused kernels off, mlaAbsorbedInputsAten, its test oracle. Differentiable (first order).
MlaAbsorbedInputs mlaAbsorbedInputs(const torch::Tensor& q, const torch::Tensor& kv, const torch::Tensor& wUK,
                                    const torch::Tensor& normWeight, int64_t rope, double eps, double theta);
/// mlaAbsorbedInputs written with ATen ops (split, einsum, rmsNorm, the ATen turn, cat).
MlaAbsorbedInputs mlaAbsorbedInputsAten(const torch::Tensor& q, const torch::Tensor& kv, const torch::Tensor& wUK,
                                        const torch::Tensor& normWeight, int64_t rope, double eps, double theta);

/// DeepSeek's interleaved rotary turn of x [B, N, …, r] at positions 0 … N−1 (axis 1): the pair
/// (x_2j, x_2j+1) turned by the angle n·θ^(−2j/r).
torch::Tensor mlaRotary(const torch::Tensor& x, double theta);

}  // namespace tensorscope::model_core
