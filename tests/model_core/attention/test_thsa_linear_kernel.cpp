// The fused linear THSA kernel (kernels/thsa_linear.h through linearThsaAttention) against the
// contract's section 4 written with einsum and cumulative sums in float64: Ω and the gradients of
// q, k, v and C; causal (checkpointed reverse scan: N across several 32-position chunks, N = 1) and
// full; R not a multiple of any vector width; 1-3 threads and a single sequence (grouped partial
// sums); finite differences; causal no-leak; float32 (vectorised φ) against float64.

#include <ATen/Parallel.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "attention/thsa_fused.h"
#include "thsa_kernel_checks.h"

using namespace tensorscope::model_core;
using namespace tensorscope::model_core::testing;

namespace {

torch::Tensor referenceLinear(const torch::Tensor& qkv, const torch::Tensor& C, bool causal) {
  const auto q = qkv.select(2, 0), k = qkv.select(2, 1), v = qkv.select(2, 2);  // [B, N, R]
  const auto phi = torch::elu(torch::einsum("rs,bns->bnrs", {C, q})) + 1.0;       // φ(C_r ⊙ q_n)
  const auto K = torch::elu(k) + 1.0;                                              // φ(k_m)
  auto S = torch::einsum("bms,bmr->bmsr", {K, v});                                 // K_m v_mᵀ
  auto z = K;
  if (causal) {
    S = S.cumsum(1);
    z = z.cumsum(1);
  } else {
    S = S.sum(1, true).expand_as(S);
    z = z.sum(1, true).expand_as(z);
  }
  const auto num = torch::einsum("bnrs,bnsr->bnr", {phi, S});
  const auto den = torch::einsum("bnrs,bns->bnr", {phi, z});
  return num / den;
}

void checkAgainstReference(int64_t B, int64_t N, int64_t R, bool causal) {
  SCOPED_TRACE("B=" + std::to_string(B) + " N=" + std::to_string(N) + " R=" + std::to_string(R) +
               (causal ? " causal" : " full"));
  torch::manual_seed(300 + N + R);
  const auto opts = torch::TensorOptions().dtype(torch::kDouble);
  const auto x = torch::randn({B, N, 3, R}, opts);
  const auto C0 = torch::randn({R, R}, opts);
  const auto G = torch::randn({B, N, R}, opts);
  const auto a = x.clone().requires_grad_(true), Ca = C0.clone().requires_grad_(true);
  const auto fused = linearThsaAttention(a, Ca, causal);
  (fused * G).sum().backward();
  const auto b = x.clone().requires_grad_(true), Cb = C0.clone().requires_grad_(true);
  const auto ref = referenceLinear(b, Cb, causal);
  (ref * G).sum().backward();
  EXPECT_EQ(fused.sizes(), (std::vector<int64_t>{B, N, R}));
  EXPECT_LT(maxAbsDiff(fused, ref), 1e-12);
  EXPECT_LT(maxAbsDiff(a.grad(), b.grad()), 1e-10);
  EXPECT_LT(maxAbsDiff(Ca.grad(), Cb.grad()), 1e-9);
}

}  // namespace

TEST(LinearThsaKernel, MatchesTheEquationsAndTheirGradients) {
  const int before = at::get_num_threads();
  for (int threads : {1, 2, 3}) {
    SCOPED_TRACE("threads=" + std::to_string(threads));
    at::set_num_threads(threads);
    for (bool causal : {true, false}) {
      for (int64_t N : {1, 5, 32, 33, 70}) checkAgainstReference(2, N, 6, causal);
      checkAgainstReference(1, 100, 19, causal);  // one sequence: grouped partial sums
      checkAgainstReference(4, 40, 3, causal);
      checkAgainstReference(2, 37, 70, causal);  // two forward panels (64 + 16 padded channels)
      checkAgainstReference(1, 40, 150, causal);  // three panels; two backward channel blocks (109 + 41)
    }
  }
  at::set_num_threads(before);
}

TEST(LinearThsaKernel, GradientMatchesFiniteDifferences) {
  torch::manual_seed(21);
  const auto opts = torch::TensorOptions().dtype(torch::kDouble);
  const auto x = torch::randn({2, 41, 3, 5}, opts), C = torch::randn({5, 5}, opts);
  const auto G = torch::randn({2, 41, 5}, opts);
  for (bool causal : {true, false}) {
    const auto a = x.clone().requires_grad_(true), Ca = C.clone().requires_grad_(true);
    (linearThsaAttention(a, Ca, causal) * G).sum().backward();
    expectFiniteDifferences({x, C}, {a.grad(), Ca.grad()}, [&](const std::vector<torch::Tensor>& in) {
      torch::NoGradGuard noGrad;
      return (linearThsaAttention(in[0], in[1], causal) * G).sum().item<double>();
    }, causal ? "causal" : "full");
  }
}

TEST(LinearThsaKernel, CausalOutputsIgnoreLaterTokens) {
  torch::manual_seed(22);
  const auto C = torch::randn({6, 6}, torch::kDouble);
  expectCausalNoLeak(torch::randn({2, 70, 3, 6}, torch::kDouble),
                     [&](const torch::Tensor& in) { return linearThsaAttention(in, C, true); }, {0, 31, 32, 65},
                     "linear");
}

TEST(LinearThsaKernel, Float32AgreesWithFloat64) {
  for (int64_t R : {21, 70}) {  // one panel; two panels and padded channels
    SCOPED_TRACE("R=" + std::to_string(R));
    torch::manual_seed(23);
    const auto x = torch::randn({3, 90, 3, R}, torch::kDouble);
    const auto C = torch::randn({R, R}, torch::kDouble) * (21.0 / double(R));
    const auto G = torch::randn({3, 90, R}, torch::kDouble);
    for (bool causal : {true, false}) {
      const auto xd = x.clone().requires_grad_(true), xf = x.to(torch::kFloat).requires_grad_(true);
      const auto d = linearThsaAttention(xd, C, causal);
      const auto f = linearThsaAttention(xf, C.to(torch::kFloat), causal);
      (d * G).sum().backward();
      (f * G.to(torch::kFloat)).sum().backward();
      EXPECT_LT(maxAbsDiff(f.to(torch::kDouble), d) / d.abs().max().item<double>(), 1e-5);
      EXPECT_LT(maxAbsDiff(xf.grad().to(torch::kDouble), xd.grad()) / xd.grad().abs().max().item<double>(), 1e-4);
    }
  }
}

TEST(LinearThsaKernel, RejectsWhatItCannotCompute) {
  EXPECT_THROW(linearThsaAttention(torch::zeros({2, 4, 2, 3}), torch::zeros({3, 3}), true), std::invalid_argument);
  EXPECT_THROW(linearThsaAttention(torch::zeros({2, 4, 3, 3}), torch::zeros({2, 2}), true), std::invalid_argument);
  EXPECT_THROW(linearThsaAttention(torch::zeros({2, 4, 3, 3}), torch::zeros({3, 3}, torch::kDouble), true),
               std::invalid_argument);
}
