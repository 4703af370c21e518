#include "attention/mta.h"

#include <cmath>
#include <limits>

#include "attention/fused_attention.h"
#include "attention/kernels.h"
#include "attention/mta_convolution.h"
#include "spec/slot_values.h"

namespace tensorscope::model_core {

namespace {

/// Keys padded on the left of the key axis: the kernel's key index j reads key m + j − left.
int64_t leftKeyPad(int64_t ck, spec::MtaPad pad) {
  switch (pad) {
    case spec::MtaPad::Both: return (ck - 1) / 2;
    case spec::MtaPad::Left: return ck - 1;
    case spec::MtaPad::Right: return 0;
  }
  return 0;
}

/// [B, G, N, D] heads repeated for the H query heads (query head h reads group h / (H/G)).
torch::Tensor expandGroups(const torch::Tensor& t, int64_t heads) {
  const int64_t groups = t.size(1);
  return groups == heads ? t : t.repeat_interleave(heads / groups, 1);
}

}  // namespace

torch::Tensor mtaIdentityKernel(int64_t heads, int64_t cq, int64_t ck, spec::MtaPad pad) {
  // mta_transformer.py L589–601 (pad both): kernel[:, :, -1, key_sz // 2] = 1. For the other pads
  // the 1 sits where the kernel reads key offset 0, so every pad starts as the identity.
  auto k = torch::zeros({heads, cq, ck});
  k.select(1, cq - 1).select(1, leftKeyPad(ck, pad)).fill_(1.0);
  return k;
}

torch::Tensor mtaConvolution(const torch::Tensor& maps, const torch::Tensor& kernel, spec::MtaPad pad, bool causal,
                             bool zeroFuture) {
  const int64_t left = leftKeyPad(kernel.size(2), pad);
  return fusedRowsSupport(maps) && kernel.scalar_type() == maps.scalar_type()
             ? fusedMtaConvolution(maps, kernel, left, causal, zeroFuture)
             : mtaConvolutionAten(maps, kernel, left, causal, zeroFuture);
}

MtaImpl::MtaImpl(const spec::AttentionSpec& s, int layer) : AttentionModuleImpl(s) {
  const auto& slot = s.slots;
  const auto& m = slot.mta;
  const int64_t F = s.sizes.F, H = s.sizes.H, D = s.sizes.D;
  groups_ = slot.kv_groups > 0 ? slot.kv_groups : H;
  // mta_transformer.py L176–197: wq, wk, wv, wo (n_kv_heads key/value heads).
  wq_ = register_module("wq", makeProjection(F, H * D, s.bias));
  wk_ = register_module("wk", makeProjection(F, groups_ * D, s.bias));
  wv_ = register_module("wv", makeProjection(F, groups_ * D, s.bias));
  wo_ = register_module("wo", makeProjection(H * D, F, s.bias));
  // Every kernel and mixing starts as the identity (init_method "identity", L589–689), unless the
  // spec holds drawn values (spec/slot_values.h: mtaKernelValues is that identity when none).
  const auto kernelStart = [&](bool post, int64_t cq, int64_t ck) {
    return torch::tensor(spec::mtaKernelValues(m, static_cast<int>(H), post), torch::kDouble)
        .reshape({H, cq, ck})
        .to(torch::kFloat);
  };
  if (m.q_kernel > 0)  // L209–216: mta_kernel [H, 1, c_q, c_k]; here [H, c_q, c_k]
    kernel_ = register_parameter("mta_kernel", kernelStart(false, m.q_kernel, m.k_kernel));
  if (slot.pre_mix) mixPre_ = registerHeadMixing(*this, "mix_pre", slot.pre_mixing, H);  // wpsm (L219–224, L659–666)
  if (m.post_q_kernel > 0)  // L226–238: mta_kernel_after_sm
    kernelAfter_ = register_parameter("mta_kernel_after_sm", kernelStart(true, m.post_q_kernel, m.post_k_kernel));
  if (m.head_group > 0)  // L247–254: head_kernel [H/g, g, g], identity per group (L677–689)
    headKernel_ = register_parameter("head_kernel", torch::eye(m.head_group).repeat({H / m.head_group, 1, 1}));
  if (slot.post_mix) mixPost_ = registerHeadMixing(*this, "mix_post", slot.post_mixing, H);  // wposm (L255–260)
  if (m.group_norm) {  // L272–279: RMSNorm(head_dim, eps 1e-5), weight ones
    subln_ = register_module("subln", std::make_shared<torch::nn::Module>());
    sublnWeight_ = subln_->register_parameter("weight", torch::ones({D}));
    if (m.norm_rescale) normScale_ = 1.0 - spec::diffLambdaInit(layer);  // RMSNorm.forward L74–79
  }
  if (m.out_gate != spec::Gate::None)  // L280–284: Linear(head_dim, 1) (gate_1d) or (head_dim, head_dim)
    gate_ = register_module("gate", makeProjection(D, m.out_gate == spec::Gate::Headwise ? 1 : D, true));
  dropout_ = register_module("dropout", torch::nn::Dropout(s.dropout));
}

AttentionOutput MtaImpl::forward(const torch::Tensor& x, const ForwardOptions& options) {
  checkInput(x);
  const auto& m = spec_.slots.mta;
  const int64_t B = x.size(0), N = x.size(1), H = spec_.sizes.H, D = spec_.sizes.D;
  const auto qkv = projectStacked(x, {wq_, wk_, wv_});
  const auto q = splitHeads(applyRotary(qkv[0], D, rotary_), H);                        // [B, H, N, D]
  const auto k = expandGroups(splitHeads(applyRotary(qkv[1], D, rotary_), groups_), H);  // [B, H, M, D]
  const auto v = expandGroups(splitHeads(qkv[2], groups_), H);                          // [B, H, M, D]
  // L343–345: the logits scaled by 1/√D before anything else.
  auto S = batchedProduct(q, k, /*transB=*/true) * (1.0 / std::sqrt(double(D)));
  const torch::Tensor future = spec_.causal ? futureMask(N, N, x.device()) : torch::Tensor();
  if (kernel_.defined()) S = mtaConvolution(S, kernel_, m.pad, spec_.causal);  // L347–353
  if (mixPre_.defined()) S = mixHeads(mixPre_.effective(), S);    // L355–357
  if (future.defined()) S = S.masked_fill(future, -std::numeric_limits<double>::infinity());  // L360
  auto P = torch::softmax(S, -1);                                              // L362
  if (kernelAfter_.defined())  // L364–372: the future entries zeroed again
    P = mtaConvolution(P, kernelAfter_, m.pad, spec_.causal, /*zeroFuture=*/true);
  if (headKernel_.defined()) {
    // _head_convolution (L537–552): within group c, out head j = Σ_i P[head i]·head_kernel[c, i, j].
    const int64_t g = headKernel_.size(1);
    P = torch::einsum("bcinm,cij->bcjnm", {P.reshape({B, H / g, g, N, N}), headKernel_}).reshape({B, H, N, N});
  } else if (mixPost_.defined()) {
    P = mixHeads(mixPost_.effective(), P);                        // L378–380
  }
  AttentionOutput out;
  if (options.with_maps) out.maps = P;
  auto o = batchedProduct(dropout_(P), v, false).transpose(1, 2);                      // L382–388: [B, N, H, D]
  if (sublnWeight_.defined()) {
    // RMSNorm._norm L68–69, subln L423–424
    o = rmsNorm(o, normScale_ == 1.0 ? sublnWeight_ : sublnWeight_ * normScale_, 1e-5);
  }
  if (gate_) o = o * torch::sigmoid(project(gate_, o));                                 // L426–427
  out.y = project(wo_, o.reshape({B, N, H * D}));
  return out;
}

}  // namespace tensorscope::model_core
