// The fused dense-core THSA kernel (kernels/thsa_dense.h through denseThsaAttention) against the
// contract's equations written with einsum in float64: Ω, and the gradients of q, k, v and C, for
// causal and full layers; sizes that end inside a 32-row block, N = 1, R not a multiple of any
// vector width, several channel blocks and groups (the partial-accumulator path), 1-3 threads;
// central finite differences; causal no-leak; float32 (vectorised exp) against float64.

#include <ATen/Parallel.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "attention/thsa_fused.h"
#include "thsa_kernel_checks.h"

using namespace tensorscope::model_core;
using namespace tensorscope::model_core::testing;

namespace {

void checkAgainstEinsum(int64_t B, int64_t N, int64_t R, bool causal) {
  SCOPED_TRACE("B=" + std::to_string(B) + " N=" + std::to_string(N) + " R=" + std::to_string(R) +
               (causal ? " causal" : " full"));
  torch::manual_seed(100 + N * 3 + R);
  const auto opts = torch::TensorOptions().dtype(torch::kDouble);
  const auto x = torch::randn({B, N, 3, R}, opts);
  const auto C0 = torch::randn({R, R}, opts);
  const auto G = torch::randn({B, N, R}, opts);  // weights of the scalar loss Σ Ω ⊙ G
  const double scale = 1.0 / std::sqrt(double(R));

  const auto a = x.clone().requires_grad_(true), Ca = C0.clone().requires_grad_(true);
  const auto fused = denseThsaAttention(a, Ca, scale, causal);
  (fused * G).sum().backward();
  const auto b = x.clone().requires_grad_(true), Cb = C0.clone().requires_grad_(true);
  const auto ref = einsumThsa(b, Cb, scale, causal);
  (ref * G).sum().backward();

  EXPECT_EQ(fused.sizes(), (std::vector<int64_t>{B, N, R}));
  EXPECT_LT(maxAbsDiff(fused, ref), 1e-12);
  EXPECT_LT(maxAbsDiff(a.grad(), b.grad()), 1e-11);
  EXPECT_LT(maxAbsDiff(Ca.grad(), Cb.grad()), 1e-10);
}

}  // namespace

TEST(DenseThsaKernel, MatchesTheEquationsAndTheirGradients) {
  const int before = at::get_num_threads();
  for (int threads : {1, 2, 3}) {
    SCOPED_TRACE("threads=" + std::to_string(threads));
    at::set_num_threads(threads);
    for (bool causal : {true, false}) {
      for (int64_t N : {1, 5, 32, 33, 70}) checkAgainstEinsum(2, N, 6, causal);
      checkAgainstEinsum(1, 45, 17, causal);  // 3 channel blocks, one sequence: grouped accumulators
      checkAgainstEinsum(3, 40, 1, causal);   // one channel
      checkAgainstEinsum(5, 64, 9, causal);   // several sequences per thread
    }
    checkAgainstEinsum(1, 130, 20, true);  // long rows: fewer channels per block
  }
  at::set_num_threads(before);
}

TEST(DenseThsaKernel, GradientMatchesFiniteDifferences) {
  torch::manual_seed(9);
  const auto opts = torch::TensorOptions().dtype(torch::kDouble);
  const auto x = torch::randn({2, 37, 3, 5}, opts), C = torch::randn({5, 5}, opts);
  const auto G = torch::randn({2, 37, 5}, opts);
  for (bool causal : {true, false}) {
    const auto a = x.clone().requires_grad_(true), Ca = C.clone().requires_grad_(true);
    (denseThsaAttention(a, Ca, 0.6, causal) * G).sum().backward();
    expectFiniteDifferences({x, C}, {a.grad(), Ca.grad()}, [&](const std::vector<torch::Tensor>& in) {
      torch::NoGradGuard noGrad;
      return (denseThsaAttention(in[0], in[1], 0.6, causal) * G).sum().item<double>();
    }, causal ? "causal" : "full");
  }
}

TEST(DenseThsaKernel, CausalOutputsIgnoreLaterTokens) {
  torch::manual_seed(4);
  const auto C = torch::randn({7, 7}, torch::kDouble);
  expectCausalNoLeak(torch::randn({2, 50, 3, 7}, torch::kDouble),
                     [&](const torch::Tensor& in) { return denseThsaAttention(in, C, 0.4, true); }, {0, 31, 32, 48},
                     "dense");
}

TEST(DenseThsaKernel, Float32AgreesWithFloat64) {
  torch::manual_seed(5);
  const auto x = torch::randn({3, 70, 3, 19}, torch::kDouble);
  const auto C = torch::randn({19, 19}, torch::kDouble) * 0.5;
  const auto G = torch::randn({3, 70, 19}, torch::kDouble);
  for (bool causal : {true, false}) {
    const auto xd = x.clone().requires_grad_(true), Cd = C.clone().requires_grad_(true);
    const auto xf = x.to(torch::kFloat).requires_grad_(true), Cf = C.to(torch::kFloat).requires_grad_(true);
    const auto d = denseThsaAttention(xd, Cd, 0.3, causal);
    const auto f = denseThsaAttention(xf, Cf, 0.3, causal);
    (d * G).sum().backward();
    (f * G.to(torch::kFloat)).sum().backward();
    EXPECT_EQ(f.scalar_type(), torch::kFloat);
    EXPECT_LT(maxAbsDiff(f.to(torch::kDouble), d), 2e-5);
    EXPECT_LT(maxAbsDiff(xf.grad().to(torch::kDouble), xd.grad()), 1e-4);
    EXPECT_LT(maxAbsDiff(Cf.grad().to(torch::kDouble), Cd.grad()) / Cd.grad().abs().max().item<double>(), 1e-5);
  }
}

TEST(DenseThsaKernel, GradientIsDeterministicAcrossRuns) {
  // dC is summed from per-thread partials in a fixed order: repeated runs agree bit for bit.
  const int before = at::get_num_threads();
  at::set_num_threads(3);
  torch::manual_seed(8);
  const auto x = torch::randn({4, 33, 3, 10});
  const auto C = torch::randn({10, 10});
  torch::Tensor first;
  for (int run = 0; run < 4; ++run) {
    const auto Cr = C.clone().requires_grad_(true);
    denseThsaAttention(x, Cr, 0.3, true).sum().backward();
    if (run == 0) first = Cr.grad().clone();
    else EXPECT_TRUE(torch::equal(first, Cr.grad())) << "run " << run;
  }
  at::set_num_threads(before);
}

TEST(DenseThsaKernel, RejectsWhatItCannotCompute) {
  EXPECT_THROW(denseThsaAttention(torch::zeros({2, 4, 2, 3}), torch::zeros({3, 3}), 1.0, true), std::invalid_argument);
  EXPECT_THROW(denseThsaAttention(torch::zeros({2, 4, 3, 3}), torch::zeros({4, 4}), 1.0, true), std::invalid_argument);
  EXPECT_THROW(denseThsaAttention(torch::zeros({2, 4, 3, 3}), torch::zeros({3, 3}, torch::kDouble), 1.0, true),
               std::invalid_argument);
  EXPECT_THROW(denseThsaAttention(torch::zeros({2, 4, 3, 3}, torch::kLong), torch::zeros({3, 3}, torch::kLong), 1.0,
                                  true),
               std::invalid_argument);
}
