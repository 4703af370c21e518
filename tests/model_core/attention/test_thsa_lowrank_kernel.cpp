// The fused low-rank THSA kernel (kernels/thsa_lowrank.h through lowRankThsaAttention), C = U·Vᵀ,
// against the contract's equation with the effective C written with einsum in float64: Ω and the
// gradients of q, k, v, U and V; causal and full; N = 1 and N ending inside a 32-row block; ranks
// 1, below and above H; 1-3 threads and a single sequence (grouped accumulators); finite
// differences; causal no-leak; float32 against float64; and the low_rank preset equals MHSA.

#include <ATen/Parallel.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "attention/attention_module.h"
#include "attention/thsa_fused.h"
#include "thsa_kernel_checks.h"
#include "spec/attention_spec.h"

using namespace tensorscope::model_core;
using namespace tensorscope::model_core::testing;

namespace {

void checkAgainstEinsum(int64_t B, int64_t N, int64_t R, int64_t rank, bool causal) {
  SCOPED_TRACE("B=" + std::to_string(B) + " N=" + std::to_string(N) + " R=" + std::to_string(R) +
               " rank=" + std::to_string(rank) + (causal ? " causal" : " full"));
  torch::manual_seed(400 + N + R * 3 + rank);
  const auto opts = torch::TensorOptions().dtype(torch::kDouble);
  const auto x = torch::randn({B, N, 3, R}, opts);
  const auto U0 = torch::randn({R, rank}, opts), V0 = torch::randn({R, rank}, opts);
  const auto G = torch::randn({B, N, R}, opts);
  const double scale = 1.0 / std::sqrt(double(R));
  auto leaf = [](const torch::Tensor& t) { return t.clone().requires_grad_(true); };
  const auto xa = leaf(x), Ua = leaf(U0), Va = leaf(V0);
  const auto fused = lowRankThsaAttention(xa, Ua, Va, scale, causal);
  (fused * G).sum().backward();
  const auto xb = leaf(x), Ub = leaf(U0), Vb = leaf(V0);
  const auto ref = einsumThsa(xb, torch::matmul(Ub, Vb.t()), scale, causal);
  (ref * G).sum().backward();
  EXPECT_EQ(fused.sizes(), (std::vector<int64_t>{B, N, R}));
  EXPECT_LT(maxAbsDiff(fused, ref), 1e-12);
  EXPECT_LT(maxAbsDiff(xa.grad(), xb.grad()), 1e-11);
  EXPECT_LT(maxAbsDiff(Ua.grad(), Ub.grad()), 1e-10);
  EXPECT_LT(maxAbsDiff(Va.grad(), Vb.grad()), 1e-10);
}

}  // namespace

TEST(LowRankThsaKernel, MatchesTheEquationsAndTheirGradients) {
  const int before = at::get_num_threads();
  for (int threads : {1, 2, 3}) {
    SCOPED_TRACE("threads=" + std::to_string(threads));
    at::set_num_threads(threads);
    for (bool causal : {true, false}) {
      for (int64_t N : {1, 5, 33, 70}) checkAgainstEinsum(2, N, 6, 2, causal);
      checkAgainstEinsum(1, 90, 10, 3, causal);  // one sequence: grouped accumulators
      checkAgainstEinsum(3, 40, 7, 1, causal);   // rank one
      checkAgainstEinsum(2, 36, 5, 5, causal);   // full rank
    }
  }
  at::set_num_threads(before);
}

TEST(LowRankThsaKernel, GradientMatchesFiniteDifferences) {
  torch::manual_seed(31);
  const auto opts = torch::TensorOptions().dtype(torch::kDouble);
  const auto x = torch::randn({2, 37, 3, 6}, opts), G = torch::randn({2, 37, 6}, opts);
  const auto U = torch::randn({6, 2}, opts), V = torch::randn({6, 2}, opts);
  for (bool causal : {true, false}) {
    std::vector<torch::Tensor> leaves = {x.clone(), U.clone(), V.clone()};
    for (auto& t : leaves) t.requires_grad_(true);
    (lowRankThsaAttention(leaves[0], leaves[1], leaves[2], 0.45, causal) * G).sum().backward();
    expectFiniteDifferences({x, U, V}, {leaves[0].grad(), leaves[1].grad(), leaves[2].grad()},
                            [&](const std::vector<torch::Tensor>& in) {
                              torch::NoGradGuard noGrad;
                              return (lowRankThsaAttention(in[0], in[1], in[2], 0.45, causal) * G).sum().item<double>();
                            },
                            causal ? "causal" : "full");
  }
}

TEST(LowRankThsaKernel, CausalOutputsIgnoreLaterTokens) {
  torch::manual_seed(32);
  const auto U = torch::randn({6, 3}, torch::kDouble), V = torch::randn({6, 3}, torch::kDouble);
  expectCausalNoLeak(torch::randn({2, 50, 3, 6}, torch::kDouble),
                     [&](const torch::Tensor& in) { return lowRankThsaAttention(in, U, V, 0.4, true); }, {0, 31, 45},
                     "low rank");
}

TEST(LowRankThsaKernel, Float32AgreesWithFloat64) {
  torch::manual_seed(33);
  const auto x = torch::randn({3, 67, 3, 12}, torch::kDouble);
  const auto U = torch::randn({12, 3}, torch::kDouble) * 0.6, V = torch::randn({12, 3}, torch::kDouble) * 0.6;
  for (bool causal : {true, false}) {
    const auto d = lowRankThsaAttention(x, U, V, 0.3, causal);
    const auto f = lowRankThsaAttention(x.to(torch::kFloat), U.to(torch::kFloat), V.to(torch::kFloat), 0.3, causal);
    EXPECT_LT(maxAbsDiff(f.to(torch::kDouble), d), 2e-5);
  }
}

TEST(LowRankThsaKernel, LowRankPresetEqualsMhsa) {
  // rank H with U = V = H^¼·(I_H ⊗ 1_D): U·Vᵀ = √H·(I_H ⊗ 1·1ᵀ), the mhsa preset, so the layer
  // computes MHSA exactly (same weights); its number of heads (stable rank of C) is H.
  for (bool causal : {true, false}) {
    auto t = tensorscope::spec::makeSpecPreset("core:low_rank");
    auto m = tensorscope::spec::makeSpecPreset("core:mhsa");
    t.causal = m.causal = causal;
    torch::manual_seed(5);
    auto a = makeAttentionModule(t);
    torch::manual_seed(5);
    auto b = makeAttentionModule(m);
    a->to(torch::kDouble);
    b->to(torch::kDouble);
    {
      torch::NoGradGuard noGrad;
      for (const char* w : {"wq", "wk", "wv", "wo"})
        a->named_parameters()[std::string(w) + ".weight"].copy_(b->named_parameters()[std::string(w) + ".weight"]);
    }
    const auto x = torch::randn({2, 20, t.sizes.F}, torch::kDouble);
    // U and V are built in float32 (as every module parameter) before the move to float64, so
    // H^¼·H^¼ equals √H to float precision only.
    EXPECT_LT(maxAbsDiff(a->forward(x, {}).y, b->forward(x, {}).y), 1e-6) << (causal ? "causal" : "full");
  }
}

TEST(LowRankThsaKernel, RejectsWhatItCannotCompute) {
  const auto x = torch::zeros({2, 4, 3, 6});
  EXPECT_THROW(lowRankThsaAttention(x, torch::zeros({6, 2}), torch::zeros({6, 3}), 1.0, true), std::invalid_argument);
  EXPECT_THROW(lowRankThsaAttention(x, torch::zeros({5, 2}), torch::zeros({5, 2}), 1.0, true), std::invalid_argument);
  EXPECT_THROW(lowRankThsaAttention(x, torch::zeros({6, 2}, torch::kDouble), torch::zeros({6, 2}, torch::kDouble), 1.0,
                                    true),
               std::invalid_argument);
}
