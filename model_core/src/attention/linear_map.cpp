// linearMap (attention/kernels.h): torch::linear's function on the projection GEMM (kernels/gemm.h).
#include <ATen/core/grad_mode.h>
#include <torch/csrc/autograd/custom_function.h>

#include <algorithm>

#include "attention/fused_attention.h"
#include "attention/kernels.h"
#include "kernels/gemm.h"

namespace tensorscope::model_core {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

/// C [m, n] = op(A)·op(B) (+ C when `accumulate`), the inner size k possibly 0.
void product(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b,
             int64_t ldb, bool accumulate, float* c) {
  if (k == 0) {
    if (!accumulate) std::fill(c, c + m * n, 0.0f);
    return;
  }
  kernels::projectionSgemm(ta, tb, m, n, k, 1.0f, a, lda, b, ldb, accumulate ? 1.0f : 0.0f, c, n);
}

struct LinearMapFunction : public torch::autograd::Function<LinearMapFunction> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& x, const torch::Tensor& weight,
                               const torch::Tensor& bias) {
    const int64_t out = weight.size(0), in = weight.size(1);
    int64_t T = 1;  // the rows: every leading axis (not numel / in, which an empty contraction leaves open)
    for (int64_t d = 0; d + 1 < x.dim(); ++d) T *= x.size(d);
    const auto x2 = x.reshape({T, in}).contiguous();  // a view where x allows
    const auto w = weight.contiguous();
    auto y = torch::empty({T, out}, x.options());
    const bool hasBias = bias.numel() > 0;
    if (hasBias) y.copy_(bias.expand({T, out}));  // every row b, then y += x·Wᵀ (as addmm)
    product(false, true, T, out, in, x2.data_ptr<float>(), in, w.data_ptr<float>(), in, hasBias, y.data_ptr<float>());
    ctx->save_for_backward({x2, w});
    ctx->saved_data["bias"] = hasBias;
    ctx->saved_data["shape"] = x.sizes().vec();
    auto shape = x.sizes().vec();
    shape.back() = out;
    return y.view(shape);
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto &x2 = saved[0], &w = saved[1];
    const bool hasBias = ctx->saved_data["bias"].toBool();
    const auto shape = ctx->saved_data["shape"].toIntVector();
    if (!grads[0].defined()) return {torch::Tensor(), torch::Tensor(), torch::Tensor()};
    const int64_t out = w.size(0), in = w.size(1), T = x2.size(0);
    const auto g = grads[0].reshape({T, out}).contiguous();
    torch::Tensor dx, dw, db;
    if (at::GradMode::is_enabled()) {  // a graph of the backward: ATen's differentiable formulas
      if (ctx->needs_input_grad(0)) dx = g.mm(w).view(shape);
      if (ctx->needs_input_grad(1)) dw = g.t().mm(x2);
    } else {
      if (ctx->needs_input_grad(0)) {
        dx = torch::empty({T, in}, g.options());
        product(false, false, T, in, out, g.data_ptr<float>(), out, w.data_ptr<float>(), in, false,
                dx.data_ptr<float>());
        dx = dx.view(shape);
      }
      if (ctx->needs_input_grad(1)) {
        dw = torch::empty({out, in}, g.options());
        product(true, false, out, in, T, g.data_ptr<float>(), out, x2.data_ptr<float>(), in, false,
                dw.data_ptr<float>());
      }
    }
    if (hasBias && ctx->needs_input_grad(2)) db = g.sum(0);
    return {dx, dw, db};
  }
};

}  // namespace

bool projectionGemmSupports(const torch::Tensor& x) {
  return kernels::projectionGemm().available() && fusedRowsSupport(x) && x.scalar_type() == torch::kFloat;
}

torch::Tensor linearMap(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias) {
  const bool same = weight.scalar_type() == x.scalar_type() && weight.device() == x.device() && weight.dim() == 2 &&
                    x.dim() >= 1 && x.size(-1) == weight.size(1) &&
                    (!bias.defined() || (bias.scalar_type() == x.scalar_type() && bias.device() == x.device() &&
                                         bias.dim() == 1 && bias.size(0) == weight.size(0)));
  if (!same || !projectionGemmSupports(x))
    return torch::linear(x, weight, bias.defined() ? bias : torch::Tensor());
  return LinearMapFunction::apply(x, weight, bias.defined() ? bias : torch::empty({0}, weight.options()));
}

}  // namespace tensorscope::model_core
