#include "attention/multilinear.h"

#include <cmath>
#include <cstdio>

#include "attention/dimwise_fused.h"
#include "attention/fused_attention.h"
#include "attention/kernels.h"
#include "attention/multilinear_blocked.h"
#include "spec/multilinear_memory.h"

namespace tensorscope::model_core {

MultilinearImpl::MultilinearImpl(const spec::AttentionSpec& s) : AttentionModuleImpl(s) {
  const int64_t F = s.sizes.F, R = s.sizes.R, N = s.sizes.seq_len;
  wq_ = register_module("wq", makeProjection(F, R, s.bias));
  wk_ = register_module("wk", makeProjection(F, R, s.bias));
  wv_ = register_module("wv", makeProjection(F, R, s.bias));
  wo_ = register_module("wo", makeProjection(N * N, F, s.bias));
  // g_p ~ U(0, 1): the authors' initialisation of the block-term core weights.
  cores_ = register_parameter("cores", torch::rand({int64_t(s.sizes.P), R}));
}

torch::Tensor MultilinearImpl::effectiveCores() const {
  return spec_.core_softmax ? torch::softmax(cores_, -1) : cores_;
}

torch::Tensor multilinearAten(const torch::Tensor& a, const torch::Tensor& k, const torch::Tensor& v,
                              const torch::Tensor& Wo, bool causal) {
  const int64_t B = a.size(0), N = a.size(1);
  const auto ak = a.unsqueeze(2) * k.unsqueeze(1);                         // [B, i, j, R]
  auto T = torch::matmul(ak.reshape({B, N * N, -1}), v.transpose(1, 2));  // [B, i·j, k]
  T = T.view({B, N, N, N});
  if (causal) {
    // T[b,i,j,k] = 0 unless j <= i and k <= i: two in-place fills through broadcast views of the
    // [N, N] future mask, so no [N, N, N] mask is stored or built (the matmul's backward needs its
    // inputs, not T, so filling T in place is safe for autograd).
    const auto future = futureMask(N, N, a.device());  // [i, j]: j > i
    T.masked_fill_(future.view({N, N, 1}), 0.0);       // j > i
    T.masked_fill_(future.view({N, 1, N}), 0.0);       // k > i
  }
  return torch::linear(T.reshape({B, N, N * N}), Wo);  // y_i = Wo·vec(T[i])
}

AttentionOutput MultilinearImpl::forward(const torch::Tensor& x, const ForwardOptions& options) {
  checkInput(x, /*fixedLength=*/true);
  const int64_t B = x.size(0), N = x.size(1);
  const bool blocked = fusedAttentionSupports(x);
  const double need = spec::multilinearActivationBytes(
      spec_, B, int(x.element_size()), blocked ? spec::MultilinearPath::BlockedCpu : spec::MultilinearPath::MaterialisedT);
  if (need > maxActivationBytes_) {
    char msg[384];
    std::snprintf(msg, sizeof msg,
                  "multilinear at B=%lld, N=%lld needs about %.2f GiB of activations (%s); the limit is "
                  "%.2f GiB. Reduce the batch or seq_len.",
                  static_cast<long long>(B), static_cast<long long>(N), need / double(1ull << 30),
                  blocked ? "q, k, v and the work tensors of one block of output features, B*N*R each"
                          : "T is B*N^3 on this device",
                  maxActivationBytes_ / double(1ull << 30));
    throw std::runtime_error(msg);
  }
  const auto q = project(wq_, x), k = project(wk_, x), v = project(wv_, x);          // [B, N, R]
  const auto gbar = effectiveCores().mean(0);              // [R]: (1/P)·Σ_p g_p
  const auto a = q * gbar;                                 // [B, N, R]
  AttentionOutput out;
  out.y = blocked ? multilinearBlocked(a, k, v, wo_->weight, spec_.causal)
                  : multilinearAten(a, k, v, wo_->weight, spec_.causal);
  if (wo_->bias.defined()) out.y = out.y + wo_->bias;
  if (options.with_maps) {
    auto A = torch::matmul(a, k.transpose(1, 2));          // [B, N, N]
    if (spec_.causal) A = A.masked_fill(futureMask(N, N, x.device()), 0.0);
    out.maps = A;
  }
  return out;
}

DimwiseImpl::DimwiseImpl(const spec::AttentionSpec& s) : AttentionModuleImpl(s) {
  const int64_t F = s.sizes.F, d = s.sizes.R, c = s.sizes.c;
  wq_ = register_module("wq", makeProjection(F, d, s.bias));
  wk_ = register_module("wk", makeProjection(F, d, s.bias));
  wv_ = register_module("wv", makeProjection(F, d, s.bias));
  wo_ = register_module("wo", makeProjection(c * d, F, s.bias));
  // Filters start near the all-ones filter (plain dimension-wise attention) with small noise.
  conv_ = register_parameter("conv", torch::ones({c, d, d}) + 0.02 * torch::randn({c, d, d}));
  dropout_ = register_module("dropout", torch::nn::Dropout(s.dropout));
}

DimwiseAtenOutput dimwiseAten(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                              const torch::Tensor& W, bool causal,
                              const std::function<torch::Tensor(const torch::Tensor&)>& dropout) {
  const int64_t N = q.size(1);
  auto drop = [&](const torch::Tensor& f) { return dropout ? dropout(f) : f; };
  DimwiseAtenOutput out;
  if (!causal) {
    const auto S = torch::matmul(q.transpose(1, 2), k);                    // [B, d, d]
    out.f = torch::softmax(S / std::sqrt(double(N)), -1);                  // [B, d, d]
    const auto M = W.unsqueeze(0) * drop(out.f).unsqueeze(1);              // [B, c, d, d]: W_c ⊙ f(S)
    out.O = torch::matmul(v.unsqueeze(1), M.transpose(-1, -2)).transpose(1, 2);  // [B, N, c, d]
  } else {
    const auto S = torch::cumsum(q.unsqueeze(-1) * k.unsqueeze(-2), 1);    // [B, N, d, d]: S⁽ⁱ⁾
    const auto pos = torch::arange(1, N + 1, q.options()).sqrt().view({1, N, 1, 1});
    out.f = torch::softmax(S / pos, -1);                                   // [B, N, d, d]
    const auto fv = drop(out.f) * v.unsqueeze(-2);                         // [B, N, j, m]: f⁽ⁱ⁾[j,m]·v[i,m]
    out.O = torch::einsum("cjm,bijm->bicj", {W, fv});                      // [B, N, c, d]
  }
  return out;
}

AttentionOutput DimwiseImpl::forward(const torch::Tensor& x, const ForwardOptions& options) {
  checkInput(x);
  const int64_t B = x.size(0), N = x.size(1), d = spec_.sizes.R, c = spec_.sizes.c;
  AttentionOutput out;
  if (spec_.causal && fusedAttentionSupports(x) && !(is_training() && spec_.dropout > 0)) {
    // The fused kernel (dimwise_fused.h): no [B, N, d, d] prefix tensor, forward or backward.
    const auto qkv = projectQkv(x, wq_, wk_, wv_, 1).view({B, N, 3, d});
    const auto O = dimwiseCausalAttention(qkv, conv_.to(qkv.scalar_type()));  // [B, N, c, d]
    out.y = project(wo_, O.view({B, N, c * d}));
    if (options.with_maps) {  // f(S⁽ᴺ⁾), the map of the last position (display only)
      torch::NoGradGuard noGrad;
      const auto q = qkv.select(2, 0), k = qkv.select(2, 1);
      out.maps = torch::softmax(torch::matmul(q.transpose(1, 2), k) / std::sqrt(double(N)), -1);
    }
    return out;
  }
  const auto q = project(wq_, x), k = project(wk_, x), v = project(wv_, x);  // [B, N, d]
  const auto aten = dimwiseAten(q, k, v, conv_, spec_.causal, [&](const torch::Tensor& f) { return dropout_(f); });
  if (options.with_maps) out.maps = spec_.causal ? aten.f.select(1, N - 1) : aten.f;
  out.y = project(wo_, aten.O.reshape({B, N, c * d}));
  return out;
}

}  // namespace tensorscope::model_core
