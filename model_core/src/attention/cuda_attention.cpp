#include "attention/cuda_attention.h"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>

#include "runtime/torch_compat.h"

#include <ATen/ops/constant_pad_nd.h>

#if TS_TORCH_AT_LEAST(2, 1)
#include <ATen/ops/scaled_dot_product_attention.h>
#define TS_HAS_SDPA 1
#else
#define TS_HAS_SDPA 0
#endif

namespace tensorscope::model_core {
namespace {

bool enabledByEnvironment() {
  const char* v = std::getenv("TENSORSCOPE_CUDA_ATTENTION");
  return !(v && std::strcmp(v, "aten") == 0);
}

std::atomic<bool> g_sdpaEnabled{enabledByEnvironment()};

[[noreturn, maybe_unused]] void notBuilt() {  // unused where the fused kernels exist
  throw std::logic_error("fused scaled-dot-product attention needs LibTorch 2.1 or newer (this is " +
                         std::string(TORCH_VERSION) + ")");
}

}  // namespace

bool sdpaAttentionBuilt() { return TS_HAS_SDPA != 0; }

bool sdpaAttentionSupports(const torch::Tensor& x) {
  return TS_HAS_SDPA && g_sdpaEnabled.load() && x.defined() && x.is_cuda();
}

void setSdpaAttentionEnabled(bool enabled) { g_sdpaEnabled = enabled; }

std::string cudaAttentionPath() {
  if (!TS_HAS_SDPA) return "ATen formulation (LibTorch " + std::string(TORCH_VERSION) + " has no fused kernels)";
  if (!g_sdpaEnabled.load()) return "ATen formulation (fused kernels switched off)";
  return "fused scaled-dot-product attention";
}

torch::Tensor sdpaAttention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v, double scale,
                            bool causal) {
#if TS_HAS_SDPA
  return at::scaled_dot_product_attention(q, k, v, /*attn_mask=*/{}, /*dropout_p=*/0.0, causal, scale);
#else
  (void)q, (void)k, (void)v, (void)scale, (void)causal;
  notBuilt();
#endif
}

torch::Tensor sdpaHeadMixing(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                             const torch::Tensor& rows, double scale, bool causal) {
  if (q.dim() != 3 || k.sizes() != q.sizes() || v.sizes() != q.sizes())
    throw std::invalid_argument("sdpaHeadMixing: q, k and v must be [B, N, R] of one shape");
  const int64_t B = q.size(0), N = q.size(1), R = q.size(2), G = rows.size(0);
  if (rows.dim() != 2 || rows.size(1) != R || G < 1 || R % G != 0)
    throw std::invalid_argument("sdpaHeadMixing: rows must be [G, R] with G dividing R");
  const int64_t W = R / G;
  // The kernels' alignment of the value width: 16 bytes (4 float32 or 8 half-precision values).
  const int64_t align = q.element_size() >= 4 ? 4 : 8;
  const int64_t Wp = (W + align - 1) / align * align;
  const auto qh = rows.unsqueeze(1) * q.unsqueeze(1);   // [B, G, N, R]: q ⊙ rows[g]
  const auto kh = k.unsqueeze(1).expand({B, G, N, R});  // one key head shared by every query head
  auto vh = v.view({B, N, G, W}).permute({0, 2, 1, 3});  // [B, G, N, W]: head g's own columns
  if (Wp != W) vh = at::constant_pad_nd(vh, {0, Wp - W});
  const auto o = sdpaAttention(qh, kh, vh, scale, causal);  // [B, G, N, Wp]
  return o.narrow(-1, 0, W).permute({0, 2, 1, 3}).reshape({B, N, R});
}

}  // namespace tensorscope::model_core
