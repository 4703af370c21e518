#include "attention/tpa.h"

#include <torch/csrc/autograd/custom_function.h>

#include <cmath>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "attention/fused_attention.h"
#include "attention/kernels.h"
#include "attention/rotary.h"
#include "attention/thsa_fused.h"
#include "kernels/tpa_factors.h"

namespace tensorscope::model_core {

namespace {
const char* const kNames[3] = {"q", "k", "v"};

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

template <typename T>
kernels::TpaFactorProblem<T> tpaProblem(const torch::Tensor& proj, const torch::Tensor& cos, const torch::Tensor& sin,
                                        int64_t H, int64_t D, const std::array<int64_t, 3>& ranks, bool rope) {
  kernels::TpaFactorProblem<T> p;
  p.tokens = proj.size(0) * proj.size(1);
  p.N = proj.size(1);
  p.H = H;
  p.D = D;
  for (int i = 0; i < 3; ++i) {
    p.ranks[i] = ranks[static_cast<size_t>(i)];
    p.turn[i] = rope && i < 2;
  }
  p.proj = proj.data_ptr<T>();
  p.cos = cos.data_ptr<T>();
  p.sin = sin.data_ptr<T>();
  return p;
}

/// The fused factor sums (kernels/tpa_factors.h) as an autograd function of the projections.
struct TpaFactorFunction : public torch::autograd::Function<TpaFactorFunction> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& projIn, int64_t H, int64_t D, int64_t rq,
                               int64_t rk, int64_t rv, bool rope, double base) {
    const auto proj = projIn.contiguous();
    const int64_t B = proj.size(0), N = proj.size(1), half = D / 2;
    // T6's angle tables (model/T6.py Rotary, L36-53), the backward turn of apply_rotary_emb
    // (L55-62): the ones applyRotary uses. Off: unused zeros.
    torch::Tensor cos, sin;
    if (rope) {
      std::tie(cos, sin) = rotaryTables(N, D, base, RotaryTurn::Backward, proj.scalar_type(), proj.device());
    } else {
      cos = sin = torch::zeros({N, std::max<int64_t>(half, 1)}, proj.options());
    }
    auto qkv = torch::empty({B, N, 3, H, D}, proj.options());
    const std::array<int64_t, 3> ranks = {rq, rk, rv};
    AT_DISPATCH_FLOATING_TYPES(proj.scalar_type(), "tpaFactorsForward", [&] {
      kernels::tpaFactorsForward<scalar_t>(tpaProblem<scalar_t>(proj, cos, sin, H, D, ranks, rope),
                                           qkv.data_ptr<scalar_t>(), atenParallel());
    });
    ctx->save_for_backward({proj, cos, sin});
    ctx->saved_data["H"] = H;
    ctx->saved_data["D"] = D;
    ctx->saved_data["rq"] = rq;
    ctx->saved_data["rk"] = rk;
    ctx->saved_data["rv"] = rv;
    ctx->saved_data["rope"] = rope;
    return qkv;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto &proj = saved[0], &cos = saved[1], &sin = saved[2];
    const std::array<int64_t, 3> ranks = {ctx->saved_data["rq"].toInt(), ctx->saved_data["rk"].toInt(),
                                          ctx->saved_data["rv"].toInt()};
    const int64_t H = ctx->saved_data["H"].toInt(), D = ctx->saved_data["D"].toInt();
    const auto g = grads[0].contiguous();
    auto dproj = torch::empty_like(proj);
    AT_DISPATCH_FLOATING_TYPES(proj.scalar_type(), "tpaFactorsBackward", [&] {
      kernels::tpaFactorsBackward<scalar_t>(tpaProblem<scalar_t>(proj, cos, sin, H, D, ranks,
                                                                 ctx->saved_data["rope"].toBool()),
                                            g.data_ptr<scalar_t>(), dproj.data_ptr<scalar_t>(), atenParallel());
    });
    return {dproj, torch::Tensor(), torch::Tensor(), torch::Tensor(), torch::Tensor(), torch::Tensor(),
            torch::Tensor(), torch::Tensor()};
  }
};

/// T6's rotary turn of x [B, N, …, D] (tensorgi/TPA model/T6.py lines 36-62, commit 3d7f51d):
/// half-split pairs (d, d + D/2) turned by −n·base^(−2d/D), i.e. applyRotary with RotaryTurn::Backward
/// (rotary.h); the angles in float64, cast to x's dtype, where T6 caches cos and sin in bfloat16.
torch::Tensor t6Rotary(const torch::Tensor& x, double base) {
  return applyRotary(x, x.size(-1), RotaryPairs::Half, base, RotaryTurn::Backward);
}

/// T6's initialisation (model/T6.py lines 86-105): xavier_uniform of the weight viewed [F, H, R]
/// (W_A) or [F, R, D] (W_B), i.e. uniform(±√(6 / (R·(H + F)))) and uniform(±√(6 / (R·(D + F)))).
void xavierAsT6(torch::nn::Linear& l, int64_t F, int64_t R, int64_t other) {
  torch::NoGradGuard guard;
  const double bound = std::sqrt(6.0 / double(R * (other + F)));
  l->weight.uniform_(-bound, bound);
}
}  // namespace

torch::Tensor tpaFactorQkv(const torch::Tensor& proj, int64_t H, int64_t D, const std::array<int64_t, 3>& ranks,
                           bool rope, double base) {
  if (proj.dim() != 3 || H < 1 || D < 1 || ranks[1] < 1 || ranks[2] < 1 || ranks[0] < 0)
    throw std::invalid_argument("tpaFactorQkv: proj must be [B, N, W], H, D, R_K, R_V at least 1 and R_Q at least 0");
  const int64_t r[3] = {ranks[0], ranks[1], ranks[2]};
  if (proj.size(2) != kernels::tpaProjectionWidth(H, D, r))
    throw std::invalid_argument("tpaFactorQkv: proj has " + std::to_string(proj.size(2)) + " features a token; the ranks need " +
                                std::to_string(kernels::tpaProjectionWidth(H, D, r)));
  if (rope && D % 2 != 0) throw std::invalid_argument("tpaFactorQkv: the rotary needs an even D");
  if (!proj.device().is_cpu() || (proj.scalar_type() != torch::kFloat && proj.scalar_type() != torch::kDouble))
    throw std::invalid_argument("tpaFactorQkv: CPU float32/float64 tensors only");
  return TpaFactorFunction::apply(proj, H, D, ranks[0], ranks[1], ranks[2], rope, base);
}

TpaImpl::TpaImpl(const spec::AttentionSpec& s) : AttentionModuleImpl(s) {
  const auto& t = s.slots.tpa;
  const int64_t F = s.sizes.F, H = s.sizes.H, D = s.sizes.D;
  ranks_[0] = t.q_rank;
  ranks_[1] = t.k_rank;
  ranks_[2] = t.v_rank;
  // In T6's order (W_A_q, W_A_k, W_A_v, W_B_q, W_B_k, W_B_v), or T6_kvonly's c_q first; no biases
  // (validation refuses bias for TPA).
  if (t.q_rank == 0) {
    wq_ = register_module("wq", makeProjection(F, H * D, false));
    // T6_kvonly initialises c_q with xavier_uniform (model/T6_kvonly.py line 101): ±√(6 / (F + H·D)).
    torch::NoGradGuard guard;
    const double bound = std::sqrt(6.0 / double(F + H * D));
    wq_->weight.uniform_(-bound, bound);
  }
  for (int i = 0; i < 3; ++i) {
    const int64_t R = ranks_[i];
    if (R == 0) continue;
    const std::string name = std::string("A_") + kNames[i];
    if (t.contextual_a) {
      wa_[i] = register_module("W_" + name, makeProjection(F, H * R, false));
      xavierAsT6(wa_[i], F, R, H);
    } else {
      // Non-contextual head factors: a learned [H, R] per projection, N(0, 1) at first (T6 has no
      // such parameter; paper §4 describes MHA, MQA and GQA as this form).
      a_[i] = register_parameter(name, torch::randn({H, R}));
    }
  }
  for (int i = 0; i < 3; ++i) {
    const int64_t R = ranks_[i];
    if (R == 0) continue;
    if (t.contextual_b) {
      wb_[i] = register_module(std::string("W_B_") + kNames[i], makeProjection(F, R * D, false));
      xavierAsT6(wb_[i], F, R, D);
    } else {
      // Non-contextual feature factors (paper Table 1, "TPA (Non-contextual B)"; no official code):
      // a learned [R, D] per projection, N(0, 1) at first as the constant head factors.
      b_[i] = register_parameter(std::string("B_") + kNames[i], torch::randn({R, D}));
    }
  }
  if (t.group_norm) {  // T6 using_groupnorm (model/T6.py L157–161): RMSNorm(head_dim, eps=1e-5), weight ones
    subln_ = register_module("subln", std::make_shared<torch::nn::Module>());
    sublnWeight_ = subln_->register_parameter("weight", torch::ones({D}));
  }
  wo_ = register_module("wo", makeProjection(H * D, F, false));
  dropout_ = register_module("dropout", torch::nn::Dropout(s.dropout));
}

torch::Tensor TpaImpl::factorised(const torch::Tensor& x, int i, bool rotary) {
  const int64_t B = x.size(0), N = x.size(1), H = spec_.sizes.H, D = spec_.sizes.D, R = ranks_[i];
  if (!wb_[i]) {
    // Constant feature factors b [R, D], turned by position (the rotary is linear: the heads' sums
    // turn as one). q[n,h,:] = (1/R)·A[n,h,:]·ρ_n(b): one GEMM without the rotary.
    const auto a = project(wa_[i], x).view({B, N, H, R});
    if (!rotary) return torch::matmul(a, b_[i]) / double(R);
    const auto turned = t6Rotary(b_[i].expand({1, N, R, D}), spec_.slots.tpa.rope_base);  // [1, N, R, D]
    return torch::matmul(a, turned) / double(R);
  }
  auto b = project(wb_[i], x).view({B, N, R, D});
  if (rotary) b = t6Rotary(b, spec_.slots.tpa.rope_base);
  // q[n,h,d] = (1/R)·Σ_r A[n,h,r]·B[n,r,d] (T6 CPLinear.forward, lines 107-138: bmm and div_ by rank).
  // This is the ATen path (CUDA, attention dropout, constant factors; the fused kernel's oracle).
  // Contextual factors with R·H·D ≥ 400: a broadcast product [B, N, H, R, D] summed over r. There
  // LibTorch 1.13's CPU bmm (ATen without MKL, LinearAlgebra.cpp bmm_out_or_baddbmm_) stops using
  // its small-matrix kernel and loops over the B·N tokens serially, one GEMM call each, in the
  // forward and in both products of the backward; the elementwise product and the sum are
  // vectorised and parallel (bench/README.md, TPA layer rows). Below 400 (R = 2 at H = 4, D = 32)
  // the bmm's small-matrix kernel is the faster one, and on CUDA the batched GEMM is. The bmm form
  // (T6's) is the test oracle
  // (AttentionSlots.TpaBroadcastFactorProductEqualsT6sBatchedProduct).
  if (wa_[i]) {
    const auto a = project(wa_[i], x).view({B, N, H, R});
    if (x.is_cpu() && R * H * D >= 400) return (a.unsqueeze(-1) * b.reshape({B, N, 1, R, D})).sum(3) / double(R);
    return torch::einsum("bnhr,bnrd->bnhd", {a, b}) / double(R);
  }
  return torch::einsum("hr,bnrd->bnhd", {a_[i], b}) / double(R);
}

AttentionOutput TpaImpl::forward(const torch::Tensor& x, const ForwardOptions& options) {
  checkInput(x);
  const auto& t = spec_.slots.tpa;
  const int64_t B = x.size(0), N = x.size(1), H = spec_.sizes.H, D = spec_.sizes.D;
  const bool fused = fusedAttentionSupports(x) && !(is_training() && spec_.dropout > 0);
  AttentionOutput out;
  if (fused && t.contextual_a && t.contextual_b) {
    // T6's factors on the CPU: one GEMM of x with every factor weight stacked (per part: W_A then
    // W_B, or wq), the factor sums and the rotary in one fused pass that writes q, k, v where the
    // fused attention kernel reads them, then that kernel. Neither keeps the factor products, the
    // turned factors or a [B, H, N, M] tensor for backward.
    std::vector<torch::Tensor> weights;
    for (int i = 0; i < 3; ++i) {
      if (ranks_[i] == 0) {
        weights.push_back(wq_->weight);
        continue;
      }
      weights.push_back(wa_[i]->weight);
      weights.push_back(wb_[i]->weight);
    }
    const auto proj = linearMap(x, torch::cat(weights), torch::Tensor());  // [B, N, W]
    const auto qkv = tpaFactorQkv(proj, H, D, {ranks_[0], ranks_[1], ranks_[2]}, t.rope, t.rope_base);
    const auto att = fusedAttention(qkv, 1.0 / std::sqrt(double(D)), spec_.causal);
    if (options.with_maps) out.maps = att.P;
    out.y = project(wo_, headNorm(att.o).reshape({B, N, H * D}));
    return out;
  }
  torch::Tensor q;
  if (wq_) {
    q = project(wq_, x).view({B, N, H, D});
    if (t.rope) q = t6Rotary(q, t.rope_base);  // T6_kvonly turns the full query heads (line 118)
  } else {
    q = factorised(x, 0, t.rope);
  }
  const auto k = factorised(x, 1, t.rope), v = factorised(x, 2, false);  // [B, N, H, D]
  if (fused) {
    // Once q, k and v are formed the rest is MHSA: the fused CPU kernel (fused_attention.h), which
    // keeps no [B, H, N, M] tensor for backward. Maps only when asked.
    const auto att = fusedAttention(torch::stack({q, k, v}, 2), 1.0 / std::sqrt(double(D)), spec_.causal);
    if (options.with_maps) out.maps = att.P;
    out.y = project(wo_, headNorm(att.o).reshape({B, N, H * D}));
    return out;
  }
  const auto logits = torch::einsum("bnhd,bmhd->bhnm", {q, k});
  const auto P = scaledMaskedSoftmax(logits, 1.0 / std::sqrt(double(D)), spec_.causal);  // [B, H, N, M]
  if (options.with_maps) out.maps = P;
  const auto o = torch::einsum("bhnm,bmhd->bnhd", {dropout_(P), v});
  out.y = project(wo_, headNorm(o).reshape({B, N, H * D}));
  return out;
}

torch::Tensor TpaImpl::headNorm(const torch::Tensor& o) const {
  // T6 (L179–181) normalises in float32 and casts back; Tensorscope's layers compute in their dtype.
  return sublnWeight_.defined() ? rmsNorm(o, sublnWeight_, 1e-5) : o;
}

}  // namespace tensorscope::model_core
