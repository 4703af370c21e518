#include "attention/thsa_fused.h"

#include <ATen/Parallel.h>
#include <torch/csrc/autograd/custom_function.h>

#include <limits>
#include <stdexcept>

#include "kernels/gemm.h"
#include "kernels/thsa_dense.h"
#include "kernels/thsa_heads.h"
#include "kernels/thsa_linear.h"
#include "kernels/thsa_lowrank.h"

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

template <typename T>
kernels::LinearThsaProblem<T> linearProblem(const torch::Tensor& qkv, const torch::Tensor& C, bool causal) {
  kernels::LinearThsaProblem<T> p;
  p.B = qkv.size(0);
  p.N = qkv.size(1);
  p.R = qkv.size(3);
  p.qkv = qkv.data_ptr<T>();
  p.C = C.data_ptr<T>();
  p.causal = causal;
  return p;
}

struct LinearThsaFunction : public torch::autograd::Function<LinearThsaFunction> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& qkvIn, const torch::Tensor& CIn,
                               bool causal) {
    const auto qkv = qkvIn.contiguous();
    const auto C = CIn.contiguous();
    const int64_t B = qkv.size(0), N = qkv.size(1), R = qkv.size(3);
    auto omega = torch::empty({B, N, R}, qkv.options());
    auto den = torch::empty({B, N, R}, qkv.options());
    AT_DISPATCH_FLOATING_TYPES(qkv.scalar_type(), "linearThsaForward", [&] {
      kernels::linearThsaForward<scalar_t>(linearProblem<scalar_t>(qkv, C, causal), omega.data_ptr<scalar_t>(),
                                           den.data_ptr<scalar_t>(), atenParallel());
    });
    ctx->save_for_backward({qkv, C, omega, den});
    ctx->saved_data["causal"] = causal;
    return omega;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto &qkv = saved[0], &C = saved[1], &omega = saved[2], &den = saved[3];
    const bool causal = ctx->saved_data["causal"].toBool();
    const auto g = grads[0].contiguous();
    auto dqkv = torch::empty_like(qkv);
    const bool wantC = ctx->needs_input_grad(1);
    auto dC = wantC ? torch::empty_like(C) : torch::Tensor();
    AT_DISPATCH_FLOATING_TYPES(qkv.scalar_type(), "linearThsaBackward", [&] {
      kernels::linearThsaBackward<scalar_t>(linearProblem<scalar_t>(qkv, C, causal), omega.data_ptr<scalar_t>(),
                                            den.data_ptr<scalar_t>(), g.data_ptr<scalar_t>(),
                                            dqkv.data_ptr<scalar_t>(), wantC ? dC.data_ptr<scalar_t>() : nullptr,
                                            atenParallel());
    });
    return {dqkv, dC, torch::Tensor()};
  }
};

template <typename T>
kernels::LowRankThsaProblem<T> lowRankProblem(const torch::Tensor& qkv, const torch::Tensor& U, const torch::Tensor& V,
                                              double scale, bool causal) {
  kernels::LowRankThsaProblem<T> p;
  p.B = qkv.size(0);
  p.N = qkv.size(1);
  p.R = qkv.size(3);
  p.rank = U.size(1);
  p.qkv = qkv.data_ptr<T>();
  p.U = U.data_ptr<T>();
  p.V = V.data_ptr<T>();
  p.scale = static_cast<T>(scale);
  p.causal = causal;
  return p;
}

struct LowRankThsaFunction : public torch::autograd::Function<LowRankThsaFunction> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& qkvIn, const torch::Tensor& UIn,
                               const torch::Tensor& VIn, double scale, bool causal) {
    const auto qkv = qkvIn.contiguous(), U = UIn.contiguous(), V = VIn.contiguous();
    const int64_t B = qkv.size(0), N = qkv.size(1), R = qkv.size(3);
    auto omega = torch::empty({B, N, R}, qkv.options());
    auto lse = torch::empty({B, R, N}, qkv.options());
    AT_DISPATCH_FLOATING_TYPES(qkv.scalar_type(), "lowRankThsaForward", [&] {
      kernels::lowRankThsaForward<scalar_t>(lowRankProblem<scalar_t>(qkv, U, V, scale, causal),
                                            omega.data_ptr<scalar_t>(), lse.data_ptr<scalar_t>(), atenParallel());
    });
    ctx->save_for_backward({qkv, U, V, omega, lse});
    ctx->saved_data["scale"] = scale;
    ctx->saved_data["causal"] = causal;
    return omega;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto &qkv = saved[0], &U = saved[1], &V = saved[2], &omega = saved[3], &lse = saved[4];
    const double scale = ctx->saved_data["scale"].toDouble();
    const bool causal = ctx->saved_data["causal"].toBool();
    const auto g = grads[0].contiguous();
    auto dqkv = torch::empty_like(qkv);
    const bool wantU = ctx->needs_input_grad(1), wantV = ctx->needs_input_grad(2);
    auto dU = wantU ? torch::empty_like(U) : torch::Tensor();
    auto dV = wantV ? torch::empty_like(V) : torch::Tensor();
    AT_DISPATCH_FLOATING_TYPES(qkv.scalar_type(), "lowRankThsaBackward", [&] {
      kernels::lowRankThsaBackward<scalar_t>(lowRankProblem<scalar_t>(qkv, U, V, scale, causal),
                                             omega.data_ptr<scalar_t>(), lse.data_ptr<scalar_t>(),
                                             g.data_ptr<scalar_t>(), dqkv.data_ptr<scalar_t>(),
                                             wantU ? dU.data_ptr<scalar_t>() : nullptr,
                                             wantV ? dV.data_ptr<scalar_t>() : nullptr, atenParallel());
    });
    return {dqkv, dU, dV, torch::Tensor(), torch::Tensor()};
  }
};

template <typename T>
kernels::HeadMapThsaProblem<T> headProblem(const torch::Tensor& qkv, int64_t H, const torch::Tensor& A,
                                           const torch::Tensor& c2, const torch::Tensor& c3, double scale,
                                           bool causal) {
  kernels::HeadMapThsaProblem<T> p;
  p.B = qkv.size(0);
  p.N = qkv.size(1);
  p.H = H;
  p.D = qkv.size(3) / H;
  p.qkv = qkv.data_ptr<T>();
  p.identityA = A.numel() == 0;
  p.A = p.identityA ? nullptr : A.data_ptr<T>();
  p.rank1 = c2.numel() > 0;
  p.c2 = p.rank1 ? c2.data_ptr<T>() : nullptr;
  p.c3 = p.rank1 ? c3.data_ptr<T>() : nullptr;
  p.scale = static_cast<T>(scale);
  p.causal = causal;
  return p;
}

struct HeadMapThsaFunction : public torch::autograd::Function<HeadMapThsaFunction> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& qkvIn, int64_t H, const torch::Tensor& AIn,
                               const torch::Tensor& c2In, const torch::Tensor& c3In, double scale, bool causal) {
    // An absent factor arrives as an empty tensor (autograd inputs must be defined tensors).
    const auto qkv = qkvIn.contiguous();
    const auto A = AIn.contiguous(), c2 = c2In.contiguous(), c3 = c3In.contiguous();
    const int64_t B = qkv.size(0), N = qkv.size(1), R = qkv.size(3);
    auto omega = torch::empty({B, N, R}, qkv.options());
    auto lse = torch::empty({B, c2.numel() > 0 ? R : H, N}, qkv.options());
    AT_DISPATCH_FLOATING_TYPES(qkv.scalar_type(), "headMapThsaForward", [&] {
      kernels::headMapThsaForward<scalar_t>(headProblem<scalar_t>(qkv, H, A, c2, c3, scale, causal),
                                            omega.data_ptr<scalar_t>(), lse.data_ptr<scalar_t>(), atenParallel());
    });
    ctx->save_for_backward({qkv, A, c2, c3, omega, lse});
    ctx->saved_data["H"] = H;
    ctx->saved_data["scale"] = scale;
    ctx->saved_data["causal"] = causal;
    return omega;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto &qkv = saved[0], &A = saved[1], &c2 = saved[2], &c3 = saved[3], &omega = saved[4], &lse = saved[5];
    const int64_t H = ctx->saved_data["H"].toInt();
    const double scale = ctx->saved_data["scale"].toDouble();
    const bool causal = ctx->saved_data["causal"].toBool();
    const auto g = grads[0].contiguous();
    auto dqkv = torch::empty_like(qkv);
    // needs_input_grad counts tensor arguments only: qkv 0, A 1, c2 2, c3 3.
    const bool wantA = A.numel() > 0 && ctx->needs_input_grad(1);
    const bool wantC2 = c2.numel() > 0 && ctx->needs_input_grad(2), wantC3 = c3.numel() > 0 && ctx->needs_input_grad(3);
    auto dA = wantA ? torch::empty_like(A) : torch::Tensor();
    auto dc2 = wantC2 ? torch::empty_like(c2) : torch::Tensor();
    auto dc3 = wantC3 ? torch::empty_like(c3) : torch::Tensor();
    AT_DISPATCH_FLOATING_TYPES(qkv.scalar_type(), "headMapThsaBackward", [&] {
      kernels::headMapThsaBackward<scalar_t>(
          headProblem<scalar_t>(qkv, H, A, c2, c3, scale, causal), omega.data_ptr<scalar_t>(),
          lse.data_ptr<scalar_t>(), g.data_ptr<scalar_t>(), dqkv.data_ptr<scalar_t>(),
          wantA ? dA.data_ptr<scalar_t>() : nullptr, wantC2 ? dc2.data_ptr<scalar_t>() : nullptr,
          wantC3 ? dc3.data_ptr<scalar_t>() : nullptr, atenParallel());
    });
    return {dqkv, torch::Tensor(), dA, dc2, dc3, torch::Tensor(), torch::Tensor()};
  }
};

void checkBlasRange(int64_t a, int64_t b, const char* what) {
  if (!kernels::blas().available())
    throw std::runtime_error(std::string(what) + ": the fused kernels have no BLAS (" + kernels::blas().source + ")");
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

torch::Tensor linearThsaAttention(const torch::Tensor& qkv, const torch::Tensor& C, bool causal) {
  if (qkv.dim() != 4 || qkv.size(2) != 3) throw std::invalid_argument("linearThsaAttention: qkv must be [B, N, 3, R]");
  const int64_t R = qkv.size(3);
  if (C.dim() != 2 || C.size(0) != R || C.size(1) != R)
    throw std::invalid_argument("linearThsaAttention: C must be [R, R] with R = qkv.size(3)");
  if (!qkv.device().is_cpu() || (qkv.scalar_type() != torch::kFloat && qkv.scalar_type() != torch::kDouble))
    throw std::invalid_argument("linearThsaAttention: CPU float32/float64 tensors only");
  if (C.scalar_type() != qkv.scalar_type() || !C.device().is_cpu())
    throw std::invalid_argument("linearThsaAttention: C must be a CPU tensor of qkv's dtype");
  checkBlasRange(qkv.size(1), 3 * R, "linearThsaAttention");
  return LinearThsaFunction::apply(qkv, C, causal);
}

torch::Tensor lowRankThsaAttention(const torch::Tensor& qkv, const torch::Tensor& U, const torch::Tensor& V,
                                   double scale, bool causal) {
  if (qkv.dim() != 4 || qkv.size(2) != 3) throw std::invalid_argument("lowRankThsaAttention: qkv must be [B, N, 3, R]");
  const int64_t R = qkv.size(3);
  if (U.dim() != 2 || V.dim() != 2 || U.size(0) != R || V.size(0) != R || U.size(1) != V.size(1) || U.size(1) < 1)
    throw std::invalid_argument("lowRankThsaAttention: U and V must both be [R, rank] with R = qkv.size(3)");
  if (!qkv.device().is_cpu() || (qkv.scalar_type() != torch::kFloat && qkv.scalar_type() != torch::kDouble))
    throw std::invalid_argument("lowRankThsaAttention: CPU float32/float64 tensors only");
  for (const auto* t : {&U, &V})
    if (t->scalar_type() != qkv.scalar_type() || !t->device().is_cpu())
      throw std::invalid_argument("lowRankThsaAttention: U and V must be CPU tensors of qkv's dtype");
  checkBlasRange(qkv.size(1), 3 * R, "lowRankThsaAttention");
  checkBlasRange(qkv.size(1), qkv.size(1), "lowRankThsaAttention");
  return LowRankThsaFunction::apply(qkv, U, V, scale, causal);
}

torch::Tensor headMapThsaAttention(const torch::Tensor& qkv, int64_t heads, const torch::Tensor& A,
                                   const torch::Tensor& c2, const torch::Tensor& c3, double scale, bool causal) {
  const char* what = "headMapThsaAttention";
  if (qkv.dim() != 4 || qkv.size(2) != 3) throw std::invalid_argument("headMapThsaAttention: qkv must be [B, N, 3, R]");
  const int64_t R = qkv.size(3);
  if (heads < 1 || R % heads != 0)
    throw std::invalid_argument("headMapThsaAttention: R = qkv.size(3) must be a multiple of the heads");
  const int64_t D = R / heads;
  if (!qkv.device().is_cpu() || (qkv.scalar_type() != torch::kFloat && qkv.scalar_type() != torch::kDouble))
    throw std::invalid_argument("headMapThsaAttention: CPU float32/float64 tensors only");
  auto sameKind = [&](const torch::Tensor& t, std::vector<int64_t> shape, const char* name) {
    if (!t.defined()) return;
    if (t.sizes() != c10::IntArrayRef(shape) || t.scalar_type() != qkv.scalar_type() || !t.device().is_cpu())
      throw std::invalid_argument(std::string("headMapThsaAttention: ") + name +
                                  " must be a CPU tensor of qkv's dtype with the core's shape");
  };
  sameKind(A, {heads, heads}, "A");
  sameKind(c2, {D}, "c2");
  sameKind(c3, {D}, "c3");
  if (c2.defined() != c3.defined()) throw std::invalid_argument("headMapThsaAttention: give both c2 and c3, or neither");
  checkBlasRange(qkv.size(1), 3 * R, what);
  checkBlasRange(qkv.size(1), qkv.size(1), what);
  auto orEmpty = [&](const torch::Tensor& t) { return t.defined() ? t : torch::empty({0}, qkv.options()); };
  return HeadMapThsaFunction::apply(qkv, heads, orEmpty(A), orEmpty(c2), orEmpty(c3), scale, causal);
}

}  // namespace tensorscope::model_core
