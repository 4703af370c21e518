// The fused CPU attention kernel (mhsa, fixed_head, tp and THSA cores equal to MHSA run on it)
// against the same math written with plain ATen ops, in float64: outputs, probabilities and the
// gradient of q, k, v, for causal and full layers, with sequences that span several causal row
// blocks (32 rows each) and ones that end inside a block; plus central finite differences.

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "attention/attention_module.h"
#include "attention/fused_attention.h"
#include "spec/attention_spec.h"

using namespace tensorscope::model_core;

namespace {

struct Naive {
  torch::Tensor o, P;  // [B, N, H, D], [B, H, N, N]
};

/// softmax(scale·q·kᵀ, masked)·v with ATen ops, from qkv [B, N, 3, H, D].
Naive naiveAttention(const torch::Tensor& qkv, double scale, bool causal) {
  const auto q = qkv.select(2, 0).transpose(1, 2), k = qkv.select(2, 1).transpose(1, 2),
             v = qkv.select(2, 2).transpose(1, 2);  // [B, H, N, D]
  auto S = torch::matmul(q, k.transpose(-2, -1)) * scale;
  if (causal) {
    const auto n = S.size(-1);
    S = S.masked_fill(torch::ones({n, n}, torch::kBool).triu(1), -std::numeric_limits<double>::infinity());
  }
  const auto P = torch::softmax(S, -1);
  return {torch::matmul(P, v).transpose(1, 2), P};
}

double maxAbsDiff(const torch::Tensor& a, const torch::Tensor& b) { return (a - b).abs().max().item<double>(); }

void checkAgainstNaive(int64_t B, int64_t N, int64_t H, int64_t D, bool causal) {
  SCOPED_TRACE("B=" + std::to_string(B) + " N=" + std::to_string(N) + " H=" + std::to_string(H) +
               " D=" + std::to_string(D) + (causal ? " causal" : " full"));
  torch::manual_seed(1000 + N * 7 + H);
  const auto opts = torch::TensorOptions().dtype(torch::kDouble);
  const auto base = torch::randn({B, N, 3, H, D}, opts);
  const auto G = torch::randn({B, N, H, D}, opts);  // weights of the scalar loss Σ o ⊙ G
  const double scale = 1.0 / std::sqrt(double(D));

  const auto a = base.clone().requires_grad_(true);
  const auto fused = fusedAttention(a, scale, causal);
  (fused.o * G).sum().backward();

  const auto b = base.clone().requires_grad_(true);
  const auto naive = naiveAttention(b, scale, causal);
  (naive.o * G).sum().backward();

  EXPECT_EQ(fused.o.sizes(), (std::vector<int64_t>{B, N, H, D}));
  EXPECT_TRUE(fused.o.is_contiguous());
  EXPECT_FALSE(fused.P.requires_grad());
  EXPECT_LT(maxAbsDiff(fused.o, naive.o), 1e-12);
  EXPECT_LT(maxAbsDiff(fused.P, naive.P), 1e-12);
  EXPECT_LT(maxAbsDiff(a.grad(), b.grad()), 1e-11);
  if (causal) {
    // Nothing above the diagonal: the probabilities there are exactly zero.
    EXPECT_EQ(fused.P.masked_select(torch::ones({N, N}, torch::kBool).triu(1)).abs().sum().item<double>(), 0.0);
  }
  // Each row of P is a distribution.
  EXPECT_LT(maxAbsDiff(fused.P.sum(-1), torch::ones({B, H, N}, opts)), 1e-12);
}

}  // namespace

TEST(FusedAttention, MatchesAtenAttentionAndItsGradients) {
  // With one thread and with several (pairs of heads then run concurrently, each calling BLAS).
  const int before = at::get_num_threads();
  for (int threads : {1, 2, 3}) {
    SCOPED_TRACE("threads=" + std::to_string(threads));
    at::set_num_threads(threads);
    for (bool causal : {true, false})
      for (int64_t N : {1, 5, 31, 32, 33, 70, 96})
        checkAgainstNaive(2, N, 3, 4, causal);
    checkAgainstNaive(3, 40, 1, 7, true);   // one head
    checkAgainstNaive(1, 65, 4, 32, true);  // the benchmark's head size
    checkAgainstNaive(8, 64, 4, 16, true);  // many pairs per thread
  }
  at::set_num_threads(before);
}

TEST(FusedAttention, GradientMatchesFiniteDifferences) {
  // Independent of any ATen formula: central differences of Σ o ⊙ G in single entries of q, k, v.
  torch::manual_seed(7);
  const auto opts = torch::TensorOptions().dtype(torch::kDouble);
  const int64_t B = 2, N = 45, H = 2, D = 3;
  const auto x = torch::randn({B, N, 3, H, D}, opts);
  const auto G = torch::randn({B, N, H, D}, opts);
  for (bool causal : {true, false}) {
    const auto a = x.clone().requires_grad_(true);
    (fusedAttention(a, 0.7, causal).o * G).sum().backward();
    const auto grad = a.grad().view({-1});
    const auto loss = [&](const torch::Tensor& t) {
      torch::NoGradGuard noGrad;
      return (fusedAttention(t, 0.7, causal).o * G).sum().item<double>();
    };
    for (int64_t index : {int64_t(0), int64_t(17), x.numel() / 3 + 5, x.numel() / 2, x.numel() - 1,
                          int64_t(40 * 3 * H * D + 2)}) {
      auto plus = x.clone(), minus = x.clone();
      const double eps = 1e-6;
      plus.view({-1})[index] += eps;
      minus.view({-1})[index] -= eps;
      const double numeric = (loss(plus) - loss(minus)) / (2 * eps);
      EXPECT_NEAR(grad[index].item<double>(), numeric, 1e-7 * (1 + std::abs(numeric)))
          << (causal ? "causal" : "full") << " entry " << index;
    }
  }
}

TEST(FusedAttention, Float32AgreesWithFloat64) {
  torch::manual_seed(3);
  const auto x = torch::randn({2, 50, 3, 2, 8}, torch::kDouble);
  for (bool causal : {true, false}) {
    const auto d = fusedAttention(x, 0.35, causal);
    const auto f = fusedAttention(x.to(torch::kFloat), 0.35, causal);
    EXPECT_EQ(f.o.scalar_type(), torch::kFloat);
    EXPECT_LT(maxAbsDiff(f.o.to(torch::kDouble), d.o), 1e-5);
  }
}

TEST(FusedAttention, KroneckerCoresWithIdentityBMatchTheirAtenFormulation) {
  // s·(A ⊗ I) runs as D dense kernels of width H (one per latent d); A trainable, fixed or I.
  using tensorscope::spec::FactorKind;
  for (FactorKind ka : {FactorKind::Trainable, FactorKind::Fixed, FactorKind::Identity})
    for (bool causal : {true, false}) {
      SCOPED_TRACE(std::string(tensorscope::spec::toString(ka)) + (causal ? " causal" : " full"));
      auto s = tensorscope::spec::makeSpecPreset("skip_right");
      s.causal = causal;
      s.sizes.seq_len = 37;
      s.core->preset = "custom";
      s.core->scale = 0.7;
      s.core->a.kind = ka;
      s.core->a.values.clear();
      if (ka != FactorKind::Identity)
        for (int i = 0; i < s.sizes.H * s.sizes.H; ++i) s.core->a.values.push_back(0.3 * ((i * 7) % 5) - 0.4);
      s.core->b = {FactorKind::Identity, {}, true};
      torch::manual_seed(4);
      auto m = makeAttentionModule(s);
      m->to(torch::kDouble);
      const auto x0 = torch::randn({3, 37, s.sizes.F}, torch::kDouble);
      const auto G = torch::randn({3, 37, s.sizes.F}, torch::kDouble);
      auto run = [&](bool fused) {
        setFusedAttentionEnabled(fused);
        m->zero_grad();
        const auto x = x0.clone().requires_grad_(true);
        const auto out = m->forward(x, {true, true});
        (out.y * G).sum().backward();
        std::vector<torch::Tensor> r = {out.y.detach(), out.maps, x.grad().clone()};
        for (const auto& p : m->parameters()) r.push_back(p.grad().defined() ? p.grad().clone() : torch::zeros({1}));
        setFusedAttentionEnabled(true);
        return r;
      };
      const auto a = run(true), b = run(false);
      ASSERT_EQ(a.size(), b.size());
      for (size_t i = 0; i < a.size(); ++i) EXPECT_LT(maxAbsDiff(a[i], b[i]), 1e-11) << "item " << i;
    }
}

TEST(FusedAttention, RejectsWhatItCannotCompute) {
  EXPECT_THROW(fusedAttention(torch::zeros({2, 4, 2, 2, 3}), 1.0, true), std::invalid_argument);  // not 3 on axis 2
  EXPECT_THROW(fusedAttention(torch::zeros({4, 3, 2, 3}), 1.0, true), std::invalid_argument);     // not 5-D
  EXPECT_THROW(fusedAttention(torch::zeros({1, 4, 3, 2, 3}, torch::kLong), 1.0, true), std::invalid_argument);
  EXPECT_FALSE(fusedAttentionSupports(torch::zeros({1}, torch::kHalf)));
  EXPECT_TRUE(fusedAttentionSupports(torch::zeros({1}, torch::kFloat)));
}

TEST(FusedAttention, NonContiguousInputIsAccepted) {
  // A permuted view (last axis not contiguous) is copied once and gives the same result.
  torch::manual_seed(11);
  const auto x = torch::randn({2, 3, 2, 20, 3}, torch::kDouble);  // [B, H, D, N, 3] laid out oddly
  const auto view = x.permute({0, 3, 4, 1, 2});                    // [B, N, 3, H, D], strided
  const auto r1 = fusedAttention(view, 0.5, true);
  const auto r2 = fusedAttention(view.contiguous(), 0.5, true);
  EXPECT_LT(maxAbsDiff(r1.o, r2.o), 1e-15);
}

TEST(FusedAttention, ModulesMatchTheirAtenFormulation) {
  // The layers that run on the kernel give the same outputs, maps, roles and gradients (input and
  // every parameter) as the ATen formulation they use on CUDA, for causal and full attention.
  // Every parameter is perturbed first, so THSA cores are general matrices, not their presets.
  for (const char* preset : {"mhsa", "fixed_head", "tp", "core:mhsa", "heads_only", "thsa", "core:thsa",
                             "trainable_heads_only", "core:trainable_heads_only", "skip_left", "core:skip_left",
                             "skip_right", "core:skip_right", "single_head", "core:single_head", "thsa_linear", "core:low_rank"})
    for (bool causal : {true, false}) {
      SCOPED_TRACE(std::string(preset) + (causal ? " causal" : " full"));
      auto s = tensorscope::spec::makeSpecPreset(preset);
      s.causal = causal;
      s.sizes.seq_len = 40;
      torch::manual_seed(3);
      auto m = makeAttentionModule(s);
      m->to(torch::kDouble);
      {
        torch::NoGradGuard noGrad;
        for (auto& p : m->parameters()) p.add_(torch::randn_like(p) * 0.3);
      }
      const auto x0 = torch::randn({2, 40, s.sizes.F}, torch::kDouble);
      const auto G = torch::randn({2, 40, s.sizes.F}, torch::kDouble);
      struct Run {
        AttentionOutput out;
        std::vector<torch::Tensor> grads;
      };
      auto run = [&](bool fused) {
        setFusedAttentionEnabled(fused);
        m->zero_grad();
        const auto x = x0.clone().requires_grad_(true);
        Run r;
        r.out = m->forward(x, {true, true});
        (r.out.y * G).sum().backward();
        r.grads.push_back(x.grad().clone());
        for (const auto& p : m->parameters()) r.grads.push_back(p.grad().defined() ? p.grad().clone() : torch::Tensor());
        setFusedAttentionEnabled(true);
        return r;
      };
      const Run a = run(true), b = run(false);
      EXPECT_LT(maxAbsDiff(a.out.y, b.out.y), 1e-12);
      ASSERT_TRUE(a.out.maps.defined() && b.out.maps.defined());
      EXPECT_EQ(a.out.maps.sizes(), b.out.maps.sizes());
      EXPECT_LT(maxAbsDiff(a.out.maps, b.out.maps), 1e-12);
      EXPECT_EQ(a.out.roles.defined(), b.out.roles.defined());
      if (a.out.roles.defined()) {
        EXPECT_LT(maxAbsDiff(a.out.roles, b.out.roles), 1e-15);
      }
      ASSERT_EQ(a.grads.size(), b.grads.size());
      for (size_t i = 0; i < a.grads.size(); ++i) {
        ASSERT_EQ(a.grads[i].defined(), b.grads[i].defined()) << "gradient " << i;
        if (a.grads[i].defined()) {
          EXPECT_LT(maxAbsDiff(a.grads[i], b.grads[i]), 1e-11) << "gradient " << i;
        }
      }
    }
}
