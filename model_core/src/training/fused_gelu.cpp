#include "training/fused_gelu.h"

#include <ATen/Parallel.h>
#include <ATen/core/grad_mode.h>
#include <torch/csrc/autograd/custom_function.h>

#include "attention/fused_attention.h"
#include "kernels/row_ops.h"

namespace tensorscope::model_core {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

constexpr int64_t kGrain = 16384;  // values per task: a few microseconds of work

template <typename T>
void geluForward(const T* x, T* y, int64_t n) {
  const auto& ops = kernels::rowOps<T>();
  at::parallel_for(0, n, kGrain, [&](int64_t begin, int64_t end) { ops.geluRow(x + begin, end - begin, y + begin); });
}

template <typename T>
void geluBackward(const T* x, const T* g, T* dx, int64_t n) {
  const auto& ops = kernels::rowOps<T>();
  at::parallel_for(0, n, kGrain, [&](int64_t begin, int64_t end) {
    ops.geluBackwardRow(x + begin, g + begin, end - begin, dx + begin);
  });
}

struct GeluFunction : public torch::autograd::Function<GeluFunction> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& input) {
    const auto x = input.contiguous();
    auto y = torch::empty_like(x);
    if (x.scalar_type() == torch::kDouble) geluForward(x.data_ptr<double>(), y.data_ptr<double>(), x.numel());
    else geluForward(x.data_ptr<float>(), y.data_ptr<float>(), x.numel());
    ctx->save_for_backward({x});
    return y;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto x = ctx->get_saved_variables()[0];
    if (!grads[0].defined()) return {torch::Tensor()};
    // A backward that builds a graph (a second derivative) takes ATen's differentiable formula.
    if (at::GradMode::is_enabled()) return {at::gelu_backward(grads[0], x)};
    const auto g = grads[0].contiguous();
    auto dx = torch::empty_like(x);
    if (x.scalar_type() == torch::kDouble)
      geluBackward(x.data_ptr<double>(), g.data_ptr<double>(), dx.data_ptr<double>(), x.numel());
    else
      geluBackward(x.data_ptr<float>(), g.data_ptr<float>(), dx.data_ptr<float>(), x.numel());
    return {dx};
  }
};

}  // namespace

torch::Tensor fusedGelu(const torch::Tensor& x) {
  return fusedRowsSupport(x) ? GeluFunction::apply(x) : torch::gelu(x);
}

}  // namespace tensorscope::model_core
