#include "attention/kernels.h"

#include <limits>

namespace tensorscope::model_core {

torch::Tensor futureMask(int64_t n, int64_t m, const torch::Device& device) {
  return torch::ones({n, m}, torch::TensorOptions().dtype(torch::kBool).device(device)).triu(1);
}

torch::Tensor scaledMaskedSoftmax(const torch::Tensor& logits, double scale, bool causal) {
  if (!causal) return torch::softmax(scale == 1.0 ? logits : logits * scale, -1);
  const auto n = logits.size(-2), m = logits.size(-1);
  const auto mask = torch::zeros({n, m}, logits.options().requires_grad(false))
                        .masked_fill_(futureMask(n, m, logits.device()), -std::numeric_limits<double>::infinity());
  return torch::softmax(torch::add(mask, logits, scale), -1);  // mask + scale·logits
}

torch::nn::Linear makeProjection(int64_t in, int64_t out, bool bias) {
  return torch::nn::Linear(torch::nn::LinearOptions(in, out).bias(bias));
}

torch::Tensor projectQkv(const torch::Tensor& x, const torch::nn::Linear& wq, const torch::nn::Linear& wk,
                         const torch::nn::Linear& wv, int64_t heads) {
  const auto W = torch::cat({wq->weight, wk->weight, wv->weight});  // [3·H·D, F]
  const auto b = wq->bias.defined() ? torch::cat({wq->bias, wk->bias, wv->bias}) : torch::Tensor();
  const auto y = torch::linear(x, W, b);                             // [B, N, 3·H·D]
  return y.view({x.size(0), x.size(1), 3, heads, W.size(0) / (3 * heads)});
}

torch::Tensor rmsNorm(const torch::Tensor& x, const torch::Tensor& weight, double eps) {
  const auto n = x * torch::rsqrt(x.pow(2).mean(-1, /*keepdim=*/true) + eps);
  return weight.defined() ? n * weight : n;
}

torch::Tensor splitHeads(const torch::Tensor& x, int64_t heads) {
  const auto B = x.size(0), N = x.size(1);
  return x.view({B, N, heads, x.size(2) / heads}).transpose(1, 2);
}

torch::Tensor mergeHeads(const torch::Tensor& x) {
  const auto B = x.size(0), H = x.size(1), N = x.size(2), D = x.size(3);
  return x.transpose(1, 2).reshape({B, N, H * D});
}

}  // namespace tensorscope::model_core
