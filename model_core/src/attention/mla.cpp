#include "attention/mla.h"

#include <cmath>

#include "attention/fused_attention.h"
#include "attention/kernels.h"

namespace tensorscope::model_core {

torch::Tensor mlaRotary(const torch::Tensor& x, double theta) {
  // DeepSeek's apply_rotary_emb: view_as_complex over adjacent pairs, i.e. interleaved pairs.
  return x.size(-1) == 0 ? x : applyRotary(x, x.size(-1), RotaryPairs::Interleaved, theta);
}

MlaImpl::MlaImpl(const spec::AttentionSpec& s) : AttentionModuleImpl(s) {
  const auto& l = s.slots.latent;
  const int64_t F = s.sizes.F, H = s.sizes.H, D = s.sizes.D, L = l.kv_rank, Rq = l.q_rank, r = l.rope_dim;
  // In the official module's order; no biases (validation refuses bias for MLA).
  if (Rq == 0) {
    wq_ = register_module("wq", makeProjection(F, H * (D + r), false));
  } else {
    wqA_ = register_module("wq_a", makeProjection(F, Rq, false));
    qNorm_ = register_module("q_norm", std::make_shared<torch::nn::Module>());
    qNormWeight_ = qNorm_->register_parameter("weight", torch::ones({Rq}));
    wqB_ = register_module("wq_b", makeProjection(Rq, H * (D + r), false));
  }
  wkvA_ = register_module("wkv_a", makeProjection(F, L + r, false));
  kvNorm_ = register_module("kv_norm", std::make_shared<torch::nn::Module>());
  kvNormWeight_ = kvNorm_->register_parameter("weight", torch::ones({L}));
  wkvB_ = register_module("wkv_b", makeProjection(L, H * 2 * D, false));
  wo_ = register_module("wo", makeProjection(H * D, F, false));
  dropout_ = register_module("dropout", torch::nn::Dropout(s.dropout));
}

AttentionOutput MlaImpl::forward(const torch::Tensor& x, const ForwardOptions& options) {
  checkInput(x);
  const auto& l = spec_.slots.latent;
  const int64_t B = x.size(0), N = x.size(1), H = spec_.sizes.H, D = spec_.sizes.D, L = l.kv_rank, r = l.rope_dim;
  // The projections of x (the query's, or its down-projection, and the KV latent's) from one GEMM.
  const auto proj = projectStacked(x, {wq_ ? wq_ : wqA_, wkvA_});
  const auto q = (wq_ ? proj[0] : project(wqB_, rmsNorm(proj[0], qNormWeight_, spec::kMlaNormEps))).view({B, N, H, D + r});
  // Parts of one projection are split (not narrowed twice): split's backward writes the parts'
  // gradients into one tensor, where each narrow's would fill a zero tensor of the whole to be added.
  const auto qParts = q.split_with_sizes({D, r}, -1);
  const auto& qNope = qParts[0];                                                    // [B, N, H, D]
  const auto qPe = mlaRotary(qParts[1], spec::kMlaRopeTheta);                       // [B, N, H, r]
  const auto kvParts = proj[1].split_with_sizes({L, r}, -1);                        // [B, M, L + r]
  const auto c = rmsNorm(kvParts[0], kvNormWeight_, spec::kMlaNormEps);            // [B, M, L]
  const auto kPe = mlaRotary(kvParts[1], spec::kMlaRopeTheta);                      // [B, M, r]
  const bool absorbed = l.order == spec::LatentOrder::Absorbed;
  const auto w = wkvB_->weight.view({H, 2 * D, L});  // per head: W^UK rows 0 … D−1, W^UV rows D … 2D−1
  const double scale = 1.0 / std::sqrt(double(D + r));
  AttentionOutput out;
  torch::Tensor o;  // [B, N, H, D]
  const bool fused = fusedAttentionSupports(x) && !(is_training() && spec_.dropout > 0);
  if (!absorbed && fused) {
    // The naive order on the fused kernel with a key and value head per query head: queries
    // [q_nope, q_pe] (D + r a head), keys [k_nope, k_pe] (the one rotary key copied to every head)
    // and the values read in place from the up-projection. The kernel keeps P for backward as
    // MHSA does; no [B, H, N, M] logits or their gradient.
    const auto kvb = project(wkvB_, c).view({B, N, H, 2 * D}).split(D, -1);  // k_nope, v
    const auto key = r > 0 ? torch::cat({kvb[0], kPe.unsqueeze(2).expand({B, N, H, r})}, -1) : kvb[0];
    const auto query = r > 0 ? torch::cat({qNope, qPe}, -1) : qNope;  // q_pe turned
    const auto att = fusedGroupedAttention(query, key, kvb[1], scale, spec_.causal);
    if (options.with_maps) out.maps = att.P;
    out.y = project(wo_, att.o.reshape({B, N, H * D}));
    return out;
  }
  if (absorbed && fused) {
    // The absorbed order as grouped attention with one group (MQA on the latent): queries
    // [q̃, q_pe] (L + r a head), the one key head [c, k_pe] (L + r) and the one value head c (L),
    // read in place from the key; W^UV then turns each head's mixture of latents into its D. The
    // kernel keeps P for backward as MHSA does; no [B, H, N, M] logits or their gradient.
    // The per-head products with W^UK and W^UV are headProducts': single-threaded BLAS calls on row
    // blocks of one head, q_nope and the kernel's output read in place, the results written with the
    // heads interleaved (q_pe appended to each query head in the same pass). LibTorch 1.13's einsum ran
    // them as a bmm of [T, D]·[D, L] products one after another on both threads, at a fifth of the GEMM
    // rate, followed by the cat and the transposed copy (bench/README.md, issue 41, ninth part).
    const auto query = headProducts(qNope.flatten(0, 1), w.narrow(1, 0, D), false,
                                    r > 0 ? qPe.flatten(0, 1) : torch::Tensor())
                           .view({B, N, H, L + r});                             // [B, N, H, L + r]: [q̃, q_pe]
    const auto key = (r > 0 ? torch::cat({c, kPe}, -1) : c).unsqueeze(2);       // [B, M, 1, L + r]
    const auto att = fusedGroupedAttention(query, key, key.narrow(-1, 0, L), scale, spec_.causal);
    if (options.with_maps) out.maps = att.P;
    o = headProducts(att.o.flatten(0, 1), w.narrow(1, D, D), /*transW=*/true, torch::Tensor());  // [B·N, H, D]
    out.y = project(wo_, o.view({B, N, H * D}));
    return out;
  }
  torch::Tensor logits, v;
  if (!absorbed) {
    const auto kvb = project(wkvB_, c).view({B, N, H, 2 * D});
    v = kvb.narrow(-1, D, D);  // [B, M, H, D]
    logits = torch::einsum("bnhd,bmhd->bhnm", {qNope, kvb.narrow(-1, 0, D)});
  } else {
    // The ATen formulation of the absorbed order (CUDA, attention dropout, and the fused path's
    // oracle with setFusedAttentionEnabled(false)): q̃ = W^UKᵀ q_nope meets the latent c itself.
    const auto qt = torch::einsum("bnhd,hdc->bnhc", {qNope, w.narrow(1, 0, D)});
    logits = torch::einsum("bnhc,bmc->bhnm", {qt, c});
  }
  if (r > 0) logits = logits + torch::einsum("bnhr,bmr->bhnm", {qPe, kPe});
  const auto P = scaledMaskedSoftmax(logits, scale, spec_.causal);  // [B, H, N, M]
  if (options.with_maps) out.maps = P;
  const auto Pd = dropout_(P);
  if (!absorbed) {
    o = torch::einsum("bhnm,bmhd->bnhd", {Pd, v});
  } else {
    // The latent is also the one value head; W^UV turns each head's mixture of latents into its D.
    o = torch::einsum("bnhc,hdc->bnhd", {torch::einsum("bhnm,bmc->bnhc", {Pd, c}), w.narrow(1, D, D)});
  }
  out.y = project(wo_, o.reshape({B, N, H * D}));
  return out;
}

}  // namespace tensorscope::model_core
