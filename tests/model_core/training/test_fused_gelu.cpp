// The feed-forward layer's GELU on the vectorised row operations (training/fused_gelu.h) against
// torch::gelu, the formulation it replaced and its oracle: values and gradients in float64 and
// float32, finite differences, a second derivative, 1-3 threads, and the switch back to ATen.

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "attention/fused_attention.h"
#include "training/fused_gelu.h"

namespace tensorscope::model_core {
namespace {

double maxAbsDiff(const torch::Tensor& a, const torch::Tensor& b) {
  return (a.to(torch::kDouble) - b.to(torch::kDouble)).abs().max().item<double>();
}

/// Values over both tails and the origin, [3, 5, 4099] (not a multiple of any vector width).
torch::Tensor inputs(torch::ScalarType dtype) {
  torch::manual_seed(21);
  auto x = torch::randn({3, 5, 4099}, torch::kDouble) * 3.0;
  x.view(-1).narrow(0, 0, 2401).copy_(torch::linspace(-12.0, 12.0, 2401, torch::kDouble));
  return x.to(dtype);
}

std::vector<torch::Tensor> valueAndGradient(const torch::Tensor& x0, const torch::Tensor& g, bool fused) {
  const auto x = x0.clone().requires_grad_(true);
  const auto y = fused ? fusedGelu(x) : torch::gelu(x);
  (y * g).sum().backward();
  return {y.detach(), x.grad()};
}

}  // namespace

TEST(FusedGelu, EqualsTorchGeluWithItsGradientInFloat64AndFloat32) {
  for (const auto dtype : {torch::kDouble, torch::kFloat}) {
    SCOPED_TRACE(dtype == torch::kDouble ? "float64" : "float32");
    const auto x = inputs(dtype);
    const auto g = torch::randn(x.sizes(), x.options());
    const auto fused = valueAndGradient(x, g, true), aten = valueAndGradient(x, g, false);
    // float64: the library's erfc against ATen's erf; float32: the polynomial Φ (1.2e-7) and exp.
    const double tol = dtype == torch::kDouble ? 1e-14 : 4e-6;
    EXPECT_LT(maxAbsDiff(fused[0], aten[0]), tol * 12) << "values (|x| up to 12)";
    EXPECT_LT(maxAbsDiff(fused[1], aten[1]), tol * 4 * g.abs().max().item<double>()) << "gradients";
    EXPECT_GT(fused[1].abs().sum().item<double>(), 1.0);
  }
}

TEST(FusedGelu, GradientMatchesFiniteDifferencesAndHasASecondDerivative) {
  torch::manual_seed(22);
  const auto x = (torch::randn({2, 37}, torch::kDouble) * 2.0).requires_grad_(true);
  const auto w = torch::randn({2, 37}, torch::kDouble);
  (fusedGelu(x) * w).sum().backward();
  // Central differences of L = Σ w·GELU(x), entry by entry.
  const double h = 1e-6;
  for (int64_t i = 0; i < x.numel(); ++i) {
    auto xp = x.detach().clone(), xm = x.detach().clone();
    xp.view(-1)[i] += h;
    xm.view(-1)[i] -= h;
    const double fd = ((fusedGelu(xp) * w).sum().item<double>() - (fusedGelu(xm) * w).sum().item<double>()) / (2 * h);
    EXPECT_NEAR(x.grad().view(-1)[i].item<double>(), fd, 1e-8) << "entry " << i;
  }

  // With create_graph the backward is ATen's differentiable formula: d²/dx² GELU = φ(x)·(2 − x²).
  const auto y = fusedGelu(x);
  const auto d1 = torch::autograd::grad({y.sum()}, {x}, {}, true, true)[0];  // (x.grad() of the check above is left alone)
  const auto d2 = torch::autograd::grad({d1.sum()}, {x})[0];
  const auto xd = x.detach();
  const auto pdf = torch::exp(-0.5 * xd * xd) / std::sqrt(2.0 * M_PI);
  EXPECT_LT(maxAbsDiff(d2, pdf * (2.0 - xd * xd)), 1e-12);
}

TEST(FusedGelu, ThreadsDoNotChangeTheBitsAndTheSwitchRunsAten) {
  const auto x = inputs(torch::kFloat);
  const int threads = at::get_num_threads();
  at::set_num_threads(1);
  const auto one = fusedGelu(x);
  for (int t : {2, 3}) {
    at::set_num_threads(t);
    EXPECT_TRUE(torch::equal(fusedGelu(x), one)) << t << " threads";
  }
  at::set_num_threads(threads);
  setFusedAttentionEnabled(false);
  const auto off = fusedGelu(x);
  setFusedAttentionEnabled(true);
  EXPECT_TRUE(torch::equal(off, torch::gelu(x)));
  EXPECT_FALSE(torch::equal(one, torch::gelu(x))) << "the fused path is its own code (control)";
}

}  // namespace tensorscope::model_core
