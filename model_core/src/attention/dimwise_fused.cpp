#include "attention/dimwise_fused.h"

#include <torch/csrc/autograd/custom_function.h>

#include <stdexcept>
#include <string>

#include "attention/thsa_fused.h"

namespace tensorscope::model_core {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

template <typename T>
kernels::DimwiseCausalProblem<T> dimwiseProblem(const torch::Tensor& qkv, const torch::Tensor& W, int64_t segment) {
  kernels::DimwiseCausalProblem<T> p;
  p.B = qkv.size(0);
  p.N = qkv.size(1);
  p.d = qkv.size(3);
  p.c = W.size(0);
  p.segment = segment;
  p.qkv = qkv.data_ptr<T>();
  p.W = W.data_ptr<T>();
  return p;
}

struct DimwiseCausalFunction : public torch::autograd::Function<DimwiseCausalFunction> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& qkvIn, const torch::Tensor& WIn,
                               int64_t segment) {
    const auto qkv = qkvIn.contiguous();
    const auto W = WIn.contiguous();
    const int64_t B = qkv.size(0), N = qkv.size(1), d = qkv.size(3), c = W.size(0);
    auto O = torch::empty({B, N, c, d}, qkv.options());
    auto lse = torch::empty({B, N, d}, qkv.options());
    const int64_t checkpoints = N > 0 ? (N + segment - 1) / segment - 1 : 0;
    auto states = torch::empty({B, checkpoints, d, d}, qkv.options());
    AT_DISPATCH_FLOATING_TYPES(qkv.scalar_type(), "dimwiseCausalForward", [&] {
      kernels::dimwiseCausalForward<scalar_t>(dimwiseProblem<scalar_t>(qkv, W, segment), O.data_ptr<scalar_t>(),
                                              lse.data_ptr<scalar_t>(), states.data_ptr<scalar_t>(), atenParallel());
    });
    // O as well, for ⟨p, ∂p⟩ = Σ_c ∂O·O in the backward (row_ops.h). It is the storage the layer's
    // output projection keeps for its own backward, but that one is freed before this backward runs,
    // so the peak grows by up to B·N·c·d values (docs/decisions.md).
    ctx->save_for_backward({qkv, W, lse, states, O});
    ctx->saved_data["segment"] = segment;
    return O;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto &qkv = saved[0], &W = saved[1], &lse = saved[2], &states = saved[3], &O = saved[4];
    const int64_t segment = ctx->saved_data["segment"].toInt();
    const auto g = grads[0].contiguous();
    auto dqkv = torch::empty_like(qkv);
    const bool wantW = ctx->needs_input_grad(1);
    auto dW = wantW ? torch::empty_like(W) : torch::Tensor();
    AT_DISPATCH_FLOATING_TYPES(qkv.scalar_type(), "dimwiseCausalBackward", [&] {
      kernels::dimwiseCausalBackward<scalar_t>(dimwiseProblem<scalar_t>(qkv, W, segment), lse.data_ptr<scalar_t>(),
                                               states.data_ptr<scalar_t>(), O.data_ptr<scalar_t>(), g.data_ptr<scalar_t>(),
                                               dqkv.data_ptr<scalar_t>(), wantW ? dW.data_ptr<scalar_t>() : nullptr,
                                               atenParallel());
    });
    return {dqkv, dW, torch::Tensor()};
  }
};

}  // namespace

torch::Tensor dimwiseCausalAttention(const torch::Tensor& qkv, const torch::Tensor& W, int64_t segment) {
  if (qkv.dim() != 4 || qkv.size(2) != 3)
    throw std::invalid_argument("dimwiseCausalAttention: qkv must be [B, N, 3, d]");
  const int64_t d = qkv.size(3);
  if (W.dim() != 3 || W.size(0) < 1 || W.size(1) != d || W.size(2) != d)
    throw std::invalid_argument("dimwiseCausalAttention: W must be [c, d, d] with c >= 1 and d = qkv.size(3)");
  if (!qkv.device().is_cpu() || (qkv.scalar_type() != torch::kFloat && qkv.scalar_type() != torch::kDouble))
    throw std::invalid_argument("dimwiseCausalAttention: CPU float32/float64 tensors only");
  if (W.scalar_type() != qkv.scalar_type() || !W.device().is_cpu())
    throw std::invalid_argument("dimwiseCausalAttention: W must be a CPU tensor of qkv's dtype");
  if (segment < 1) throw std::invalid_argument("dimwiseCausalAttention: segment must be at least 1");
  return DimwiseCausalFunction::apply(qkv, W, segment);
}

std::vector<torch::Tensor> dimwiseCausalSavedTensors(const torch::Tensor& out) {
  const auto node = std::dynamic_pointer_cast<torch::autograd::CppNode<DimwiseCausalFunction>>(out.grad_fn());
  if (!node)
    throw std::invalid_argument("dimwiseCausalSavedTensors: the tensor is not an output of dimwiseCausalAttention");
  return node->ctx_.get_saved_variables();
}

}  // namespace tensorscope::model_core
