// The fused head-map THSA kernel (kernels/thsa_heads.h through headMapThsaAttention) for cores
// s·(A ⊗ 1·1ᵀ) and s·(A ⊗ c₂c₃ᵀ), A the identity or any H×H matrix, against the contract's
// equation with the effective C = s·(A ⊗ B) written with einsum in float64: Ω and the gradients of
// q, k, v, A, c₂ and c₃; causal and full; N = 1, N ending inside a 32-row block; 1-3 threads and a
// single sequence (grouped accumulators); finite differences; causal no-leak; float32 vs float64.

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

struct Core {
  bool mixA = false, rank1 = false;
};

std::string name(const Core& c) {
  return std::string(c.mixA ? "A" : "I") + " ⊗ " + (c.rank1 ? "c2c3ᵀ" : "11ᵀ");
}

void checkAgainstEinsum(int64_t B, int64_t N, int64_t H, int64_t D, Core core, bool causal) {
  SCOPED_TRACE(name(core) + " B=" + std::to_string(B) + " N=" + std::to_string(N) + " H=" + std::to_string(H) +
               " D=" + std::to_string(D) + (causal ? " causal" : " full"));
  torch::manual_seed(200 + N * 5 + H + D);
  const auto opts = torch::TensorOptions().dtype(torch::kDouble);
  const int64_t R = H * D;
  const auto x = torch::randn({B, N, 3, R}, opts);
  const auto G = torch::randn({B, N, R}, opts);
  const auto A0 = torch::randn({H, H}, opts), c20 = torch::randn({D}, opts), c30 = torch::randn({D}, opts);
  const double s = 0.8, scale = s / std::sqrt(double(R));

  auto leaf = [](const torch::Tensor& t) { return t.clone().requires_grad_(true); };
  const auto xa = leaf(x), Aa = leaf(A0), c2a = leaf(c20), c3a = leaf(c30);
  const auto fused = headMapThsaAttention(xa, H, core.mixA ? Aa : torch::Tensor(), core.rank1 ? c2a : torch::Tensor(),
                                          core.rank1 ? c3a : torch::Tensor(), scale, causal);
  (fused * G).sum().backward();

  const auto xb = leaf(x), Ab = leaf(A0), c2b = leaf(c20), c3b = leaf(c30);
  const auto Af = core.mixA ? Ab : torch::eye(H, opts);
  const auto Bf = core.rank1 ? torch::outer(c2b, c3b) : torch::ones({D, D}, opts);
  const auto ref = einsumThsa(xb, torch::kron(Af, Bf) * s, 1.0 / std::sqrt(double(R)), causal);
  (ref * G).sum().backward();

  EXPECT_EQ(fused.sizes(), (std::vector<int64_t>{B, N, R}));
  EXPECT_LT(maxAbsDiff(fused, ref), 1e-12);
  EXPECT_LT(maxAbsDiff(xa.grad(), xb.grad()), 1e-11);
  if (core.mixA) EXPECT_LT(maxAbsDiff(Aa.grad(), Ab.grad()), 1e-10);
  else EXPECT_FALSE(Aa.grad().defined());
  if (core.rank1) {
    EXPECT_LT(maxAbsDiff(c2a.grad(), c2b.grad()), 1e-10);
    EXPECT_LT(maxAbsDiff(c3a.grad(), c3b.grad()), 1e-10);
  }
}

const Core kCores[] = {{false, false}, {true, false}, {false, true}, {true, true}};

}  // namespace

TEST(HeadMapThsaKernel, MatchesTheEquationsAndTheirGradients) {
  const int before = at::get_num_threads();
  for (int threads : {1, 2, 3}) {
    SCOPED_TRACE("threads=" + std::to_string(threads));
    at::set_num_threads(threads);
    for (const Core& core : kCores)
      for (bool causal : {true, false}) {
        for (int64_t N : {1, 5, 33, 70}) checkAgainstEinsum(2, N, 3, 4, core, causal);
        checkAgainstEinsum(1, 90, 2, 5, core, causal);  // one sequence: grouped accumulators
        checkAgainstEinsum(4, 40, 4, 3, core, causal);  // several sequences per thread
      }
  }
  at::set_num_threads(before);
}

TEST(HeadMapThsaKernel, GradientMatchesFiniteDifferences) {
  torch::manual_seed(12);
  const auto opts = torch::TensorOptions().dtype(torch::kDouble);
  const int64_t H = 2, D = 3, R = H * D;
  const auto x = torch::randn({2, 35, 3, R}, opts), G = torch::randn({2, 35, R}, opts);
  const auto A = torch::randn({H, H}, opts), c2 = torch::randn({D}, opts), c3 = torch::randn({D}, opts);
  for (bool causal : {true, false}) {
    std::vector<torch::Tensor> leaves = {x.clone(), A.clone(), c2.clone(), c3.clone()};
    for (auto& t : leaves) t.requires_grad_(true);
    (headMapThsaAttention(leaves[0], H, leaves[1], leaves[2], leaves[3], 0.5, causal) * G).sum().backward();
    std::vector<torch::Tensor> grads;
    for (const auto& t : leaves) grads.push_back(t.grad());
    expectFiniteDifferences({x, A, c2, c3}, grads, [&](const std::vector<torch::Tensor>& in) {
      torch::NoGradGuard noGrad;
      return (headMapThsaAttention(in[0], H, in[1], in[2], in[3], 0.5, causal) * G).sum().item<double>();
    }, causal ? "causal" : "full");
  }
}

TEST(HeadMapThsaKernel, CausalOutputsIgnoreLaterTokens) {
  torch::manual_seed(6);
  const auto x = torch::randn({2, 45, 3, 8}, torch::kDouble);
  const auto A = torch::randn({2, 2}, torch::kDouble);
  const auto c2 = torch::randn({4}, torch::kDouble), c3 = torch::randn({4}, torch::kDouble);
  for (const Core& core : kCores)
    expectCausalNoLeak(x, [&](const torch::Tensor& in) {
      return headMapThsaAttention(in, 2, core.mixA ? A : torch::Tensor(), core.rank1 ? c2 : torch::Tensor(),
                                  core.rank1 ? c3 : torch::Tensor(), 0.4, true);
    }, {0, 31, 40}, name(core));
}

TEST(HeadMapThsaKernel, Float32AgreesWithFloat64) {
  torch::manual_seed(13);
  const auto x = torch::randn({3, 67, 3, 12}, torch::kDouble);
  const auto A = torch::randn({3, 3}, torch::kDouble) * 0.7;
  const auto c2 = torch::randn({4}, torch::kDouble), c3 = torch::randn({4}, torch::kDouble);
  for (const Core& core : kCores)
    for (bool causal : {true, false}) {
      auto run = [&](torch::ScalarType t) {
        return headMapThsaAttention(x.to(t), 3, core.mixA ? A.to(t) : torch::Tensor(),
                                    core.rank1 ? c2.to(t) : torch::Tensor(), core.rank1 ? c3.to(t) : torch::Tensor(),
                                    0.3, causal);
      };
      EXPECT_LT(maxAbsDiff(run(torch::kFloat).to(torch::kDouble), run(torch::kDouble)), 2e-5) << name(core);
    }
}

TEST(HeadMapThsaKernel, RejectsWhatItCannotCompute) {
  const auto x = torch::zeros({2, 4, 3, 6});
  EXPECT_THROW(headMapThsaAttention(x, 4, {}, {}, {}, 1.0, true), std::invalid_argument);                    // 6 % 4
  EXPECT_THROW(headMapThsaAttention(x, 2, torch::zeros({3, 3}), {}, {}, 1.0, true), std::invalid_argument);  // A shape
  EXPECT_THROW(headMapThsaAttention(x, 2, {}, torch::zeros({3}), {}, 1.0, true), std::invalid_argument);     // c3 missing
  EXPECT_THROW(headMapThsaAttention(x, 2, {}, torch::zeros({3}, torch::kDouble), torch::zeros({3}, torch::kDouble), 1.0,
                                    true),
               std::invalid_argument);  // dtype
}
