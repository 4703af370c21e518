#include "attention/mla.h"

#include <torch/csrc/autograd/custom_function.h>

#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "attention/fused_attention.h"
#include "attention/kernels.h"
#include "attention/rotary.h"
#include "attention/thsa_fused.h"
#include "kernels/mla_latent.h"

namespace tensorscope::model_core {

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

/// x [B, N, C] as token rows read in place (last axis contiguous, rows a constant stride apart), else a copy.
torch::Tensor tokenRows(const torch::Tensor& x) {
  const bool inPlace = x.stride(2) == 1 && (x.size(0) <= 1 || x.stride(0) == x.size(1) * x.stride(1));
  return inPlace ? x : x.contiguous();
}

/// Row `ld` of token rows (any stride when there is one token).
int64_t rowStride(const torch::Tensor& rows) {
  return rows.size(0) * rows.size(1) <= 1 ? rows.size(2) : rows.stride(1);
}

/// Head h's first `cols` features of the query part of token rows `src` (heads `width` apart): [T, H, cols].
torch::Tensor headColumns(const torch::Tensor& src, int64_t H, int64_t width, int64_t offset, int64_t cols) {
  return src.as_strided({src.size(0) * src.size(1), H, cols}, {rowStride(src), width, 1}, src.storage_offset() + offset);
}

template <typename T>
kernels::MlaLatentProblem<T> latentProblem(const torch::Tensor& src, const torch::Tensor& kvRows, int64_t kvOffset,
                                           const torch::Tensor& g, const torch::Tensor& cos, const torch::Tensor& sin,
                                           int64_t H, int64_t D, int64_t L, int64_t r, double eps) {
  kernels::MlaLatentProblem<T> p;
  p.tokens = src.size(0) * src.size(1);
  p.N = src.size(1);
  p.H = H, p.D = D, p.L = L, p.r = r;
  p.q = src.data_ptr<T>();
  p.ldq = rowStride(src);
  p.kv = kvRows.data_ptr<T>() + kvOffset;
  p.ldkv = rowStride(kvRows);
  p.norm = g.data_ptr<T>();
  p.eps = eps;
  p.cos = cos.data_ptr<T>();
  p.sin = sin.data_ptr<T>();
  return p;
}

/// mlaAbsorbedInputs' fused CPU function. Inputs: src (the query rows, or the query and KV rows
/// stacked), kvSrc (the KV rows, or an empty tensor when src holds them), wUK [H, D, L], g [L].
struct MlaAbsorbedFunction : public torch::autograd::Function<MlaAbsorbedFunction> {
  static variable_list forward(AutogradContext* ctx, const torch::Tensor& srcIn, const torch::Tensor& kvIn,
                               const torch::Tensor& wUK, const torch::Tensor& gIn, int64_t r, double eps, double theta) {
    const int64_t B = srcIn.size(0), N = srcIn.size(1), T = B * N;
    const int64_t H = wUK.size(0), D = wUK.size(1), L = wUK.size(2);
    const bool stacked = kvIn.numel() == 0;
    const auto src = tokenRows(srcIn);
    const auto kvRows = stacked ? src : tokenRows(kvIn);
    const int64_t kvOffset = stacked ? H * (D + r) : 0;
    const auto g = gIn.contiguous();
    auto query = torch::empty({B, N, H, L + r}, src.options());
    auto key = torch::empty({B, N, 1, L + r}, src.options());
    auto value = torch::empty({B, N, 1, L}, src.options());
    auto rstd = torch::empty({T}, src.options());
    // The per-head products q̃_h = q_nope_h·W^UK_h straight into the query's first L features.
    if (T > 0) headProductsWrite(headColumns(src, H, D + r, 0, D), wUK, false, query.view({T, H, L + r}).narrow(2, 0, L));
    auto [cos, sin] = rotaryTables(N, std::max<int64_t>(r, 2), theta, RotaryTurn::Forward, src.scalar_type(), src.device());
    AT_DISPATCH_FLOATING_TYPES(src.scalar_type(), "mlaLatentForward", [&] {
      kernels::mlaLatentForward<scalar_t>(latentProblem<scalar_t>(src, kvRows, kvOffset, g, cos, sin, H, D, L, r, eps),
                                          query.data_ptr<scalar_t>(), key.data_ptr<scalar_t>(),
                                          value.data_ptr<scalar_t>(), rstd.data_ptr<scalar_t>(), atenParallel());
    });
    ctx->save_for_backward({src, kvRows, wUK, g, rstd, cos, sin});
    ctx->saved_data["r"] = r;
    ctx->saved_data["eps"] = eps;
    ctx->saved_data["stacked"] = stacked;
    return {query, key, value};
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto &src = saved[0], &kvRows = saved[1], &wUK = saved[2], &g = saved[3], &rstd = saved[4],
               &cos = saved[5], &sin = saved[6];
    const int64_t r = ctx->saved_data["r"].toInt();
    const bool stacked = ctx->saved_data["stacked"].toBool();
    const int64_t B = src.size(0), N = src.size(1), T = B * N;
    const int64_t H = wUK.size(0), D = wUK.size(1), L = wUK.size(2);
    const auto dquery = grads[0].defined() ? grads[0].contiguous() : torch::Tensor();
    const auto dkey = grads[1].defined() ? grads[1].contiguous() : torch::Tensor();
    const auto dvalue = grads[2].defined() ? grads[2].contiguous() : torch::Tensor();
    const int64_t qWidth = H * (D + r);
    auto dsrc = torch::empty({B, N, src.size(2)}, src.options());
    if (src.size(2) != qWidth + (stacked ? L + r : 0)) dsrc.zero_();  // columns the layer does not read
    auto dkv = stacked ? torch::Tensor() : torch::empty({B, N, kvRows.size(2)}, src.options());
    if (!stacked && kvRows.size(2) != L + r) dkv.zero_();
    torch::Tensor dwUK;
    const auto dContent = headColumns(dsrc, H, D + r, 0, D);  // ∂q_nope, [T, H, D]
    if (dquery.defined() && T > 0) {
      const auto dqt = dquery.view({T, H, L + r}).narrow(2, 0, L);
      headProductsWrite(dqt, wUK, true, dContent);  // ∂q_nope_h = ∂q̃_h·W^UK_hᵀ
      dwUK = headWeightGradient(headColumns(src, H, D + r, 0, D), dqt, false).view(wUK.sizes());
    } else {
      dContent.zero_();
      dwUK = torch::zeros_like(wUK);
    }
    auto dg = torch::empty_like(g);
    AT_DISPATCH_FLOATING_TYPES(src.scalar_type(), "mlaLatentBackward", [&] {
      auto* dkvRows = stacked ? dsrc.data_ptr<scalar_t>() + qWidth : dkv.data_ptr<scalar_t>();
      kernels::mlaLatentBackward<scalar_t>(
          latentProblem<scalar_t>(src, kvRows, stacked ? qWidth : 0, g, cos, sin, H, D, L, r,
                                  ctx->saved_data["eps"].toDouble()),
          dquery.defined() ? dquery.data_ptr<scalar_t>() : nullptr, dkey.defined() ? dkey.data_ptr<scalar_t>() : nullptr,
          dvalue.defined() ? dvalue.data_ptr<scalar_t>() : nullptr, rstd.data_ptr<scalar_t>(),
          dsrc.data_ptr<scalar_t>(), src.size(2), dkvRows, stacked ? src.size(2) : dkv.size(2),
          dg.data_ptr<scalar_t>(), atenParallel());
    });
    const torch::Tensor none;
    return {dsrc, stacked ? none : dkv, dwUK, dg, none, none, none};
  }
};

void checkAbsorbedInputs(const torch::Tensor& q, const torch::Tensor& kv, const torch::Tensor& wUK,
                         const torch::Tensor& g, int64_t r) {
  if (wUK.dim() != 3 || g.dim() != 1 || g.size(0) != wUK.size(2) || r < 0 || r % 2 != 0)
    throw std::invalid_argument("mlaAbsorbedInputs: wUK must be [H, D, L], the norm weight [L] and the rotary size even");
  const int64_t H = wUK.size(0), D = wUK.size(1), L = wUK.size(2);
  const int64_t want = H * (D + r) + (kv.defined() ? 0 : L + r);
  if (q.dim() != 3 || q.size(2) != want)
    throw std::invalid_argument("mlaAbsorbedInputs: the query rows have " + std::to_string(q.dim() == 3 ? q.size(2) : -1) +
                                " features; H·(D + r)" + (kv.defined() ? "" : " + L + r") + " = " + std::to_string(want));
  if (kv.defined() && (kv.dim() != 3 || kv.size(0) != q.size(0) || kv.size(1) != q.size(1) || kv.size(2) != L + r))
    throw std::invalid_argument("mlaAbsorbedInputs: kv must be [B, N, L + r] with the query's B and N");
}

}  // namespace

torch::Tensor mlaRotary(const torch::Tensor& x, double theta) {
  // DeepSeek's apply_rotary_emb: view_as_complex over adjacent pairs, i.e. interleaved pairs.
  return x.size(-1) == 0 ? x : applyRotary(x, x.size(-1), RotaryPairs::Interleaved, theta);
}

MlaAbsorbedInputs mlaAbsorbedInputsAten(const torch::Tensor& q, const torch::Tensor& kv, const torch::Tensor& wUK,
                                        const torch::Tensor& normWeight, int64_t rope, double eps, double theta) {
  checkAbsorbedInputs(q, kv, wUK, normWeight, rope);
  const int64_t B = q.size(0), N = q.size(1), H = wUK.size(0), D = wUK.size(1), L = wUK.size(2), r = rope;
  const auto qs = kv.defined() ? q : q.narrow(-1, 0, H * (D + r));
  const auto kvs = kv.defined() ? kv : q.narrow(-1, H * (D + r), L + r);
  const auto qh = qs.reshape({B, N, H, D + r});
  const auto qt = torch::einsum("bnhd,hdc->bnhc", {qh.narrow(-1, 0, D), wUK});  // q̃ = W^UKᵀ q_nope
  const auto c = rmsNorm(kvs.narrow(-1, 0, L), normWeight, eps);
  MlaAbsorbedInputs in;
  if (r == 0) {
    in.query = qt;
    in.key = c.unsqueeze(2);
  } else {
    const auto turn = [&](const torch::Tensor& t) { return applyRotaryAten(t, r, RotaryPairs::Interleaved, theta); };
    in.query = torch::cat({qt, turn(qh.narrow(-1, D, r))}, -1);
    in.key = torch::cat({c, turn(kvs.narrow(-1, L, r))}, -1).unsqueeze(2);
  }
  in.value = c.unsqueeze(2);
  return in;
}

MlaAbsorbedInputs mlaAbsorbedInputs(const torch::Tensor& q, const torch::Tensor& kv, const torch::Tensor& wUK,
                                    const torch::Tensor& normWeight, int64_t rope, double eps, double theta) {
  checkAbsorbedInputs(q, kv, wUK, normWeight, rope);
  const int64_t limit = std::numeric_limits<int>::max();
  const bool fits = q.numel() < limit && (!kv.defined() || kv.numel() < limit) && wUK.numel() < limit;
  const auto same = [&](const torch::Tensor& t) {
    return !t.defined() || (t.scalar_type() == q.scalar_type() && t.device() == q.device());
  };
  if (!fits || !fusedRowsSupport(q) || !fusedAttentionSupports(q) || !same(kv) || !same(wUK) || !same(normWeight))
    return mlaAbsorbedInputsAten(q, kv, wUK, normWeight, rope, eps, theta);
  const auto out = MlaAbsorbedFunction::apply(q, kv.defined() ? kv : torch::empty({0}, q.options()), wUK, normWeight,
                                              rope, eps, theta);
  return {out[0], out[1], out[2]};
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
  const bool absorbed = l.order == spec::LatentOrder::Absorbed;
  const auto w = wkvB_->weight.view({H, 2 * D, L});  // per head: W^UK rows 0 … D−1, W^UV rows D … 2D−1
  const double scale = 1.0 / std::sqrt(double(D + r));
  AttentionOutput out;
  const bool fused = fusedAttentionSupports(x) && !(is_training() && spec_.dropout > 0);
  if (absorbed && fused) {
    // The absorbed order as grouped attention with one group (MQA on the latent): queries
    // [q̃, q_pe] (L + r a head), the one key head [c, k_pe] (L + r) and the one value head c (L);
    // W^UV then turns each head's mixture of latents into its D. mlaAbsorbedInputs makes the
    // queries, key and value from the projections in one fused pass (the W^UK products on the GEMM,
    // the RMSNorm, both turns), reading the stacked projection of wq and wkv_a in place and writing
    // its gradient whole in backward. The kernel keeps P for backward as MHSA does; no [B, H, N, M]
    // logits or their gradient. headProducts turns the heads' outputs back with W^UV: one GEMM a
    // head, the kernel's output read in place (LibTorch 1.13's einsum ran these as a bmm of small
    // products on both threads at a fifth of the GEMM rate; bench/README.md, issue 41, ninth part).
    MlaAbsorbedInputs in;
    if (wq_) {
      in = mlaAbsorbedInputs(projectJoined(x, {wq_, wkvA_}), torch::Tensor(), w.narrow(1, 0, D), kvNormWeight_, r,
                             spec::kMlaNormEps, spec::kMlaRopeTheta);
    } else {
      const auto proj = projectStacked(x, {wqA_, wkvA_});
      in = mlaAbsorbedInputs(project(wqB_, rmsNorm(proj[0], qNormWeight_, spec::kMlaNormEps)), proj[1],
                             w.narrow(1, 0, D), kvNormWeight_, r, spec::kMlaNormEps, spec::kMlaRopeTheta);
    }
    const auto att = fusedGroupedAttention(in.query, in.key, in.value, scale, spec_.causal);
    if (options.with_maps) out.maps = att.P;
    const auto o = headProducts(att.o.flatten(0, 1), w.narrow(1, D, D), /*transW=*/true, torch::Tensor());  // [B·N, H, D]
    out.y = project(wo_, o.view({B, N, H * D}));
    return out;
  }
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
  torch::Tensor o;  // [B, N, H, D]
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
