#include "attention/thsa_fused.h"

#include <ATen/Parallel.h>
#include <torch/csrc/autograd/custom_function.h>

#include <limits>
#include <stdexcept>

#include "kernels/thsa_dense.h"

namespace tensorscope::model_core {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

template <typename T>
kernels::DenseThsaProblem<T> denseProblem(const torch::Tensor& qkv, const torch::Tensor& C, double scale,
                                          bool causal) {
  kernels::DenseThsaProblem<T> p;
  p.B = qkv.size(0);
  p.N = qkv.size(1);
  p.R = qkv.size(3);
  p.qkv = qkv.data_ptr<T>();
  p.C = C.data_ptr<T>();
  p.scale = static_cast<T>(scale);
  p.causal = causal;
  return p;
}

struct DenseThsaFunction : public torch::autograd::Function<DenseThsaFunction> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& qkvIn, const torch::Tensor& CIn,
                               double scale, bool causal) {
    const auto qkv = qkvIn.contiguous();
    const auto C = CIn.contiguous();
    const int64_t B = qkv.size(0), N = qkv.size(1), R = qkv.size(3);
    auto omega = torch::empty({B, N, R}, qkv.options());
    auto lse = torch::empty({B, R, N}, qkv.options());
    AT_DISPATCH_FLOATING_TYPES(qkv.scalar_type(), "denseThsaForward", [&] {
      kernels::denseThsaForward<scalar_t>(denseProblem<scalar_t>(qkv, C, scale, causal), omega.data_ptr<scalar_t>(),
                                          lse.data_ptr<scalar_t>(), atenParallel());
    });
    ctx->save_for_backward({qkv, C, omega, lse});
    ctx->saved_data["scale"] = scale;
    ctx->saved_data["causal"] = causal;
    return omega;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto &qkv = saved[0], &C = saved[1], &omega = saved[2], &lse = saved[3];
    const double scale = ctx->saved_data["scale"].toDouble();
    const bool causal = ctx->saved_data["causal"].toBool();
    const auto g = grads[0].contiguous();
    auto dqkv = torch::empty_like(qkv);
    const bool wantC = ctx->needs_input_grad(1);
    auto dC = wantC ? torch::empty_like(C) : torch::Tensor();
    AT_DISPATCH_FLOATING_TYPES(qkv.scalar_type(), "denseThsaBackward", [&] {
      kernels::denseThsaBackward<scalar_t>(denseProblem<scalar_t>(qkv, C, scale, causal), omega.data_ptr<scalar_t>(),
                                           lse.data_ptr<scalar_t>(), g.data_ptr<scalar_t>(),
                                           dqkv.data_ptr<scalar_t>(), wantC ? dC.data_ptr<scalar_t>() : nullptr,
                                           atenParallel());
    });
    return {dqkv, dC, torch::Tensor(), torch::Tensor()};
  }
};

void checkBlasRange(int64_t a, int64_t b, const char* what) {
  if (a * b > std::numeric_limits<int>::max())
    throw std::invalid_argument(std::string(what) + ": sizes exceed the BLAS integer range");
}

}  // namespace

kernels::Parallel atenParallel() {
  return {[](int64_t count, const kernels::RangeBody& body) { at::parallel_for(0, count, 1, body); },
          at::get_num_threads()};
}

torch::Tensor denseThsaAttention(const torch::Tensor& qkv, const torch::Tensor& C, double scale, bool causal) {
  if (qkv.dim() != 4 || qkv.size(2) != 3) throw std::invalid_argument("denseThsaAttention: qkv must be [B, N, 3, R]");
  const int64_t R = qkv.size(3);
  if (C.dim() != 2 || C.size(0) != R || C.size(1) != R)
    throw std::invalid_argument("denseThsaAttention: C must be [R, R] with R = qkv.size(3)");
  if (C.scalar_type() != qkv.scalar_type() || !C.device().is_cpu())
    throw std::invalid_argument("denseThsaAttention: C must be a CPU tensor of qkv's dtype");
  if (!qkv.device().is_cpu() || (qkv.scalar_type() != torch::kFloat && qkv.scalar_type() != torch::kDouble))
    throw std::invalid_argument("denseThsaAttention: CPU float32/float64 tensors only");
  checkBlasRange(qkv.size(1), 3 * R, "denseThsaAttention");
  checkBlasRange(qkv.size(1), qkv.size(1), "denseThsaAttention");
  return DenseThsaFunction::apply(qkv, C, scale, causal);
}

}  // namespace tensorscope::model_core
