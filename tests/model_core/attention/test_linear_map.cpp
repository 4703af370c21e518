// linearMap (attention/kernels.h): torch::linear's function, in float32 on the CPU on the projection
// GEMM (kernels/gemm.h, oneDNN's sgemm where it loads). Against torch::linear in float64 (the exact
// oracle) and float32: values and the gradients of x, the weight and the bias, with and without a
// bias, 1-, 2- and 3-axis inputs, non-contiguous inputs, an empty batch and an empty contraction,
// 1-3 threads, the fused-kernel switch, and a backward that builds a graph.

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cstdlib>

#include "attention/fused_attention.h"
#include "attention/kernels.h"
#include "kernels/gemm.h"

namespace tensorscope::model_core {
namespace {

/// The projection GEMM is on unless TENSORSCOPE_GEMM says otherwise (kernels/gemm.h); these tests ask
/// for it before its first use (ctest runs each test in its own process; a value already in the
/// environment is kept), so they check oneDNN's path where libdnnl.so.2 loads.
void askForTheProjectionGemm() { setenv("TENSORSCOPE_GEMM", "dnnl", 0); }

double maxAbsDiff(const torch::Tensor& a, const torch::Tensor& b) {
  return (a.to(torch::kDouble) - b.to(torch::kDouble)).abs().max().item<double>();
}

/// y and the gradients of x, W and b against an upstream g, by linearMap or torch::linear.
std::vector<torch::Tensor> run(const torch::Tensor& x0, const torch::Tensor& w0, const torch::Tensor& b0,
                               const torch::Tensor& g, bool ours) {
  const auto x = x0.detach().clone().requires_grad_(true), w = w0.detach().clone().requires_grad_(true);
  const auto b = b0.defined() ? b0.detach().clone().requires_grad_(true) : torch::Tensor();
  const auto y = ours ? linearMap(x, w, b) : torch::linear(x, w, b);
  (y * g).sum().backward();
  return {y.detach(), x.grad(), w.grad(), b.defined() ? b.grad() : torch::zeros({1}, x.options())};
}

}  // namespace

TEST(LinearMap, EqualsLinearWithEveryGradient) {
  askForTheProjectionGemm();
  // Whether this machine has the projection GEMM: said, so that a log shows which path was checked.
  std::printf("projection GEMM: %s\n", kernels::projectionGemm().source.c_str());
  EXPECT_EQ(projectionGemmSupports(torch::zeros({2, 3})), kernels::projectionGemm().available());
  EXPECT_FALSE(projectionGemmSupports(torch::zeros({2, 3}, torch::kDouble)));  // float64: ATen's
  torch::manual_seed(41);
  const std::vector<std::vector<int64_t>> leads = {{}, {37}, {3, 29}, {2, 3, 5}};
  for (const auto& lead : leads)
    for (bool bias : {true, false}) {
      SCOPED_TRACE(std::to_string(lead.size()) + " leading axes" + (bias ? ", bias" : ""));
      const int64_t in = 19, out = 11;
      auto xs = lead;
      xs.push_back(in);
      auto ys = lead;
      ys.push_back(out);
      const auto x = torch::randn(xs, torch::kDouble), w = torch::randn({out, in}, torch::kDouble);
      const auto b = bias ? torch::randn({out}, torch::kDouble) : torch::Tensor();
      const auto g = torch::randn(ys, torch::kDouble);
      const auto exact = run(x, w, b, g, false);  // float64
      const auto f = run(x.to(torch::kFloat), w.to(torch::kFloat), bias ? b.to(torch::kFloat) : b,
                         g.to(torch::kFloat), true);
      ASSERT_EQ(f[0].sizes(), exact[0].sizes());
      for (size_t i = 0; i < 4; ++i) {
        // float32 products of ≤ 37·5 terms of size ~1: well inside 1e-4 of the float64 values.
        const double scale = 1.0 + exact[i].abs().max().item<double>();
        EXPECT_LT(maxAbsDiff(f[i], exact[i]) / scale, 2e-6) << "item " << i;
      }
      // And against torch::linear in float32, and through the float64 path (ATen's: the same bits).
      const auto r = run(x.to(torch::kFloat), w.to(torch::kFloat), bias ? b.to(torch::kFloat) : b,
                         g.to(torch::kFloat), false);
      for (size_t i = 0; i < 4; ++i) EXPECT_LT(maxAbsDiff(f[i], r[i]), 1e-4) << "item " << i;
      const auto d = run(x, w, b, g, true);
      for (size_t i = 0; i < 4; ++i) EXPECT_TRUE(torch::equal(d[i], exact[i])) << "float64 item " << i;
    }
}

TEST(LinearMap, StridedInputsEmptySizesThreadsAndTheSwitch) {
  askForTheProjectionGemm();
  torch::manual_seed(42);
  // A transposed (non-contiguous) input and a weight that is a view of a wider one.
  const auto xt = torch::randn({7, 40, 6}).transpose(0, 1);  // [40, 7, 6]
  const auto wide = torch::randn({9, 10});
  const auto w = wide.narrow(1, 2, 6);  // [9, 6], rows 10 apart
  const auto b = torch::randn({9});
  EXPECT_LT(maxAbsDiff(linearMap(xt, w, b), torch::linear(xt, w, b)), 1e-5);
  // No rows, and no inputs (the map is the bias alone, its gradient the sum of g).
  EXPECT_EQ(linearMap(torch::randn({0, 6}), w, b).sizes(), (std::vector<int64_t>{0, 9}));
  const auto x0 = torch::randn({4, 0}).requires_grad_(true);
  const auto w0 = torch::randn({3, 0}).requires_grad_(true), b0 = torch::randn({3}).requires_grad_(true);
  const auto y0 = linearMap(x0, w0, b0);
  EXPECT_TRUE(torch::equal(y0, b0.detach().expand({4, 3})));
  y0.sum().backward();
  EXPECT_TRUE(torch::equal(b0.grad(), torch::full({3}, 4.0f)));
  EXPECT_EQ(w0.grad().sizes(), (std::vector<int64_t>{3, 0}));
  // 1 to 3 threads: values within float rounding of each other (the library may split the sums).
  const auto x = torch::randn({300, 64}), w2 = torch::randn({48, 64});
  const int threads = at::get_num_threads();
  at::set_num_threads(1);
  const auto one = linearMap(x, w2, torch::Tensor());
  for (int t : {2, 3}) {
    at::set_num_threads(t);
    EXPECT_LT(maxAbsDiff(linearMap(x, w2, torch::Tensor()), one), 1e-4) << t << " threads";
  }
  at::set_num_threads(threads);
  // The fused-kernel switch turns it off: torch::linear's own bits.
  setFusedAttentionEnabled(false);
  const auto off = linearMap(x, w2, torch::Tensor());
  setFusedAttentionEnabled(true);
  EXPECT_TRUE(torch::equal(off, torch::linear(x, w2)));
  // Mismatched operands fall to torch::linear, which says what is wrong.
  EXPECT_THROW(linearMap(torch::randn({2, 5}), w2, torch::Tensor()), c10::Error);
}

TEST(LinearMap, ABackwardThatBuildsAGraphGivesSecondDerivatives) {
  askForTheProjectionGemm();
  // ∂/∂x of Σ (∂L/∂x)² where L = Σ (x·Wᵀ)²: a create_graph backward through linearMap against linear's.
  torch::manual_seed(43);
  const auto x0 = torch::randn({5, 4}), w = torch::randn({3, 4}).requires_grad_(true);
  auto second = [&](bool ours) {
    const auto x = x0.clone().requires_grad_(true);
    const auto y = ours ? linearMap(x, w, torch::Tensor()) : torch::linear(x, w);
    const auto gx = torch::autograd::grad({y.pow(2).sum()}, {x}, {}, true, true)[0];
    return torch::autograd::grad({gx.pow(2).sum()}, {x})[0];
  };
  EXPECT_LT(maxAbsDiff(second(true), second(false)), 1e-3);
  EXPECT_GT(second(true).abs().sum().item<double>(), 0.1);
}

}  // namespace tensorscope::model_core
