// Multi-token attention's key-query convolution on its fused CPU pass (attention/mta_convolution.h)
// against the ATen formulation it replaces (masked_fill, constant_pad_nd, depthwise conv2d; the
// oracle): values and both gradients in float64 for every key padding, causal or not, the future
// zeroed after or not, square and rectangular maps, kernels of one tap to wider than the map; float32;
// 1-3 threads; second derivatives; the switch; the argument errors.

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <ATen/Parallel.h>

#include <stdexcept>
#include <vector>
#include <string>

#include "attention/fused_attention.h"
#include "attention/mta.h"
#include "attention/mta_convolution.h"

namespace tensorscope::model_core {
namespace {

double maxAbsDiff(const torch::Tensor& a, const torch::Tensor& b) {
  return (a.to(torch::kDouble) - b.to(torch::kDouble)).abs().max().item<double>();
}

/// The output and the gradients of maps and kernel against an upstream g.
std::vector<torch::Tensor> run(const torch::Tensor& maps0, const torch::Tensor& kernel0, int64_t left, bool causal,
                               bool zeroFuture, const torch::Tensor& g, bool fused) {
  const auto maps = maps0.detach().clone().requires_grad_(true), kernel = kernel0.detach().clone().requires_grad_(true);
  const auto y = fused ? fusedMtaConvolution(maps, kernel, left, causal, zeroFuture)
                       : mtaConvolutionAten(maps, kernel, left, causal, zeroFuture);
  (y * g).sum().backward();
  return {y.detach(), maps.grad(), kernel.grad()};
}

void expectSame(const std::vector<torch::Tensor>& a, const std::vector<torch::Tensor>& b, double tol,
                const std::string& what) {
  const char* names[] = {"output", "d maps", "d kernel"};
  for (size_t i = 0; i < a.size(); ++i) {
    const double scale = std::max(1.0, b[i].abs().max().item<double>());
    EXPECT_LE(maxAbsDiff(a[i], b[i]), tol * scale) << names[i] << ", " << what;
  }
}

}  // namespace

TEST(MtaConvolution, FusedEqualsTheAtenFormulationWithBothGradients) {
  torch::manual_seed(47);
  struct Shape { int64_t N, M, cq, ck; };
  for (const Shape sh : {Shape{9, 9, 3, 5}, Shape{7, 11, 2, 4}, Shape{12, 8, 6, 11}, Shape{5, 5, 1, 1}, Shape{4, 4, 6, 9},
                         Shape{33, 33, 6, 11}})
    for (int64_t left = 0; left < sh.ck; left += std::max<int64_t>(1, sh.ck / 3))
      for (bool causal : {false, true})
        for (bool zeroFuture : {false, true}) {
          if (zeroFuture && !causal) continue;
          const std::string what = "N " + std::to_string(sh.N) + ", M " + std::to_string(sh.M) + ", c_q " +
                                   std::to_string(sh.cq) + ", c_k " + std::to_string(sh.ck) + ", left " +
                                   std::to_string(left) + (causal ? ", causal" : "") + (zeroFuture ? ", zero future" : "");
          const auto maps = torch::randn({2, 3, sh.N, sh.M}, torch::kDouble);
          const auto kernel = torch::randn({3, sh.cq, sh.ck}, torch::kDouble);
          const auto g = torch::randn({2, 3, sh.N, sh.M}, torch::kDouble);
          expectSame(run(maps, kernel, left, causal, zeroFuture, g, true),
                     run(maps, kernel, left, causal, zeroFuture, g, false), 1e-12, what);
          expectSame(run(maps.to(torch::kFloat), kernel.to(torch::kFloat), left, causal, zeroFuture, g.to(torch::kFloat), true),
                     run(maps, kernel, left, causal, zeroFuture, g, false), 2e-5, what + ", float32");
        }
}

TEST(MtaConvolution, ReadsMapsInAnyLayoutAndSplitsOverThreads) {
  // A transposed (non-contiguous) map and 1-3 threads give the one answer of the ATen formulation.
  torch::manual_seed(5);
  const auto maps = torch::randn({3, 4, 20, 20}, torch::kDouble).transpose(2, 3);
  const auto kernel = torch::randn({4, 6, 11}, torch::kDouble);
  const auto g = torch::randn({3, 4, 20, 20}, torch::kDouble);
  const auto want = run(maps, kernel, 5, true, true, g, false);
  const int threads = at::get_num_threads();
  for (int t : {1, 2, 3}) {
    at::set_num_threads(t);
    expectSame(run(maps, kernel, 5, true, true, g, true), want, 1e-12, std::to_string(t) + " threads");
  }
  at::set_num_threads(threads);
}

TEST(MtaConvolution, SecondDerivativesFollowTheAtenFormulation) {
  // A backward that builds a graph (create_graph) differentiates the ATen formulation.
  torch::manual_seed(8);
  // The maps a transposed view (the fused pass reads a contiguous copy; the graph must still reach them).
  const auto maps = torch::randn({1, 2, 6, 6}, torch::dtype(torch::kDouble)).transpose(2, 3).requires_grad_(true);
  const auto kernel = torch::randn({2, 3, 4}, torch::dtype(torch::kDouble).requires_grad(true));
  const auto secondOf = [&](bool fused) {
    const auto y = fused ? fusedMtaConvolution(maps, kernel, 1, true, false) : mtaConvolutionAten(maps, kernel, 1, true, false);
    const auto d = torch::autograd::grad({(y * y).sum()}, {kernel}, {}, true, true)[0];
    return torch::autograd::grad({d.pow(2).sum()}, {maps, kernel});
  };
  const auto a = secondOf(true), b = secondOf(false);
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_GT(b[i].abs().max().item<double>(), 1.0) << i;
    EXPECT_LE(maxAbsDiff(a[i], b[i]), 1e-10 * (1 + b[i].abs().max().item<double>())) << i;
  }
}

TEST(MtaConvolution, EmptyMapsGiveEmptyResults) {
  // No batch entry or no query row: empty outputs and gradients, and a zero kernel gradient.
  torch::manual_seed(6);
  for (const auto& shape : std::vector<std::vector<int64_t>>{{0, 2, 5, 5}, {1, 2, 0, 5}}) {
    const auto maps = torch::randn(shape, torch::kDouble), g = torch::randn(shape, torch::kDouble);
    const auto kernel = torch::randn({2, 3, 4}, torch::kDouble);
    const auto got = run(maps, kernel, 1, true, false, g, true);
    EXPECT_EQ(got[0].sizes(), maps.sizes());
    EXPECT_EQ(got[2].abs().sum().item<double>(), 0.0);
  }
}

TEST(MtaConvolution, TheSwitchAndTheArgumentsAreChecked) {
  // mtaConvolution takes the fused pass unless the fused kernels are off; both answer alike.
  torch::manual_seed(2);
  const auto maps = torch::randn({2, 2, 7, 7}, torch::kDouble), kernel = torch::randn({2, 3, 5}, torch::kDouble);
  const auto on = mtaConvolution(maps, kernel, spec::MtaPad::Left, true, true);
  setFusedAttentionEnabled(false);
  const auto off = mtaConvolution(maps, kernel, spec::MtaPad::Left, true, true);
  setFusedAttentionEnabled(true);
  EXPECT_LE(maxAbsDiff(on, off), 1e-12);
  EXPECT_LE(maxAbsDiff(on, mtaConvolutionAten(maps, kernel, 4, true, true)), 1e-12);
  EXPECT_THROW(fusedMtaConvolution(maps, torch::randn({3, 3, 5}, torch::kDouble), 0, true, false), std::invalid_argument);
  EXPECT_THROW(fusedMtaConvolution(maps, kernel, 5, true, false), std::invalid_argument);
  EXPECT_THROW(fusedMtaConvolution(maps, kernel.to(torch::kFloat), 0, true, false), std::invalid_argument);
  EXPECT_THROW(fusedMtaConvolution(maps.to(torch::kLong), kernel.to(torch::kLong), 0, true, false), std::invalid_argument);
}

}  // namespace tensorscope::model_core
