// The fused talking-heads core (attention/fused_talking_heads.h) against its oracle, the ATen
// formulation talkingHeadsWeights(q, k, C, C′)·v with autograd through every op: values and the
// gradients of q, k, v and both mixings in float64, with either mixing, both or none, causal or
// not, square and rectangular maps, row blocks that split the rows unevenly; float32; head views
// of projections and repeated key heads read in place; 1-3 threads; second derivatives; the
// layer's dispatch and the argument checks; a rectangular C′ [L, H] (differential attention's
// pair of maps per head) and the differential layer's training path on it.

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <ATen/Parallel.h>

#include <array>
#include <stdexcept>
#include <vector>
#include <string>

#include "attention/attention_module.h"
#include "attention/fused_attention.h"
#include "attention/fused_talking_heads.h"
#include "attention/talking_heads.h"
#include "spec/attention_spec.h"

namespace tensorscope::model_core {
namespace {

double maxAbsDiff(const torch::Tensor& a, const torch::Tensor& b) {
  return (a.to(torch::kDouble) - b.to(torch::kDouble)).abs().max().item<double>();
}

struct Case {
  torch::Tensor q, k, v, pre, post, g;
};

Case makeCase(int64_t B, int64_t H, int64_t N, int64_t M, int64_t Dk, int64_t Dv, int which) {
  const auto o = torch::kDouble;
  // The operands as the layers pass them: head views [B, H, N, D] of [B, N, H, D] projections.
  return {torch::randn({B, N, H, Dk}, o).transpose(1, 2), torch::randn({B, M, H, Dk}, o).transpose(1, 2),
          torch::randn({B, M, H, Dv}, o).transpose(1, 2), (which & 1) ? torch::randn({H, H}, o) : torch::Tensor(),
          (which & 2) ? torch::randn({H, H}, o) : torch::Tensor(), torch::randn({B, H, N, Dv}, o)};
}

/// The output and the gradients of q, k, v and the mixings present, fused or by the oracle.
std::vector<torch::Tensor> run(const Case& c, torch::ScalarType dtype, bool causal, bool fused, int64_t rows = 0) {
  const auto leaf = [&](const torch::Tensor& t) {
    return t.defined() ? t.detach().to(dtype).requires_grad_(true) : torch::Tensor();
  };
  const auto q = leaf(c.q), k = leaf(c.k), v = leaf(c.v), pre = leaf(c.pre), post = leaf(c.post);
  const double scale = 0.4;
  const auto y = fused ? fusedTalkingHeads(q, k, v, pre, post, scale, causal, rows)
                       : torch::matmul(talkingHeadsWeights(q, k, pre, post, scale, causal), v);
  (y * c.g.to(dtype)).sum().backward();
  std::vector<torch::Tensor> out = {y.detach(), q.grad(), k.grad(), v.grad()};
  if (pre.defined()) out.push_back(pre.grad());
  if (post.defined()) out.push_back(post.grad());
  return out;
}

void expectSame(const std::vector<torch::Tensor>& a, const std::vector<torch::Tensor>& b, double tol,
                const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  const char* names[] = {"o", "dq", "dk", "dv", "first mixing", "second mixing"};
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_TRUE(a[i].defined() && b[i].defined()) << names[i] << ", " << what;
    const double scale = std::max(1.0, b[i].abs().max().item<double>());
    EXPECT_LE(maxAbsDiff(a[i], b[i]), tol * scale) << names[i] << ", " << what;
  }
}

}  // namespace

TEST(FusedTalkingHeads, EqualsTheAtenFormulationWithEveryGradient) {
  torch::manual_seed(61);
  struct Shape { int64_t N, M; };
  for (const Shape sh : {Shape{13, 13}, Shape{9, 14}, Shape{14, 9}, Shape{1, 5}, Shape{40, 40}})
    for (int which : {0, 1, 2, 3})
      for (bool causal : {false, true})
        for (int64_t rows : {0, 1, 4, 7}) {
          const std::string what = "N " + std::to_string(sh.N) + ", M " + std::to_string(sh.M) + ", mixings " +
                                   std::to_string(which) + (causal ? ", causal" : "") + ", rows " + std::to_string(rows);
          const auto c = makeCase(2, 3, sh.N, sh.M, 4, 5, which);
          const auto want = run(c, torch::kDouble, causal, false);
          expectSame(run(c, torch::kDouble, causal, true, rows), want, 1e-12, what);
          if (rows == 0) expectSame(run(c, torch::kFloat, causal, true, rows), want, 3e-5, what + ", float32");
        }
}

TEST(FusedTalkingHeads, ReadsRepeatedKeyHeadsAndSplitsOverThreads) {
  // Key and value heads shared by pairs of query heads (GQA-style repeat) and contiguous operands,
  // 1-3 threads: one answer, the oracle's.
  torch::manual_seed(7);
  auto c = makeCase(3, 4, 21, 21, 6, 6, 3);
  c.k = torch::randn({3, 2, 21, 6}, torch::kDouble).repeat_interleave(2, 1);
  c.v = torch::randn({3, 21, 2, 6}, torch::kDouble).transpose(1, 2).repeat_interleave(2, 1);
  c.q = c.q.contiguous();
  const auto want = run(c, torch::kDouble, true, false);
  const int threads = at::get_num_threads();
  for (int t : {1, 2, 3}) {
    at::set_num_threads(t);
    expectSame(run(c, torch::kDouble, true, true), want, 1e-12, std::to_string(t) + " threads");
  }
  at::set_num_threads(threads);
}

TEST(FusedTalkingHeads, SecondDerivativesFollowTheAtenFormulation) {
  torch::manual_seed(3);
  const auto c = makeCase(1, 2, 5, 5, 3, 3, 3);
  const auto second = [&](bool fused) {
    // q with positions not a head apart (the fused core reads a contiguous copy; the graph must
    // still reach q) and a transposed mixing.
    const auto q = c.q.detach().transpose(2, 3).contiguous().transpose(2, 3).requires_grad_(true);
    const auto pre = c.pre.detach().t().contiguous().t().requires_grad_(true),
               post = c.post.detach().requires_grad_(true);
    const auto y = fused ? fusedTalkingHeads(q, c.k, c.v, pre, post, 0.5, true)
                         : torch::matmul(talkingHeadsWeights(q, c.k, pre, post, 0.5, true), c.v);
    const auto d = torch::autograd::grad({(y * y).sum()}, {q, post}, {}, true, true);
    return torch::autograd::grad({d[0].pow(2).sum() + d[1].pow(2).sum()}, {q, pre, post});
  };
  const auto a = second(true), b = second(false);
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_GT(b[i].abs().max().item<double>(), 1e-3) << i;
    EXPECT_LE(maxAbsDiff(a[i], b[i]), 1e-10 * (1 + b[i].abs().max().item<double>())) << i;
  }
}

TEST(FusedTalkingHeads, TheLayersCoreTakesItAndTheArgumentsAreChecked) {
  // talkingHeadsRecomputed (the layer's training path) runs the fused kernel unless the fused kernels
  // are off (then the checkpointed ATen core): the same values and gradients either way.
  torch::manual_seed(4);
  const auto c = makeCase(2, 3, 8, 8, 4, 4, 3);
  const auto viaLayer = [&]() {
    const auto q = c.q.detach().requires_grad_(true), pre = c.pre.detach().requires_grad_(true);
    const auto y = talkingHeadsRecomputed(q, c.k, c.v, pre, c.post, 0.5, true);
    (y * c.g).sum().backward();
    return std::vector<torch::Tensor>{y.detach(), q.grad(), pre.grad()};
  };
  const auto on = viaLayer();
  setFusedAttentionEnabled(false);
  const auto off = viaLayer();
  setFusedAttentionEnabled(true);
  for (size_t i = 0; i < on.size(); ++i) EXPECT_LE(maxAbsDiff(on[i], off[i]), 1e-12) << i;
  EXPECT_THROW(fusedTalkingHeads(c.q, c.k.narrow(3, 0, 3), c.v, c.pre, c.post, 0.5, true), std::invalid_argument);
  EXPECT_THROW(fusedTalkingHeads(c.q, c.k, c.v, torch::randn({2, 3}, torch::kDouble), c.post, 0.5, true),
               std::invalid_argument);
  EXPECT_THROW(fusedTalkingHeads(c.q, c.k, c.v, c.pre.to(torch::kFloat), c.post, 0.5, true), std::invalid_argument);
  EXPECT_THROW(fusedTalkingHeads(c.q.to(torch::kFloat), c.k, c.v, c.pre, c.post, 0.5, true), std::invalid_argument);
}

TEST(FusedTalkingHeads, EmptyBatchesQueriesAndKeysGiveEmptyOrZeroResults) {
  // No batch entry, no query (every key gradient 0) or one query: no crash, the oracle's answer.
  torch::manual_seed(9);
  for (const auto& [B, N, M] : std::vector<std::array<int64_t, 3>>{{0, 4, 4}, {2, 0, 5}, {2, 1, 1}}) {
    const auto c = makeCase(B, 2, N, M, 3, 3, 3);
    const auto got = run(c, torch::kDouble, true, true);
    EXPECT_EQ(got[0].sizes(), (std::vector<int64_t>{B, 2, N, 3}));
    if (N == 0) {
      EXPECT_EQ(got[2].abs().sum().item<double>(), 0.0) << "keys no query reaches";
    }
    if (B * N > 0) expectSame(got, run(c, torch::kDouble, true, false), 1e-12, "one query");
  }
}

}  // namespace tensorscope::model_core

namespace tensorscope::model_core {

TEST(FusedTalkingHeads, ARectangularPostMixingFeedsLValueHeads) {
  // C′ [L, H] mixes the H maps into L heads that meet v [B, L, M, Dv]: every gradient against the
  // oracle in float64, with and without C^pre, causal or not, rows split unevenly (3-row blocks).
  torch::manual_seed(41);
  const int64_t B = 2, H = 5, L = 3, N = 7, M = 7, Dk = 4, Dv = 6;
  for (const bool withPre : {false, true})
    for (const bool causal : {true, false}) {
      const auto o = torch::kDouble;
      Case c{torch::randn({B, N, H, Dk}, o).transpose(1, 2), torch::randn({B, M, H, Dk}, o).transpose(1, 2),
             torch::randn({B, M, L, Dv}, o).transpose(1, 2), withPre ? torch::randn({H, H}, o) : torch::Tensor(),
             torch::randn({L, H}, o), torch::randn({B, L, N, Dv}, o)};
      const std::string what = std::string(withPre ? "C^pre and " : "") + "C′ [3, 5], " + (causal ? "causal" : "full");
      const auto fused = run(c, torch::kDouble, causal, true, 3), aten = run(c, torch::kDouble, causal, false);
      expectSame(fused, aten, 1e-12, what);
      EXPECT_EQ(fused[0].sizes(), (std::vector<int64_t>{B, L, N, Dv})) << what;
      EXPECT_EQ(fused.back().sizes(), (std::vector<int64_t>{L, H})) << what;
    }
  const auto c = makeCase(2, 4, 5, 5, 3, 3, 0);
  EXPECT_THROW(fusedTalkingHeads(c.q, c.k, c.v, torch::Tensor(), torch::randn({3, 4}, torch::kDouble), 0.5, true),
               std::invalid_argument)
      << "v has 4 heads, C′ makes 3";
  EXPECT_THROW(fusedTalkingHeads(c.q, c.k, c.v, torch::Tensor(), torch::randn({4, 3}, torch::kDouble), 0.5, true),
               std::invalid_argument)
      << "C′ mixes 3 maps, q has 4";
}

TEST(FusedTalkingHeads, DifferentialAttentionTrainsOnItWithThePairMixedBeforeTheValues) {
  // The differential layer while training (no maps asked) takes the talking-heads core with C′
  // [H, 2H] = (1, −λ) per pair; asked for maps it takes the grouped kernel with o_h = o_h,0 −
  // λ·o_h,1. Same outputs and the same gradient of every parameter (λ's four vectors included),
  // float64, causal or not.
  for (const bool causal : {true, false}) {
    auto s = spec::makeSpecPreset("diff");
    s.causal = causal;
    torch::manual_seed(42);
    AttentionModule m = makeAttentionModule(s, 3);
    m->to(torch::kDouble);
    for (auto& p : m->parameters()) p.data().add_(torch::randn_like(p) * 0.3);  // λ away from its start
    const auto x = torch::randn({2, 9, s.sizes.F}, torch::kDouble);
    const auto pass = [&](bool maps) {
      m->zero_grad();
      ForwardOptions options;
      options.with_maps = maps;
      const auto y = m->forward(x, options).y;
      (y * torch::cos(y)).sum().backward();
      std::vector<torch::Tensor> out = {y.detach()};
      for (const auto& p : m->named_parameters()) out.push_back(p.value().grad().clone());
      return out;
    };
    const auto mixed = pass(false), grouped = pass(true);
    ASSERT_EQ(mixed.size(), grouped.size());
    const auto names = m->named_parameters().keys();
    for (size_t i = 0; i < mixed.size(); ++i)
      EXPECT_LE(maxAbsDiff(mixed[i], grouped[i]), 1e-12 * std::max(1.0, grouped[i].abs().max().item<double>()))
          << (i == 0 ? std::string("y") : names[i - 1]) << (causal ? ", causal" : ", full");
    EXPECT_GT(mixed.back().abs().sum().item<double>() + mixed[1].abs().sum().item<double>(), 0.0);
  }
}

}  // namespace tensorscope::model_core
