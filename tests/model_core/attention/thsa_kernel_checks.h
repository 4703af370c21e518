#pragma once
// Shared checks of the fused THSA kernel tests (test_thsa_*_kernel.cpp): the contract's equation
// with an effective C written with einsum, central finite differences and causal no-leak.

#include <gtest/gtest.h>
#include <torch/types.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

namespace tensorscope::model_core::testing {

inline double maxAbsDiff(const torch::Tensor& a, const torch::Tensor& b) { return (a - b).abs().max().item<double>(); }

/// Ω[b,n,r] = Σ_m softmax_m(scale·Σ_s C[r,s] q[b,n,s] k[b,m,s])·v[b,m,r] (docs/attention-variants.md §3),
/// from qkv [B, N, 3, R]; future keys get -inf when causal.
inline torch::Tensor einsumThsa(const torch::Tensor& qkv, const torch::Tensor& C, double scale, bool causal) {
  const auto q = qkv.select(2, 0), k = qkv.select(2, 1), v = qkv.select(2, 2);  // [B, N, R]
  auto logits = torch::einsum("rs,bns,bms->brnm", {C, q, k}) * scale;
  if (causal) {
    const auto N = q.size(1);
    logits = logits.masked_fill(torch::ones({N, N}, torch::kBool).triu(1), -std::numeric_limits<double>::infinity());
  }
  return torch::einsum("brnm,bmr->bnr", {torch::softmax(logits, -1), v});
}

/// Central differences (step 1e-6, float64) of `loss` in entries 0, n/3 + 1, n/2 and n - 1 of each
/// input against the analytic gradients `grads` (same order as `inputs`).
inline void expectFiniteDifferences(const std::vector<torch::Tensor>& inputs, const std::vector<torch::Tensor>& grads,
                                    const std::function<double(const std::vector<torch::Tensor>&)>& loss,
                                    const std::string& what) {
  const double eps = 1e-6;
  for (size_t which = 0; which < inputs.size(); ++which) {
    const int64_t n = inputs[which].numel();
    for (int64_t index : {int64_t(0), n / 3 + 1, n / 2, n - 1}) {
      if (index >= n) continue;
      auto plus = inputs, minus = inputs;
      plus[which] = plus[which].clone();
      minus[which] = minus[which].clone();
      plus[which].view({-1})[index] += eps;
      minus[which].view({-1})[index] -= eps;
      const double numeric = (loss(plus) - loss(minus)) / (2 * eps);
      EXPECT_NEAR(grads[which].view({-1})[index].item<double>(), numeric, 1e-7 * (1 + std::abs(numeric)))
          << what << " input " << which << " entry " << index;
    }
  }
}

/// Redrawing the tokens after position i leaves outputs 0..i of `run` unchanged, bit for bit.
inline void expectCausalNoLeak(const torch::Tensor& x, const std::function<torch::Tensor(const torch::Tensor&)>& run,
                               const std::vector<int64_t>& positions, const std::string& what) {
  const auto before = run(x);
  const int64_t N = x.size(1);
  for (int64_t i : positions) {
    auto changed = x.clone();
    changed.narrow(1, i + 1, N - i - 1).normal_();
    EXPECT_EQ(maxAbsDiff(run(changed).narrow(1, 0, i + 1), before.narrow(1, 0, i + 1)), 0.0)
        << what << " position " << i;
  }
}

}  // namespace tensorscope::model_core::testing
