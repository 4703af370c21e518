#include "attention/mhsa.h"

#include <torch/nn/modules/dropout.h>

#include <algorithm>
#include <cmath>

#include "attention/cuda_attention.h"
#include "attention/fused_attention.h"
#include "attention/fused_talking_heads.h"
#include "attention/kernels.h"
#include "attention/talking_heads.h"

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

MhsaImpl::MhsaImpl(const spec::AttentionSpec& s, int layer) : AttentionModuleImpl(s) {
  const auto& slot = s.slots;
  const int64_t F = s.sizes.F, H = s.sizes.H, D = s.sizes.D;
  // Differential attention: two query/key maps per head and a value head of size 2D.
  const int64_t maps = slot.differential ? 2 : 1, HD = maps * H * D;
  groups_ = slot.kv_groups > 0 ? slot.kv_groups : H;
  const auto& collab = slot.collaborative;
  if (collab.enabled()) {
    // The official query and key projections have no bias (the content bias stands for the only
    // query-bias term that survives the softmax); the value and output projections have one when
    // the spec asks.
    const int64_t Dk = collab.key_dim;
    wq_ = register_module("wq", makeProjection(F, Dk, false));
    wk_ = register_module("wk", makeProjection(F, Dk, false));
    if (collab.content_bias) contentBias_ = register_module("content_bias", makeProjection(F, H, false));
    torch::Tensor m = torch::zeros({H, Dk});
    if (collab.init == spec::MixingInit::Normal) {
      m.normal_(0.0, 0.2);  // MixingMatrixInit.UNIFORM, init_mixing_matrix(scale=0.2)
    } else {
      const int64_t block = (Dk + H - 1) / H;  // the last head's block is shorter when H does not divide D̃
      for (int64_t h = 0; h < H; ++h) {
        const int64_t lo = std::min(Dk, h * block), hi = std::min(Dk, (h + 1) * block);
        if (hi > lo) m[h].slice(0, lo, hi).fill_(1.0);
      }
    }
    mixing_ = register_parameter("mixing", m);
  } else {
    wq_ = register_module("wq", makeProjection(F, HD, s.bias));
    wk_ = register_module("wk", makeProjection(F, maps * groups_ * D, s.bias));
  }
  wv_ = register_module("wv", makeProjection(F, maps * groups_ * D, s.bias));
  if (s.variant == spec::Variant::Tp) wr_ = register_module("wr", makeProjection(F, HD, s.bias));
  if (slot.gate != spec::Gate::None)
    wg_ = register_module("wg", makeProjection(F, slot.gate == spec::Gate::Headwise ? H : HD, s.bias));
  wo_ = register_module("wo", makeProjection(HD, F, s.bias));
  // The mixings start as drawn (spec/slot_values.h), by default the identity: a new talking-heads
  // layer is MHSA until it learns to mix.
  if (slot.pre_mix) mixPre_ = registerHeadMixing(*this, "mix_pre", slot.pre_mixing, H);
  if (slot.post_mix) mixPost_ = registerHeadMixing(*this, "mix_post", slot.post_mixing, H);
  if (slot.differential) {
    // As the official module initialises them: λ's vectors N(0, 0.1²), the norm's weight ones.
    lambdaInit_ = spec::diffLambdaInit(layer);
    lambdaQ1_ = register_parameter("lambda_q1", torch::randn({D}) * 0.1);
    lambdaK1_ = register_parameter("lambda_k1", torch::randn({D}) * 0.1);
    lambdaQ2_ = register_parameter("lambda_q2", torch::randn({D}) * 0.1);
    lambdaK2_ = register_parameter("lambda_k2", torch::randn({D}) * 0.1);
    subln_ = register_module("subln", std::make_shared<torch::nn::Module>());
    sublnWeight_ = subln_->register_parameter("weight", torch::ones({2 * D}));
  }
  dropout_ = register_module("dropout", torch::nn::Dropout(s.dropout));
}

torch::Tensor MhsaImpl::differential(const torch::Tensor& x, const ForwardOptions& options, AttentionOutput& out) {
  const int64_t B = x.size(0), N = x.size(1), H = spec_.sizes.H, D = spec_.sizes.D, G = groups_;
  const double scale = 1.0 / std::sqrt(double(D));
  // Shared K and V as the official repeat_kv: query map j = 2h + i reads key map j / (H/G) of the
  // 2G key maps, head h reads value head h / (H/G) of G (with H/G even both maps of a head read
  // one key map).
  // Rotary positions turn every query and key map (blocks of D) before the maps are formed.
  const auto qkv = projectStacked(x, {wq_, wk_, wv_});
  const auto queries = applyRotary(qkv[0], D, rotary_);                         // [B, N, 2H·D]
  const auto keyMaps = applyRotary(qkv[1], D, rotary_).view({B, N, 2 * G, D});  // [B, N, 2G, D]
  const auto valueHeads = qkv[2].view({B, N, G, 2 * D});                        // [B, N, G, 2D]
  const auto lambda = torch::exp(torch::dot(lambdaQ1_, lambdaK1_)) - torch::exp(torch::dot(lambdaQ2_, lambdaK2_)) +
                      lambdaInit_;
  torch::Tensor o;  // [B, N, H, 2D]
  const bool dropping = is_training() && spec_.dropout > 0;
  const auto q4 = queries.view({B, N, 2 * H, D}).transpose(1, 2);  // [B, 2H, N, D]
  if (G == H && !options.with_maps && !dropping && queries.requires_grad() &&
      fusedTalkingHeadsSupports(q4, keyMaps.transpose(1, 2), valueHeads.transpose(1, 2))) {
    // Training with a key and value head per head: the pair of maps of head h is differenced
    // before it meets the values, A_h = P_2h − λ·P_2h+1, as a post-softmax head mixing
    // C′ [H, 2H] (row h: 1 at 2h, −λ at 2h + 1) on the fused talking-heads core. The values are
    // read once per head (not once per map, which is twice the P·V arithmetic), and the core keeps
    // the 2H softmax maps for backward, as the grouped kernel below does; λ's gradient comes
    // through C′'s.
    const auto pairs = torch::eye(2 * H, queries.options()).view({H, 2, 2 * H});  // [h, i]: e_(2h+i)
    const auto mix = pairs.select(1, 0) - lambda * pairs.select(1, 1);               // [H, 2H]
    o = talkingHeadsRecomputed(q4, keyMaps.transpose(1, 2), valueHeads.transpose(1, 2), torch::Tensor(), mix, scale,
                               spec_.causal)
            .transpose(1, 2);  // [B, N, H, 2D]
  } else if (fusedAttentionSupports(x) && !dropping) {
    // The 2H query maps are heads of size D on the grouped kernel, with the 2G key maps as their
    // groups (map j reads key map j / (H/G)) and value heads of size 2D: map j = 2h + i needs value
    // head h / (H/G) = (j / (H/G)) / 2, so each value head is listed twice, once per key map of its
    // pair. Then o_h = o_{h,0} − λ·o_{h,1}: A is never formed, and the kernel keeps one [N, M] map
    // per map for backward, as MHSA with 2H heads does.
    const auto v = valueHeads.unsqueeze(3).expand({B, N, G, 2, 2 * D}).reshape({B, N, 2 * G, 2 * D});
    const auto att = fusedGroupedAttention(queries.view({B, N, 2 * H, D}), keyMaps, v, scale, spec_.causal);
    // unbind, not two selects: its backward stacks both gradients into one tensor.
    const auto pair = att.o.view({B, N, H, 2, 2 * D}).unbind(3);
    o = pair[0] - lambda * pair[1];
    if (options.with_maps) {
      torch::NoGradGuard noGrad;
      out.map_parts = att.P.view({B, H, 2, N, N});
      out.maps = out.map_parts.select(2, 0) - lambda * out.map_parts.select(2, 1);
    }
  } else {
    const auto q = queries.view({B, N, 2 * H, D}).transpose(1, 2);  // map (h, i) is head 2h + i
    const auto k = expandGroups(keyMaps, 2 * H, 2).transpose(1, 2);  // [B, 2H, M, D]
    const auto v = expandGroups(valueHeads, H, 2).transpose(1, 2);   // [B, H, M, 2D]
    const auto P = scaledMaskedSoftmax(torch::matmul(q, k.transpose(-2, -1)), scale, spec_.causal)
                       .view({B, H, 2, N, N});
    const auto A = P.select(2, 0) - lambda * P.select(2, 1);  // [B, H, N, M]
    if (options.with_maps) {
      out.maps = A;
      out.map_parts = P;
    }
    o = torch::matmul(dropout_(A), v).transpose(1, 2);
  }
  // The head norm: RMSNorm over each head's 2D features (eps 1e-5), then the (1 − λ_init) scale.
  return rmsNorm(o, sublnWeight_ * (1.0 - lambdaInit_), 1e-5);
}

torch::Tensor MhsaImpl::collaborative(const torch::Tensor& x, const ForwardOptions& options, AttentionOutput& out) {
  const int64_t B = x.size(0), N = x.size(1), H = spec_.sizes.H, D = spec_.sizes.D;
  const int64_t Dk = spec_.slots.collaborative.key_dim;
  // attention_head_size = D̃/H in the official code, which need not be an integer.
  const double scale = 1.0 / std::sqrt(double(Dk) / double(H));
  // The query, key, value and content-bias projections from one GEMM.
  const auto proj =
      contentBias_ ? projectStacked(x, {wq_, wk_, wv_, contentBias_}) : projectStacked(x, {wq_, wk_, wv_});
  const auto& qs = proj[0];      // [B, N, D̃] shared queries
  const auto& ks = proj[1];      // [B, M, D̃] shared keys
  const auto& values = proj[2];  // [B, M, H·D]
  if (fusedAttentionSupports(x) && !(is_training() && spec_.dropout > 0)) {
    // The rewrite onto the fused kernel (../shared/design/modern-designs.md §2, as THSA's
    // head-sharing cores): head h's query [q̃ ⊙ m_h, e_h] against the one key [k̃, x·W^Cᵀ] is
    // (q̃ ⊙ m_h)·k̃ + c[m, h], scaled as a whole as the official code scales it. The kernel groups
    // keys and values alike, so the shared key is an expanded view with one head per value head
    // (read in place, stride 0 over the heads; its gradient sums over them).
    auto qh = qs.unsqueeze(2) * mixing_.view({1, 1, H, Dk});  // [B, N, H, D̃]
    auto kh = ks.unsqueeze(2);                                 // [B, M, 1, D̃]
    if (contentBias_) {
      qh = torch::cat({qh, torch::eye(H, qs.options()).view({1, 1, H, H}).expand({B, N, H, H})}, -1);
      kh = torch::cat({kh, proj[3].unsqueeze(2)}, -1);  // [B, M, 1, D̃ + H]
    }
    const auto att = fusedGroupedAttention(qh, kh.expand({B, N, H, kh.size(-1)}), values.view({B, N, H, D}), scale,
                                           spec_.causal);
    if (options.with_maps) out.maps = att.P;
    return att.o;  // [B, N, H, D]
  }
  const auto q = qs.unsqueeze(1) * mixing_.view({1, H, 1, Dk});  // [B, H, N, D̃]: q̃ ⊙ m_h
  auto logits = torch::matmul(q, ks.unsqueeze(1).transpose(-2, -1));  // [B, H, N, M]
  if (contentBias_) logits = logits + proj[3].transpose(1, 2).unsqueeze(2);  // [B, H, 1, M]
  const auto P = scaledMaskedSoftmax(logits, scale, spec_.causal);
  if (options.with_maps) out.maps = P;
  const auto v = values.view({B, N, H, D}).transpose(1, 2);  // [B, H, M, D]
  return torch::matmul(dropout_(P), v).transpose(1, 2);       // [B, N, H, D]
}

torch::Tensor MhsaImpl::gate(const torch::Tensor& x, const torch::Tensor& o) const {
  if (!wg_) return o;
  const int64_t B = x.size(0), N = x.size(1), H = spec_.sizes.H;
  const auto g = torch::sigmoid(project(wg_, x));  // [B, N, H·D] or [B, N, H]
  return o * (spec_.slots.gate == spec::Gate::Headwise ? g.view({B, N, H, 1}) : g.view({B, N, H, -1}));
}

torch::Tensor MhsaImpl::attend(const torch::Tensor& x, const ForwardOptions& options, AttentionOutput& out) {
  const int64_t H = spec_.sizes.H;
  const double scale = 1.0 / std::sqrt(double(spec_.sizes.D));
  const int64_t D = spec_.sizes.D;
  const auto qkv = projectStacked(x, {wq_, wk_, wv_});
  const auto q = splitHeads(applyRotary(qkv[0], D, rotary_), H);                            // [B, H, N, D]
  const auto k = expandGroups(splitHeads(applyRotary(qkv[1], D, rotary_), groups_), H, 1);  // [B, H, M, D]
  const auto v = expandGroups(splitHeads(qkv[2], groups_), H, 1);                           // [B, H, M, D]
  const bool plain = !mixPre_.defined() && !mixPost_.defined();
  const auto mixPre = mixPre_.defined() ? mixPre_.effective() : torch::Tensor();
  const auto mixPost = mixPost_.defined() ? mixPost_.effective() : torch::Tensor();
  if (plain && sdpaAttentionSupports(x) && !(is_training() && spec_.dropout > 0)) {
    // CUDA with LibTorch >= 2.1: the fused kernel (cuda_attention.h); maps only when asked.
    if (options.with_maps) {
      torch::NoGradGuard noGrad;
      out.maps = scaledMaskedSoftmax(torch::matmul(q, k.transpose(-2, -1)), scale, spec_.causal);
    }
    return sdpaAttention(q, k, v, scale, spec_.causal);
  }
  // Talking heads while training (no maps asked, no attention dropout): the core recomputed in
  // backward, so no mixed logits or weights wait between forward and backward (talking_heads.h).
  const bool dropping = is_training() && spec_.dropout > 0;
  if (!plain && !options.with_maps && !dropping && q.requires_grad())
    return talkingHeadsRecomputed(q, k, v, mixPre, mixPost, scale, spec_.causal);
  // The same math with ATen ops: CUDA without the fused kernel, other dtypes, attention dropout,
  // the talking-heads mixings when maps are asked.
  const auto P = talkingHeadsWeights(q, k, mixPre, mixPost, scale, spec_.causal);  // [B, H, N, M]
  if (options.with_maps) out.maps = P;
  return batchedProduct(dropout_(P), v, false);
}

AttentionOutput MhsaImpl::forward(const torch::Tensor& x, const ForwardOptions& options) {
  checkInput(x);
  const int64_t B = x.size(0), N = x.size(1), H = spec_.sizes.H, D = spec_.sizes.D;
  const double scale = 1.0 / std::sqrt(double(D));
  const bool plain = !mixPre_.defined() && !mixPost_.defined();
  AttentionOutput out;
  torch::Tensor o;  // [B, N, H, D]
  if (spec_.slots.differential) {
    o = differential(x, options, out);
  } else if (mixing_.defined()) {
    o = collaborative(x, options, out);
  } else if (plain && fusedAttentionSupports(x) && !(is_training() && spec_.dropout > 0)) {
    // All heads: q, k, v from the one fused projection. Shared K and V (MQA/GQA): the grouped form,
    // which reads each of the G key/value heads for its H/G query heads without copying them, with
    // q, k and v from one GEMM too.
    FusedAttentionOutput att;
    if (groups_ == H) {
      att = fusedAttention(applyRotaryQk(projectQkv(x, wq_, wk_, wv_, H), D, rotary_), scale, spec_.causal);
    } else {
      const auto qkv = projectStacked(x, {wq_, wk_, wv_});
      att = fusedGroupedAttention(applyRotary(qkv[0], D, rotary_).view({B, N, H, D}),
                                  applyRotary(qkv[1], D, rotary_).view({B, N, groups_, D}),
                                  qkv[2].view({B, N, groups_, D}), scale, spec_.causal);
    }
    o = att.o;
    if (options.with_maps) out.maps = att.P;
  } else {
    o = attend(x, options, out).transpose(1, 2);  // [B, N, H, D]
  }
  if (wr_) {
    const auto r = project(wr_, x).view({B, N, H, D});  // role vectors
    o = o * r;                                 // binding: filler ⊙ role
    if (options.with_roles) out.roles = r.transpose(1, 2);
  }
  o = gate(x, o);
  out.y = project(wo_, o.reshape({B, N, -1}));  // [B, N, F]
  return out;
}

}  // namespace tensorscope::model_core
