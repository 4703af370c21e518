#include "attention/mhsa.h"

#include <torch/nn/modules/dropout.h>

#include <cmath>

#include "attention/cuda_attention.h"
#include "attention/fused_attention.h"
#include "attention/kernels.h"

namespace tensorscope::model_core {

namespace {

/// [B, G, N, D] key or value heads repeated for the H query heads: query head h reads group
/// h / (H/G) (PyTorch SDPA's enable_gqa, repeat_interleave on the head axis). A view-free no-op
/// when G = H.
torch::Tensor expandGroups(const torch::Tensor& t, int64_t heads, int64_t axis) {
  const int64_t groups = t.size(axis);
  return groups == heads ? t : t.repeat_interleave(heads / groups, axis);
}

}  // namespace

MhsaImpl::MhsaImpl(const spec::AttentionSpec& s) : AttentionModuleImpl(s) {
  const auto& slot = s.slots;
  const int64_t F = s.sizes.F, H = s.sizes.H, D = s.sizes.D, HD = H * D;
  groups_ = slot.kv_groups > 0 ? slot.kv_groups : H;
  wq_ = register_module("wq", makeProjection(F, HD, s.bias));
  wk_ = register_module("wk", makeProjection(F, groups_ * D, s.bias));
  wv_ = register_module("wv", makeProjection(F, groups_ * D, s.bias));
  if (s.variant == spec::Variant::Tp) wr_ = register_module("wr", makeProjection(F, HD, s.bias));
  if (slot.gate != spec::Gate::None)
    wg_ = register_module("wg", makeProjection(F, slot.gate == spec::Gate::Headwise ? H : HD, s.bias));
  wo_ = register_module("wo", makeProjection(HD, F, s.bias));
  // The mixings start as the identity: a new talking-heads layer is MHSA until it learns to mix.
  if (slot.pre_mix) mixPre_ = register_parameter("mix_pre", torch::eye(H));
  if (slot.post_mix) mixPost_ = register_parameter("mix_post", torch::eye(H));
  dropout_ = register_module("dropout", torch::nn::Dropout(s.dropout));
}

torch::Tensor MhsaImpl::gate(const torch::Tensor& x, const torch::Tensor& o) const {
  if (!wg_) return o;
  const int64_t B = x.size(0), N = x.size(1), H = spec_.sizes.H;
  const auto g = torch::sigmoid(torch::linear(x, wg_->weight, wg_->bias));  // [B, N, H·D] or [B, N, H]
  return o * (spec_.slots.gate == spec::Gate::Headwise ? g.view({B, N, H, 1}) : g.view({B, N, H, -1}));
}

torch::Tensor MhsaImpl::attend(const torch::Tensor& x, const ForwardOptions& options, AttentionOutput& out) {
  const int64_t H = spec_.sizes.H;
  const double scale = 1.0 / std::sqrt(double(spec_.sizes.D));
  const auto q = splitHeads(wq_(x), H);                                  // [B, H, N, D]
  const auto k = expandGroups(splitHeads(wk_(x), groups_), H, 1);        // [B, H, M, D]
  const auto v = expandGroups(splitHeads(wv_(x), groups_), H, 1);        // [B, H, M, D]
  const bool plain = !mixPre_.defined() && !mixPost_.defined();
  if (plain && sdpaAttentionSupports(x) && !(is_training() && spec_.dropout > 0)) {
    // CUDA with LibTorch >= 2.1: the fused kernel (cuda_attention.h); maps only when asked.
    if (options.with_maps) {
      torch::NoGradGuard noGrad;
      out.maps = scaledMaskedSoftmax(torch::matmul(q, k.transpose(-2, -1)), scale, spec_.causal);
    }
    return sdpaAttention(q, k, v, scale, spec_.causal);
  }
  // The same math with ATen ops: CUDA without the fused kernel, other dtypes, attention dropout,
  // the talking-heads mixings. Mixing is linear, so the pre-softmax mixing of the logits q·kᵀ
  // commutes with the scale; the causal mask comes after it, so no future logit reaches the weights.
  auto logits = torch::matmul(q, k.transpose(-2, -1));                     // [B, H, N, M]
  if (mixPre_.defined()) logits = torch::einsum("lh,bhnm->blnm", {mixPre_, logits});
  auto P = scaledMaskedSoftmax(logits, scale, spec_.causal);              // [B, H, N, M]
  if (mixPost_.defined()) P = torch::einsum("wl,blnm->bwnm", {mixPost_, P});
  if (options.with_maps) out.maps = P;
  return torch::matmul(dropout_(P), v);
}

AttentionOutput MhsaImpl::forward(const torch::Tensor& x, const ForwardOptions& options) {
  checkInput(x);
  const int64_t B = x.size(0), N = x.size(1), H = spec_.sizes.H, D = spec_.sizes.D;
  const double scale = 1.0 / std::sqrt(double(D));
  const bool plain = !mixPre_.defined() && !mixPost_.defined();
  AttentionOutput out;
  torch::Tensor o;  // [B, N, H, D]
  if (plain && fusedAttentionSupports(x) && !(is_training() && spec_.dropout > 0)) {
    torch::Tensor stacked;
    if (groups_ == H) {
      stacked = projectQkv(x, wq_, wk_, wv_, H);  // [B, N, 3, H, D]
    } else {
      // Shared K and V: their G heads repeated for the H query heads (the gradient sums over each
      // group), then the same fused kernel.
      const auto k = expandGroups(wk_(x).view({B, N, groups_, D}), H, 2);
      const auto v = expandGroups(wv_(x).view({B, N, groups_, D}), H, 2);
      stacked = torch::stack({wq_(x).view({B, N, H, D}), k, v}, 2);
    }
    const auto att = fusedAttention(stacked, scale, spec_.causal);
    o = att.o;
    if (options.with_maps) out.maps = att.P;
  } else {
    o = attend(x, options, out).transpose(1, 2);  // [B, N, H, D]
  }
  if (wr_) {
    const auto r = wr_(x).view({B, N, H, D});  // role vectors
    o = o * r;                                 // binding: filler ⊙ role
    if (options.with_roles) out.roles = r.transpose(1, 2);
  }
  o = gate(x, o);
  out.y = wo_(o.reshape({B, N, H * D}));  // [B, N, F]
  return out;
}

}  // namespace tensorscope::model_core
