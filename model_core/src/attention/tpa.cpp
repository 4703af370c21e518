#include "attention/tpa.h"

#include <cmath>

#include "attention/fused_attention.h"
#include "attention/kernels.h"
#include "attention/rotary.h"

namespace tensorscope::model_core {

namespace {
const char* const kNames[3] = {"q", "k", "v"};

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
    wb_[i] = register_module(std::string("W_B_") + kNames[i], makeProjection(F, R * D, false));
    xavierAsT6(wb_[i], F, R, D);
  }
  wo_ = register_module("wo", makeProjection(H * D, F, false));
  dropout_ = register_module("dropout", torch::nn::Dropout(s.dropout));
}

torch::Tensor TpaImpl::factorised(const torch::Tensor& x, int i, bool rotary) {
  const int64_t B = x.size(0), N = x.size(1), H = spec_.sizes.H, D = spec_.sizes.D, R = ranks_[i];
  auto b = wb_[i](x).view({B, N, R, D});
  if (rotary) b = t6Rotary(b, spec_.slots.tpa.rope_base);
  // q[n,h,d] = (1/R)·Σ_r A[n,h,r]·B[n,r,d] (T6 CPLinear.forward, lines 107-138: bmm and div_ by rank).
  // Contextual factors with R·H·D ≥ 400: a broadcast product [B, N, H, R, D] summed over r. There
  // LibTorch 1.13's CPU bmm (ATen without MKL, LinearAlgebra.cpp bmm_out_or_baddbmm_) stops using
  // its small-matrix kernel and loops over the B·N tokens serially, one GEMM call each, in the
  // forward and in both products of the backward; the elementwise product and the sum are
  // vectorised and parallel (bench/README.md, TPA layer rows). Below 400 (R = 2 at H = 4, D = 32)
  // the bmm's small-matrix kernel is the faster one, and on CUDA the batched GEMM is. The bmm form
  // (T6's) is the test oracle
  // (AttentionSlots.TpaBroadcastFactorProductEqualsT6sBatchedProduct).
  if (wa_[i]) {
    const auto a = wa_[i](x).view({B, N, H, R});
    if (x.is_cpu() && R * H * D >= 400) return (a.unsqueeze(-1) * b.reshape({B, N, 1, R, D})).sum(3) / double(R);
    return torch::einsum("bnhr,bnrd->bnhd", {a, b}) / double(R);
  }
  return torch::einsum("hr,bnrd->bnhd", {a_[i], b}) / double(R);
}

AttentionOutput TpaImpl::forward(const torch::Tensor& x, const ForwardOptions& options) {
  checkInput(x);
  const auto& t = spec_.slots.tpa;
  const int64_t B = x.size(0), N = x.size(1), H = spec_.sizes.H, D = spec_.sizes.D;
  torch::Tensor q;
  if (wq_) {
    q = wq_(x).view({B, N, H, D});
    if (t.rope) q = t6Rotary(q, t.rope_base);  // T6_kvonly turns the full query heads (line 118)
  } else {
    q = factorised(x, 0, t.rope);
  }
  const auto k = factorised(x, 1, t.rope), v = factorised(x, 2, false);  // [B, N, H, D]
  AttentionOutput out;
  if (fusedAttentionSupports(x) && !(is_training() && spec_.dropout > 0)) {
    // Once q, k and v are formed the rest is MHSA: the fused CPU kernel (fused_attention.h), which
    // keeps no [B, H, N, M] tensor for backward. Maps only when asked.
    const auto att = fusedAttention(torch::stack({q, k, v}, 2), 1.0 / std::sqrt(double(D)), spec_.causal);
    if (options.with_maps) out.maps = att.P;
    out.y = wo_(att.o.view({B, N, H * D}));
    return out;
  }
  const auto logits = torch::einsum("bnhd,bmhd->bhnm", {q, k});
  const auto P = scaledMaskedSoftmax(logits, 1.0 / std::sqrt(double(D)), spec_.causal);  // [B, H, N, M]
  if (options.with_maps) out.maps = P;
  const auto o = torch::einsum("bhnm,bmhd->bnhd", {dropout_(P), v});
  out.y = wo_(o.reshape({B, N, H * D}));
  return out;
}

}  // namespace tensorscope::model_core
