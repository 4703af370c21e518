#include "attention/thsa.h"

#include <cmath>

#include "attention/cuda_attention.h"
#include "attention/fused_attention.h"
#include "attention/kernels.h"
#include "attention/thsa_fused.h"

namespace tensorscope::model_core {
namespace {

/// Ω[b, n, r] = Σ_m P[b, r, n, m]·v[b, m, r] from per-channel maps P [B, R, N, M] and v [B, M, R].
torch::Tensor channelOutputs(const torch::Tensor& P, const torch::Tensor& v, torch::nn::Dropout& dropout) {
  return torch::matmul(dropout(P), v.transpose(1, 2).unsqueeze(-1)).squeeze(-1).transpose(1, 2);
}

struct DenseResult {
  torch::Tensor omega, P;  // [B, N, R], [B, R, N, M]
};

/// Dense THSA with ATen ops (the CUDA path, the oracle of the fused kernel and the display maps).
DenseResult denseThsaAten(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                          const torch::Tensor& C, double scale, bool causal, torch::nn::Dropout& dropout) {
  const int64_t B = q.size(0), N = q.size(1), R = q.size(2);
  const auto qt = C.unsqueeze(1) * q.unsqueeze(1);  // [B, R, N, R]: C[r,s]·q[n,s]
  // One batched product per sequence: [R·N, R]·[R, M]. (matmul with kᵀ broadcast over R would
  // materialise kᵀ expanded to [B, R, R, M] and reduce its gradient back.)
  const auto logits = torch::bmm(qt.reshape({B, R * N, R}), k.transpose(1, 2)).view({B, R, N, N});
  const auto P = scaledMaskedSoftmax(logits, scale, causal);
  return {channelOutputs(P, v, dropout), P};
}

/// Low-rank THSA with ATen ops, through the factors: ρ base maps G_j = (q ⊙ V_j)·kᵀ, logits U·G.
DenseResult lowRankThsaAten(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                            const torch::Tensor& U, const torch::Tensor& V, double scale, bool causal,
                            torch::nn::Dropout& dropout) {
  const int64_t B = q.size(0), N = q.size(1), R = q.size(2), rank = U.size(1);
  const auto qv = V.t().unsqueeze(1) * q.unsqueeze(1);                             // [B, ρ, N, R]
  const auto G = torch::matmul(qv, k.transpose(1, 2).unsqueeze(1));               // [B, ρ, N, M]
  const auto logits = torch::matmul(U, G.reshape({B, rank, N * N})).view({B, R, N, N});
  const auto P = scaledMaskedSoftmax(logits, scale, causal);
  return {channelOutputs(P, v, dropout), P};
}

}  // namespace

ThsaBaseImpl::ThsaBaseImpl(const spec::AttentionSpec& s) : AttentionModuleImpl(s) {
  const int64_t F = s.sizes.F, R = s.sizes.R;
  wq_ = register_module("wq", makeProjection(F, R, s.bias));
  wk_ = register_module("wk", makeProjection(F, R, s.bias));
  wv_ = register_module("wv", makeProjection(F, R, s.bias));
  wo_ = register_module("wo", makeProjection(R, F, s.bias));
  core_ = register_module("core", ThsaCore(*s.core, s.sizes.H, s.sizes.D, s.sizes.R));
}

std::vector<NamedWeight> ThsaBaseImpl::namedWeights() const {
  std::vector<NamedWeight> out;
  for (const auto& p : named_parameters(true))
    if (p.key().rfind("core.", 0) != 0) out.push_back({p.key(), p.value(), p.value()});
  for (auto& w : core_->namedWeights()) out.push_back(std::move(w));
  return out;
}

std::int64_t ThsaBaseImpl::trainableParameterCount() const {
  std::int64_t n = 0;
  for (const auto& p : named_parameters(true))
    if (p.key().rfind("core.", 0) != 0) n += p.value().numel();
  const auto& z = spec_.sizes;
  // A dense core's frozen entries sit in the parameter tensor but receive no gradient.
  if (core_->isDense()) {
    for (const auto& b : core_->named_buffers(false))
      if (b.key() == "mask") return n + (b.value() != 0).sum().item<int64_t>();
    return n + (core_->parameters(false).front().requires_grad() ? int64_t(z.R) * z.R : 0);
  }
  for (const auto& p : core_->parameters(false)) n += p.numel();
  return n;
}

ThsaImpl::ThsaImpl(const spec::AttentionSpec& s) : ThsaBaseImpl(s) {
  dropout_ = register_module("dropout", torch::nn::Dropout(s.dropout));
}

bool ThsaImpl::denseKernelServes() const {
  using spec::FactorKind;
  if (core_->isDense()) return true;
  if (core_->isLowRank()) return false;
  // D = 1: C = s·b·A is a dense H×H core (with A = I the head-map kernel takes it first).
  if (spec_.sizes.D == 1) return true;
  // A full D×D factor B has no cheaper structure to exploit than C itself (R² per logit row).
  return core_->kindB() == FactorKind::Fixed || core_->kindB() == FactorKind::Trainable;
}

torch::Tensor ThsaImpl::projectTurned(const torch::Tensor& x, int64_t heads) {
  return applyRotaryQk(projectQkv(x, wq_, wk_, wv_, heads), spec_.sizes.D, rotary_);
}

AttentionOutput ThsaImpl::forward(const torch::Tensor& x, const ForwardOptions& options) {
  using spec::FactorKind;
  checkInput(x);
  const int64_t B = x.size(0), N = x.size(1), R = spec_.sizes.R, H = spec_.sizes.H, D = spec_.sizes.D;
  const double invSqrtR = 1.0 / std::sqrt(double(R));
  AttentionOutput out;
  // CPU routing (the ATen formulation below serves CUDA, dropout in training, and tests):
  //   A = I, B = 1·1ᵀ, D > 1    MHSA exactly: the fused MHSA kernel (fused_attention.h)
  //   A = 1·1ᵀ, B = 1·1ᵀ        one map for every channel: MHSA with one head of size R
  //   B = 1·1ᵀ or c₂c₃ᵀ         H head maps mixed by A (thsa_heads.h); D = 1 only with A = I
  //   dense C, D = 1, full B     the dense kernel (thsa_dense.h)
  //   B = I, D > 1               D dense kernels of width H with core s·A (one per latent d)
  //   low rank U·Vᵀ              ρ base maps mixed by U (thsa_lowrank.h)
  const bool fusedOk = fusedAttentionSupports(x) && !(is_training() && spec_.dropout > 0);
  const bool kron = !core_->isDense() && !core_->isLowRank();
  if (sdpaAttentionSupports(x) && !(is_training() && spec_.dropout > 0)) {
    // CUDA with LibTorch >= 2.1: every core on the fused scaled-dot-product kernels, memory linear in
    // N (cuda_attention.h). MHSA-equal and single-map cores are plain multi-head attention; the rest
    // is head mixing as widened multi-query attention with the distinct rows of C as query heads.
    const auto qkv = projectTurned(x, H).view({B, N, 3, R});
    const auto q = qkv.select(2, 0), k = qkv.select(2, 1), v = qkv.select(2, 2);
    const bool sharedB = kron && D > 1 && core_->kindB() == FactorKind::Ones;  // a head's channels share a map
    if (sharedB && (core_->kindA() == FactorKind::Identity || core_->kindA() == FactorKind::Ones)) {
      const int64_t heads = core_->kindA() == FactorKind::Identity ? H : 1;
      const auto o = sdpaAttention(splitHeads(q, heads), splitHeads(k, heads), splitHeads(v, heads),
                                   core_->scale() * invSqrtR, spec_.causal);
      out.y = project(wo_, mergeHeads(o));
    } else {
      const auto C = core_->effective().to(qkv.scalar_type());
      const auto rows = sharedB ? C.view({H, D, R}).select(1, 0) : C;
      out.y = project(wo_, sdpaHeadMixing(q, k, v, rows, invSqrtR, spec_.causal));
    }
    if (options.with_maps) {
      torch::NoGradGuard noGrad;
      out.maps = denseThsaAten(q, k, v, core_->effective().to(qkv.scalar_type()), invSqrtR, spec_.causal, dropout_).P;
    }
    return out;
  }
  if (kron && D > 1 && core_->kindA() == FactorKind::Identity && core_->kindB() == FactorKind::Ones &&
      fusedOk) {
    // C = I_H ⊗ 1_D·1_Dᵀ (times its scale) is exactly MHSA: the fused kernel computes it.
    const auto att = fusedAttention(projectTurned(x, H), core_->scale() * invSqrtR, spec_.causal);
    out.y = project(wo_, att.o.view({B, N, R}));
    if (options.with_maps) out.maps = att.P.unsqueeze(2).expand({B, H, D, N, N}).reshape({B, R, N, N});
    return out;
  }
  if (kron && D > 1 && core_->kindA() == FactorKind::Ones && core_->kindB() == FactorKind::Ones &&
      fusedOk) {
    // C = s·1_R·1_Rᵀ (single_head): every channel shares one map, MHSA with one head of size R.
    const auto att = fusedAttention(projectTurned(x, 1), core_->scale() * invSqrtR, spec_.causal);
    out.y = project(wo_, att.o.view({B, N, R}));
    if (options.with_maps) out.maps = att.P.expand({B, R, N, N});
    return out;
  }
  if (kron && (core_->kindB() == FactorKind::Ones || core_->kindB() == FactorKind::Rank1) &&
      (D > 1 || core_->kindA() == FactorKind::Identity) && fusedOk) {
    // s·(A ⊗ 1·1ᵀ) and s·(A ⊗ c₂c₃ᵀ) (skip_right, skip_left, ...): H base maps, mixed by A.
    const auto qkv = projectTurned(x, H).view({B, N, 3, R});
    const bool rank1 = core_->kindB() == FactorKind::Rank1;
    const auto A = core_->kindA() == FactorKind::Identity ? torch::Tensor() : core_->a().to(qkv.scalar_type());
    out.y = project(wo_, headMapThsaAttention(qkv, H, A, rank1 ? core_->c2() : torch::Tensor(),
                                     rank1 ? core_->c3() : torch::Tensor(), core_->scale() * invSqrtR, spec_.causal));
    if (options.with_maps) {
      torch::NoGradGuard noGrad;
      out.maps = denseThsaAten(qkv.select(2, 0), qkv.select(2, 1), qkv.select(2, 2), core_->effective(), invSqrtR,
                               spec_.causal, dropout_).P;
    }
    return out;
  }
  if (core_->isLowRank() && fusedOk) {
    // C = U·Vᵀ through its factors: ρ base maps mixed by U (thsa_lowrank.h).
    const auto qkv = projectTurned(x, H).view({B, N, 3, R});
    out.y = project(wo_, lowRankThsaAttention(qkv, core_->u(), core_->v(), invSqrtR, spec_.causal));
    if (options.with_maps) {
      torch::NoGradGuard noGrad;
      out.maps = lowRankThsaAten(qkv.select(2, 0), qkv.select(2, 1), qkv.select(2, 2), core_->u(), core_->v(),
                                 invSqrtR, spec_.causal, dropout_).P;
    }
    return out;
  }
  if (kron && D > 1 && core_->kindB() == FactorKind::Identity && fusedOk) {
    // s·(A ⊗ I): channel (h, d) mixes only the d-th latent of every head, so the layer is D
    // independent dense THSA layers of width H with core s·A, one per d. The dense kernel runs them
    // as B·D sequences of [N, 3, H] (one copy of q, k, v), at cost 2·N·M·H² per (sequence, d).
    const auto qkv = projectTurned(x, H)                        // [B, N, 3, H, D]
                         .permute({0, 4, 1, 2, 3}).reshape({B * D, N, 3, H});  // [B·D, N, 3, H]
    const auto A = core_->a().to(qkv.scalar_type()) * core_->scale();
    const auto omega = denseThsaAttention(qkv, A, invSqrtR, spec_.causal)      // [B·D, N, H]
                           .view({B, D, N, H}).permute({0, 2, 3, 1}).reshape({B, N, R});
    out.y = project(wo_, omega);
    if (options.with_maps) {
      torch::NoGradGuard noGrad;
      const auto q = applyRotary(project(wq_, x), D, rotary_), k = applyRotary(project(wk_, x), D, rotary_), v = project(wv_, x);
      out.maps = denseThsaAten(q, k, v, core_->effective(), invSqrtR, spec_.causal, dropout_).P;
    }
    return out;
  }
  if (denseKernelServes() && fusedOk) {
    // Dense C, a D = 1 core (C = s·A) or a full D×D factor B: the fused dense kernel, which keeps
    // O(B·R·N) for backward. Maps only when asked, through the ATen formulation without gradient.
    const auto qkv = projectTurned(x, H).view({B, N, 3, R});
    const auto C = core_->effective().to(qkv.scalar_type());
    out.y = project(wo_, denseThsaAttention(qkv, C, invSqrtR, spec_.causal));
    if (options.with_maps) {
      torch::NoGradGuard noGrad;
      out.maps = denseThsaAten(qkv.select(2, 0), qkv.select(2, 1), qkv.select(2, 2), C, invSqrtR, spec_.causal,
                               dropout_).P;
    }
    return out;
  }
  const auto q = applyRotary(project(wq_, x), D, rotary_), k = applyRotary(project(wk_, x), D, rotary_), v = project(wv_, x);  // [B, N, R]
  torch::Tensor omega;  // [B, N, R]

  if (core_->isDense()) {
    const auto r = denseThsaAten(q, k, v, core_->effective(), invSqrtR, spec_.causal, dropout_);
    omega = r.omega;
    if (options.with_maps) out.maps = r.P;
  } else if (core_->isLowRank()) {
    const auto r = lowRankThsaAten(q, k, v, core_->u(), core_->v(), invSqrtR, spec_.causal, dropout_);
    omega = r.omega;
    if (options.with_maps) out.maps = r.P;
  } else {
    const auto qh = splitHeads(q, H), kh = splitHeads(k, H), vh = splitHeads(v, H);  // [B, H, N, D]
    const auto kT = kh.transpose(-2, -1);                                             // [B, H, D, M]
    const FactorKind kb = core_->kindB();
    torch::Tensor L;  // [B, H, N, M] (one map per head) or [B, H, D, N, M] (one per channel)
    switch (kb) {
      case FactorKind::Ones: L = torch::matmul(qh, kT); break;
      case FactorKind::Rank1: L = torch::matmul(qh * core_->c3(), kT); break;  // B = c₂c₃ᵀ: c₃ on q
      case FactorKind::Identity:  // B = I: q[n,h,d]·k[m,h,d] per channel
        L = qh.transpose(-2, -1).unsqueeze(-1) * kh.transpose(-2, -1).unsqueeze(-2);  // [B, H, D, N, M]
        break;
      case FactorKind::Fixed:
      case FactorKind::Trainable: {
        const auto qt = core_->b().view({1, 1, D, 1, D}) * qh.unsqueeze(2);  // [B, H, D, N, D']
        L = torch::matmul(qt, kT.unsqueeze(2));                             // [B, H, D, N, M]
        break;
      }
    }
    if (core_->kindA() != FactorKind::Identity) L = mixHeads(core_->a(), L);
    if (kb == FactorKind::Rank1) L = L.unsqueeze(2) * core_->c2().view({1, 1, D, 1, 1});  // [B, H, D, N, M]
    const auto P = scaledMaskedSoftmax(L, core_->scale() * invSqrtR, spec_.causal);
    const auto Pd = dropout_(P);
    if (P.dim() == 4) {  // shared by the D channels of each head: exactly MHSA's P·v
      omega = mergeHeads(torch::matmul(Pd, vh));
      if (options.with_maps) out.maps = P.unsqueeze(2).expand({B, H, D, N, N}).reshape({B, R, N, N});
    } else {
      const auto vc = vh.transpose(-2, -1).unsqueeze(-1);                // [B, H, D, M, 1]
      omega = torch::matmul(Pd, vc).squeeze(-1).permute({0, 3, 1, 2})   // [B, N, H, D]
                  .reshape({B, N, R});
      if (options.with_maps) out.maps = P.reshape({B, R, N, N});
    }
  }
  out.y = project(wo_, omega);
  return out;
}

ThsaLinearImpl::ThsaLinearImpl(const spec::AttentionSpec& s) : ThsaBaseImpl(s) {}

torch::Tensor ThsaLinearImpl::linearMaps(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& C,
                                         bool causal) {
  // sim_r(n, m) = φ(C_r ⊙ q_n)·φ(k_m), normalised over m: [B, R, N, M] (display only).
  const int64_t N = q.size(1);
  const auto phi = torch::elu(C * q.unsqueeze(2)) + 1.0;  // [B, N, R, S]
  const auto K = torch::elu(k) + 1.0;                      // [B, M, S]
  auto sim = torch::matmul(phi.transpose(1, 2), K.transpose(1, 2).unsqueeze(1));
  if (causal) sim = sim.masked_fill(futureMask(N, N, q.device()), 0.0);
  return sim / sim.sum(-1, true);
}

AttentionOutput ThsaLinearImpl::forward(const torch::Tensor& x, const ForwardOptions& options) {
  checkInput(x);
  const int64_t N = x.size(1);
  if (fusedAttentionSupports(x)) {
    // The fused kernel: O(N·R²) time, O(B·N·R) memory (thsa_fused.h). Maps below only when asked.
    const int64_t B = x.size(0), R = spec_.sizes.R;
    const auto qkv = projectQkv(x, wq_, wk_, wv_, 1).view({B, N, 3, R});
    AttentionOutput out;
    out.y = project(wo_, linearThsaAttention(qkv, core_->effective().to(qkv.scalar_type()), spec_.causal));
    if (options.with_maps) {
      torch::NoGradGuard noGrad;
      out.maps = linearMaps(qkv.select(2, 0), qkv.select(2, 1), core_->effective(), spec_.causal);
    }
    return out;
  }
  const auto q = project(wq_, x), k = project(wk_, x), v = project(wv_, x);  // [B, N, R]
  const auto C = core_->effective();               // [R, R]
  const auto phi = torch::elu(C * q.unsqueeze(2)) + 1.0;  // [B, N, R, S]: φ(C_r ⊙ q_n)
  const auto K = torch::elu(k) + 1.0;                      // [B, M, S]: φ(k_m)
  torch::Tensor num, den;                                  // [B, N, R]
  if (!spec_.causal) {
    const auto S = torch::matmul(K.transpose(1, 2), v);  // [B, S, R]
    const auto z = K.sum(1);                              // [B, S]
    num = (phi * S.transpose(1, 2).unsqueeze(1)).sum(-1);
    den = torch::matmul(phi, z.unsqueeze(1).unsqueeze(-1)).squeeze(-1);
  } else {
    const auto S = torch::cumsum(K.unsqueeze(-1) * v.unsqueeze(-2), 1);  // [B, N, S, R] prefix sums
    const auto z = torch::cumsum(K, 1);                                   // [B, N, S]
    num = (phi * S.transpose(-1, -2)).sum(-1);
    den = (phi * z.unsqueeze(2)).sum(-1);
  }
  AttentionOutput out;
  out.y = project(wo_, num / den);
  if (options.with_maps) out.maps = linearMaps(q, k, C, spec_.causal);
  return out;
}

}  // namespace tensorscope::model_core
