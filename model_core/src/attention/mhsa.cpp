#include "attention/mhsa.h"

#include <torch/nn/modules/dropout.h>

#include <cmath>

#include "attention/cuda_attention.h"
#include "attention/fused_attention.h"
#include "attention/kernels.h"

namespace tensorscope::model_core {

MhsaImpl::MhsaImpl(const spec::AttentionSpec& s) : AttentionModuleImpl(s) {
  const int64_t F = s.sizes.F, HD = int64_t(s.sizes.H) * s.sizes.D;
  wq_ = register_module("wq", makeProjection(F, HD, s.bias));
  wk_ = register_module("wk", makeProjection(F, HD, s.bias));
  wv_ = register_module("wv", makeProjection(F, HD, s.bias));
  if (s.variant == spec::Variant::Tp) wr_ = register_module("wr", makeProjection(F, HD, s.bias));
  wo_ = register_module("wo", makeProjection(HD, F, s.bias));
  dropout_ = register_module("dropout", torch::nn::Dropout(s.dropout));
}

AttentionOutput MhsaImpl::forward(const torch::Tensor& x, const ForwardOptions& options) {
  checkInput(x);
  const int64_t H = spec_.sizes.H;
  const double scale = 1.0 / std::sqrt(double(spec_.sizes.D));
  if (fusedAttentionSupports(x) && !(is_training() && spec_.dropout > 0)) {
    const int64_t B = x.size(0), N = x.size(1), D = spec_.sizes.D;
    const auto att = fusedAttention(projectQkv(x, wq_, wk_, wv_, H), scale, spec_.causal);
    auto o = att.o;  // [B, N, H, D]
    AttentionOutput out;
    if (wr_) {
      const auto r = wr_(x).view({B, N, H, D});  // role vectors
      o = o * r;                                 // binding: filler ⊙ role
      if (options.with_roles) out.roles = r.transpose(1, 2);
    }
    out.y = wo_(o.reshape({B, N, H * D}));
    if (options.with_maps) out.maps = att.P;
    return out;
  }
  const auto q = splitHeads(wq_(x), H);  // [B, H, N, D]
  const auto k = splitHeads(wk_(x), H);  // [B, H, N, D]
  const auto v = splitHeads(wv_(x), H);  // [B, H, N, D]
  AttentionOutput out;
  torch::Tensor o;  // [B, H, N, D]
  if (sdpaAttentionSupports(x) && !(is_training() && spec_.dropout > 0)) {
    // CUDA with LibTorch >= 2.1: the fused kernel (cuda_attention.h); maps only when asked.
    o = sdpaAttention(q, k, v, scale, spec_.causal);
    if (options.with_maps) {
      torch::NoGradGuard noGrad;
      out.maps = scaledMaskedSoftmax(torch::matmul(q, k.transpose(-2, -1)), scale, spec_.causal);
    }
  } else {
    // The same math with ATen ops: CUDA without the fused kernel, other dtypes, attention dropout.
    const auto P = scaledMaskedSoftmax(torch::matmul(q, k.transpose(-2, -1)), scale, spec_.causal);  // [B, H, N, N]
    o = torch::matmul(dropout_(P), v);
    if (options.with_maps) out.maps = P;
  }
  if (wr_) {
    const auto r = splitHeads(wr_(x), H);  // [B, H, N, D] role vectors
    o = o * r;                             // binding: filler ⊙ role
    if (options.with_roles) out.roles = r;
  }
  out.y = wo_(mergeHeads(o));  // [B, N, F]
  return out;
}

}  // namespace tensorscope::model_core
