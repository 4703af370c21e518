// The grouped form of the fused CPU attention kernel (fusedGroupedAttention: q [B,N,H,Dk],
// k [B,M,G,Dk], v [B,M,G,Dv], head h reads group h / (H/G)) against a float64 reference written
// from the equations (one head at a time, its group's key and value indexed directly) and against
// the ATen formulation the modules used before (keys and values repeated per head); outputs,
// probabilities and the gradients of q, k and v; finite differences; and the layers routed
// through it (MQA, GQA, differential attention, MLA's absorbed order) against their ATen paths.

#include <ATen/Parallel.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "attention/attention_module.h"
#include "attention/fused_attention.h"
#include "reference.h"
#include "spec/attention_spec.h"

namespace tensorscope::model_core::test {
namespace {

struct Result {
  torch::Tensor o, P;  // [B, N, H, Dv], [B, H, N, M]
};

/// The equations, head by head: S = scale·q_h·k_gᵀ with g = h / (H/G), −∞ where m > n (causal),
/// P = softmax_m(S), o_h = P·v_g.
Result referenceFromEquations(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v, double scale,
                              bool causal) {
  const int64_t B = q.size(0), N = q.size(1), H = q.size(2), M = k.size(1), G = k.size(2), per = H / G;
  std::vector<torch::Tensor> outs, maps;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h) {
      const auto qh = q[b].select(1, h), kg = k[b].select(1, h / per), vg = v[b].select(1, h / per);
      auto S = torch::mm(qh, kg.t()) * scale;  // [N, M]
      if (causal) {
        const auto n = torch::arange(N, torch::kLong).unsqueeze(1), m = torch::arange(M, torch::kLong).unsqueeze(0);
        S = S.masked_fill(m > n, -std::numeric_limits<double>::infinity());
      }
      const auto P = torch::softmax(S, -1);
      maps.push_back(P);
      outs.push_back(torch::mm(P, vg));  // [N, Dv]
    }
  const auto Dv = v.size(3);
  return {torch::stack(outs).view({B, H, N, Dv}).transpose(1, 2), torch::stack(maps).view({B, H, N, M})};
}

/// What MhsaImpl did before the grouped kernel: k and v repeated per head (repeat_interleave), then
/// batched matmuls.
Result atenRepeated(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v, double scale, bool causal) {
  const int64_t H = q.size(2), G = k.size(2), N = q.size(1), M = k.size(1);
  const auto kh = k.repeat_interleave(H / G, 2).transpose(1, 2), vh = v.repeat_interleave(H / G, 2).transpose(1, 2);
  auto S = torch::matmul(q.transpose(1, 2), kh.transpose(-2, -1)) * scale;
  if (causal) S = S.masked_fill(torch::ones({N, M}, torch::kBool).triu(1), -std::numeric_limits<double>::infinity());
  const auto P = torch::softmax(S, -1);
  return {torch::matmul(P, vh).transpose(1, 2), P};
}

double maxAbsDiff(const torch::Tensor& a, const torch::Tensor& b) { return (a - b).abs().max().item<double>(); }

struct Case {
  int64_t B, N, M, H, G, Dk, Dv;
  bool causal;
  std::string name() const {
    return "B=" + std::to_string(B) + " N=" + std::to_string(N) + " M=" + std::to_string(M) + " H=" +
           std::to_string(H) + " G=" + std::to_string(G) + " Dk=" + std::to_string(Dk) + " Dv=" + std::to_string(Dv) +
           (causal ? " causal" : " full");
  }
};

/// Fused vs both references: outputs, P and the gradients of Σ o ⊙ W in q, k and v.
void checkCase(const Case& c, torch::ScalarType dtype) {
  SCOPED_TRACE(c.name() + (dtype == torch::kFloat ? " float32" : " float64"));
  torch::manual_seed(500 + c.N * 11 + c.M * 3 + c.G);
  const auto d = torch::TensorOptions().dtype(torch::kDouble);
  const auto q0 = torch::randn({c.B, c.N, c.H, c.Dk}, d), k0 = torch::randn({c.B, c.M, c.G, c.Dk}, d),
             v0 = torch::randn({c.B, c.M, c.G, c.Dv}, d), W = torch::randn({c.B, c.N, c.H, c.Dv}, d);
  const double scale = 1.0 / std::sqrt(double(c.Dk));
  // A fresh leaf each time (to() of the same dtype would return the tensor itself and share its grad).
  auto leaf = [](const torch::Tensor& t, torch::ScalarType s) { return t.to(s).clone().requires_grad_(true); };

  const auto q = leaf(q0, dtype), k = leaf(k0, dtype), v = leaf(v0, dtype);
  const auto fused = fusedGroupedAttention(q, k, v, scale, c.causal);
  (fused.o * W.to(dtype)).sum().backward();
  EXPECT_EQ(fused.o.sizes(), (std::vector<int64_t>{c.B, c.N, c.H, c.Dv}));
  EXPECT_EQ(fused.P.sizes(), (std::vector<int64_t>{c.B, c.H, c.N, c.M}));
  EXPECT_TRUE(fused.o.is_contiguous());
  EXPECT_FALSE(fused.P.requires_grad());
  EXPECT_EQ(fused.o.scalar_type(), dtype);

  const auto qr = leaf(q0, torch::kDouble), kr = leaf(k0, torch::kDouble), vr = leaf(v0, torch::kDouble);
  const auto ref = referenceFromEquations(qr, kr, vr, scale, c.causal);
  (ref.o * W).sum().backward();
  const auto qa = leaf(q0, torch::kDouble), ka = leaf(k0, torch::kDouble), va = leaf(v0, torch::kDouble);
  const auto aten = atenRepeated(qa, ka, va, scale, c.causal);
  (aten.o * W).sum().backward();

  const double tol = dtype == torch::kDouble ? 1e-12 : 2e-5, gtol = dtype == torch::kDouble ? 1e-11 : 1e-4;
  const auto D = [](const torch::Tensor& t) { return t.to(torch::kDouble); };
  for (const auto* r : {&ref, &aten}) {
    EXPECT_LT(maxAbsDiff(D(fused.o), r->o), tol);
    EXPECT_LT(maxAbsDiff(D(fused.P), r->P), tol);
  }
  for (const auto& [g, gr, ga] : {std::tuple{q.grad(), qr.grad(), qa.grad()}, std::tuple{k.grad(), kr.grad(), ka.grad()},
                                  std::tuple{v.grad(), vr.grad(), va.grad()}}) {
    ASSERT_TRUE(g.defined());
    EXPECT_EQ(g.sizes(), gr.sizes());
    EXPECT_LT(maxAbsDiff(D(g), gr), gtol * (1 + gr.abs().max().item<double>()));
    EXPECT_LT(maxAbsDiff(D(g), ga), gtol * (1 + ga.abs().max().item<double>()));
  }
  if (c.causal && c.N > 1 && c.M > 1) {  // nothing above the diagonal
    const auto above = torch::ones({c.N, c.M}, torch::kBool).triu(1);
    EXPECT_EQ(fused.P.masked_select(above).abs().sum().item<double>(), 0.0);
  }
}

}  // namespace

TEST(GroupedAttention, MatchesTheEquationsAndTheRepeatedAtenFormulation) {
  // G ∈ {1, 2, H}, Dv ≠ Dk, odd N and M (M ≠ N for full layers; causal with N = M and both ways
  // round, top-left aligned as SDPA's is_causal), blocks of 32 rows crossed, 1–3 threads (with one
  // (batch, group) and 3 threads a group's heads are split into chunks, one of them empty).
  const int before = at::get_num_threads();
  for (int threads : {1, 2, 3}) {
    SCOPED_TRACE("threads=" + std::to_string(threads));
    at::set_num_threads(threads);
    for (auto dtype : {torch::kDouble, torch::kFloat})
      for (int64_t G : {1, 2, 4})
        for (bool causal : {true, false}) {
          checkCase({2, 37, causal ? 37 : 29, 4, G, 5, 3, causal}, dtype);
          checkCase({1, 5, causal ? 5 : 41, 4, G, 6, 9, causal}, dtype);
          checkCase({1, 71, 71, 4, G, 8, 8, causal}, dtype);
          checkCase({3, 1, causal ? 1 : 7, 4, G, 3, 2, causal}, dtype);
        }
    checkCase({1, 9, 13, 4, 2, 5, 3, true}, torch::kDouble);   // causal, more keys than queries
    checkCase({1, 13, 9, 4, 1, 5, 3, true}, torch::kDouble);   // causal, fewer keys than queries
    checkCase({1, 40, 40, 6, 3, 4, 7, false}, torch::kDouble);  // three groups of two heads
  }
  at::set_num_threads(before);
}

TEST(GroupedAttention, GradientMatchesFiniteDifferences) {
  torch::manual_seed(17);
  const auto d = torch::TensorOptions().dtype(torch::kDouble);
  const int64_t B = 2, N = 35, M = 35, H = 4, G = 2, Dk = 3, Dv = 5;
  const auto q0 = torch::randn({B, N, H, Dk}, d), k0 = torch::randn({B, M, G, Dk}, d),
             v0 = torch::randn({B, M, G, Dv}, d), W = torch::randn({B, N, H, Dv}, d);
  for (bool causal : {true, false}) {
    SCOPED_TRACE(causal ? "causal" : "full");
    auto q = q0.clone().requires_grad_(true), k = k0.clone().requires_grad_(true), v = v0.clone().requires_grad_(true);
    (fusedGroupedAttention(q, k, v, 0.6, causal).o * W).sum().backward();
    const auto loss = [&](const torch::Tensor& a, const torch::Tensor& b, const torch::Tensor& c) {
      torch::NoGradGuard noGrad;
      return (fusedGroupedAttention(a, b, c, 0.6, causal).o * W).sum().item<double>();
    };
    for (int which = 0; which < 3; ++which) {
      const auto& base = which == 0 ? q0 : which == 1 ? k0 : v0;
      const auto grad = (which == 0 ? q : which == 1 ? k : v).grad().reshape({-1});
      for (int64_t index : {int64_t(0), int64_t(7), base.numel() / 2 + 1, base.numel() - 1}) {
        const double eps = 1e-6;
        auto plus = base.clone(), minus = base.clone();
        plus.view({-1})[index] += eps;
        minus.view({-1})[index] -= eps;
        const double numeric = which == 0   ? (loss(plus, k0, v0) - loss(minus, k0, v0)) / (2 * eps)
                               : which == 1 ? (loss(q0, plus, v0) - loss(q0, minus, v0)) / (2 * eps)
                                            : (loss(q0, k0, plus) - loss(q0, k0, minus)) / (2 * eps);
        EXPECT_NEAR(grad[index].item<double>(), numeric, 1e-7 * (1 + std::abs(numeric)))
            << "tensor " << which << " entry " << index;
      }
    }
  }
}

TEST(GroupedAttention, ReadsSlicesOfAFusedProjectionInPlace) {
  // q, k, v as narrow()s of one [B, N, H·Dk + G·Dk + G·Dv] projection (rows H·Dk + … apart) and
  // a head-major transposed q: the same results and gradients as contiguous copies.
  torch::manual_seed(23);
  const int64_t B = 2, N = 33, H = 4, G = 2, Dk = 6, Dv = 4;
  const auto y0 = torch::randn({B, N, H * Dk + G * Dk + G * Dv}, torch::kDouble);
  const auto W = torch::randn({B, N, H, Dv}, torch::kDouble);
  for (bool causal : {true, false}) {
    auto y = y0.clone().requires_grad_(true);
    const auto q = y.narrow(-1, 0, H * Dk).view({B, N, H, Dk});
    const auto k = y.narrow(-1, H * Dk, G * Dk).view({B, N, G, Dk});
    const auto v = y.narrow(-1, H * Dk + G * Dk, G * Dv).view({B, N, G, Dv});
    const auto a = fusedGroupedAttention(q, k, v, 0.4, causal);
    (a.o * W).sum().backward();
    auto y2 = y0.clone().requires_grad_(true);
    const auto b = fusedGroupedAttention(y2.narrow(-1, 0, H * Dk).reshape({B, N, H, Dk}).contiguous(),
                                         y2.narrow(-1, H * Dk, G * Dk).reshape({B, N, G, Dk}).contiguous(),
                                         y2.narrow(-1, H * Dk + G * Dk, G * Dv).reshape({B, N, G, Dv}).contiguous(),
                                         0.4, causal);
    (b.o * W).sum().backward();
    EXPECT_LT(maxAbsDiff(a.o, b.o), 1e-14);
    EXPECT_LT(maxAbsDiff(y.grad(), y2.grad()), 1e-14);
    // Heads laid out [B, H, N, D] and transposed: positions Dk apart, heads N·Dk apart.
    const auto qt = q.transpose(1, 2).contiguous().transpose(1, 2);
    EXPECT_LT(maxAbsDiff(fusedGroupedAttention(qt, k, v, 0.4, causal).o, a.o), 1e-14);
    // A last axis that is not contiguous is copied once.
    const auto qs = q.transpose(1, 3).contiguous().transpose(1, 3);
    EXPECT_LT(maxAbsDiff(fusedGroupedAttention(qs, k, v, 0.4, causal).o, a.o), 1e-14);
  }
}

TEST(GroupedAttention, TheQkvEntryIsTheGroupedKernelWithAllHeads) {
  // fusedAttention(qkv) is the grouped kernel on three views of one buffer: the same numbers.
  torch::manual_seed(29);
  const auto x0 = torch::randn({2, 45, 3, 4, 8}, torch::kDouble);
  const auto W = torch::randn({2, 45, 4, 8}, torch::kDouble);
  for (bool causal : {true, false}) {
    auto x = x0.clone().requires_grad_(true), x2 = x0.clone().requires_grad_(true);
    const auto a = fusedAttention(x, 0.3, causal);
    const auto b = fusedGroupedAttention(x2.select(2, 0), x2.select(2, 1), x2.select(2, 2), 0.3, causal);
    (a.o * W).sum().backward();
    (b.o * W).sum().backward();
    EXPECT_LT(maxAbsDiff(a.o, b.o), 1e-14);
    EXPECT_LT(maxAbsDiff(a.P, b.P), 1e-14);
    EXPECT_LT(maxAbsDiff(x.grad(), x2.grad()), 1e-13);
  }
}

TEST(GroupedAttention, RejectsWhatItCannotCompute) {
  const auto q = torch::zeros({1, 4, 4, 3}), k = torch::zeros({1, 4, 2, 3}), v = torch::zeros({1, 4, 2, 5});
  EXPECT_NO_THROW(fusedGroupedAttention(q, k, v, 1.0, true));
  EXPECT_THROW(fusedGroupedAttention(q, torch::zeros({1, 4, 3, 3}), torch::zeros({1, 4, 3, 5}), 1.0, true),
               std::invalid_argument);  // 3 groups do not divide 4 heads
  EXPECT_THROW(fusedGroupedAttention(q, torch::zeros({1, 4, 2, 2}), v, 1.0, true), std::invalid_argument);  // Dk
  EXPECT_THROW(fusedGroupedAttention(q, k, torch::zeros({1, 5, 2, 5}), 1.0, true), std::invalid_argument);  // M
  EXPECT_THROW(fusedGroupedAttention(q, k, torch::zeros({2, 4, 2, 5}), 1.0, true), std::invalid_argument);  // B
  EXPECT_THROW(fusedGroupedAttention(q, torch::zeros({1, 0, 2, 3}), torch::zeros({1, 0, 2, 5}), 1.0, false),
               std::invalid_argument);  // no keys
  EXPECT_THROW(fusedGroupedAttention(q.view({4, 4, 3}), k, v, 1.0, true), std::invalid_argument);  // 3-D
  EXPECT_THROW(fusedGroupedAttention(q.to(torch::kDouble), k, v, 1.0, true), std::invalid_argument);  // dtypes
  EXPECT_THROW(fusedGroupedAttention(q.to(torch::kLong), k.to(torch::kLong), v.to(torch::kLong), 1.0, true),
               std::invalid_argument);
  try {
    fusedGroupedAttention(q, torch::zeros({1, 4, 3, 3}), torch::zeros({1, 4, 3, 5}), 1.0, true);
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("divide"), std::string::npos) << e.what();
  }
}

TEST(GroupedAttention, LayersOnTheGroupedKernelMatchTheirAtenFormulation) {
  // MQA, GQA, differential attention (shared and unshared) and MLA's absorbed order run on the
  // grouped kernel; with the fused kernels off they take the ATen formulation, their oracle:
  // outputs, maps, map parts and the gradients of the input and every parameter, in float64.
  struct Layer {
    const char* preset;
    int kvGroups;  // 0: the preset's
    bool absorbed;
  };
  for (const Layer& layer : {Layer{"mqa", 0, false}, Layer{"gqa", 0, false}, Layer{"diff", 0, false},
                             Layer{"diff", 2, false}, Layer{"mla", 0, true}})
    for (bool causal : {true, false}) {
      auto s = spec::makeSpecPreset(layer.preset);
      s.causal = causal;
      s.sizes.seq_len = 37;
      if (layer.kvGroups) s.slots.kv_groups = layer.kvGroups;
      if (layer.absorbed) s.slots.latent.order = spec::LatentOrder::Absorbed;
      const std::string what = std::string(layer.preset) + (layer.absorbed ? " absorbed" : "") +
                               (layer.kvGroups ? " G=" + std::to_string(layer.kvGroups) : "") +
                               (causal ? " causal" : " full");
      SCOPED_TRACE(what);
      AttentionModule m = buildDouble(s, 41);
      perturbParameters(*m, 42);
      const auto x0 = randomInput(2, 37, s.sizes.F, 43);
      const auto W = randomInput(2, 37, s.sizes.F, 44);
      struct Run {
        AttentionOutput out;
        std::vector<torch::Tensor> grads;
      };
      auto run = [&](bool fused) {
        setFusedAttentionEnabled(fused);
        m->zero_grad();
        const auto x = x0.clone().requires_grad_(true);
        Run r;
        r.out = m->forward(x, {true, false});
        (r.out.y * W).sum().backward();
        r.grads.push_back(x.grad().clone());
        for (const auto& p : m->parameters()) r.grads.push_back(p.grad().defined() ? p.grad().clone() : torch::Tensor());
        setFusedAttentionEnabled(true);
        return r;
      };
      const Run a = run(true), b = run(false);
      expectClose(a.out.y, b.out.y, 1e-12, what + " y");
      expectClose(a.out.maps, b.out.maps, 1e-12, what + " maps");
      EXPECT_EQ(a.out.map_parts.defined(), b.out.map_parts.defined());
      if (a.out.map_parts.defined()) expectClose(a.out.map_parts, b.out.map_parts, 1e-12, what + " map parts");
      ASSERT_EQ(a.grads.size(), b.grads.size());
      for (size_t i = 0; i < a.grads.size(); ++i) {
        ASSERT_EQ(a.grads[i].defined(), b.grads[i].defined()) << "gradient " << i;
        if (a.grads[i].defined()) expectClose(a.grads[i], b.grads[i], 1e-11, what + " gradient " + std::to_string(i));
      }
    }
}

TEST(GroupedAttention, MlaAbsorbedOnTheKernelEqualsMlaNaiveWithGradients) {
  // Same weights: the absorbed order on the grouped kernel is the naive order's function, and so
  // are the gradients of the input and of every (shared-name) parameter.
  // Without the rotary part (rope_dim 0) the absorbed query is the per-head product alone.
  for (bool causal : {true, false})
    for (int qRank : {0, 3})
      for (bool rope : {true, false}) {
        SCOPED_TRACE(std::string(causal ? "causal" : "full") + " q_rank=" + std::to_string(qRank) +
                     (rope ? "" : " rope_dim=0"));
        auto naiveSpec = spec::makeSpecPreset("mla");
        naiveSpec.causal = causal;
        naiveSpec.slots.latent.q_rank = qRank;
        if (!rope) naiveSpec.slots.latent.rope_dim = 0;
        auto absorbedSpec = naiveSpec;
        absorbedSpec.slots.latent.order = spec::LatentOrder::Absorbed;
        AttentionModule naive = buildDouble(naiveSpec, 51), absorbed = buildDouble(absorbedSpec, 52);
        perturbParameters(*naive, 53);
        {
          torch::NoGradGuard noGrad;
          auto src = naive->named_parameters(true);
          for (auto& p : absorbed->named_parameters(true)) p.value().copy_(src[p.key()]);
        }
        const auto x0 = randomInput(2, 21, naiveSpec.sizes.F, 54);
        const auto W = randomInput(2, 21, naiveSpec.sizes.F, 55);
        auto run = [&](AttentionModuleImpl& m) {
          m.zero_grad();
          const auto x = x0.clone().requires_grad_(true);
          const auto out = m.forward(x, {true, false});
          (out.y * W).sum().backward();
          std::vector<torch::Tensor> r = {out.y.detach(), out.maps, x.grad().clone()};
          for (auto& p : m.named_parameters(true)) r.push_back(p.value().grad().clone());
          return r;
        };
        const auto a = run(*absorbed), b = run(*naive);
        ASSERT_EQ(a.size(), b.size());
        for (size_t i = 0; i < a.size(); ++i) expectClose(a[i], b[i], 1e-11, "item " + std::to_string(i));
      }
}

}  // namespace tensorscope::model_core::test
