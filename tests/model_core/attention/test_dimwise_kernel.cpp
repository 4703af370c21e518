// The fused causal dimension-wise attention kernel (kernels/dimwise_causal.h through
// dimwiseCausalAttention) against the ATen formulation it replaces on the CPU (dimwiseAten: prefix
// sums over [B, N, d, d]), which stays the oracle, and against the float64 loop reference of the
// contract (docs/attention-variants.md §7, reference.cpp): outputs and the gradients of q, k, v and
// the filters; N = 1, N across several checkpoint segments and not a multiple of the segment, small
// and large d, one and several filters, one and several sequences (rows split in groups), 1-3
// threads; finite differences; causal no-leak; float32; and what the kernel keeps for backward (no
// [B, N, d, d] tensor).

#include <ATen/Parallel.h>
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <string>
#include <vector>

#include "attention/dimwise_fused.h"
#include "attention/fused_attention.h"
#include "attention/multilinear.h"
#include "kernels/row_ops.h"
#include "reference.h"
#include "thsa_kernel_checks.h"

using namespace tensorscope;
using namespace tensorscope::model_core;
using namespace tensorscope::model_core::testing;

namespace {

/// The ATen formulation from qkv [B, N, 3, d]: O [B, N, c, d].
torch::Tensor atenCausal(const torch::Tensor& qkv, const torch::Tensor& W) {
  return dimwiseAten(qkv.select(2, 0), qkv.select(2, 1), qkv.select(2, 2), W, /*causal=*/true).O;
}

struct Shape {
  int64_t B, N, d, c, segment;
};

std::string label(const Shape& s) {
  return "B=" + std::to_string(s.B) + " N=" + std::to_string(s.N) + " d=" + std::to_string(s.d) +
         " c=" + std::to_string(s.c) + " K=" + std::to_string(s.segment);
}

void checkAgainstAten(const Shape& s) {
  SCOPED_TRACE(label(s));
  torch::manual_seed(400 + s.N + s.d + s.c);
  const auto opts = torch::TensorOptions().dtype(torch::kDouble);
  const auto x = torch::randn({s.B, s.N, 3, s.d}, opts);
  const auto W0 = torch::randn({s.c, s.d, s.d}, opts);
  const auto G = torch::randn({s.B, s.N, s.c, s.d}, opts);
  const auto a = x.clone().requires_grad_(true), Wa = W0.clone().requires_grad_(true);
  const auto fused = dimwiseCausalAttention(a, Wa, s.segment);
  (fused * G).sum().backward();
  const auto b = x.clone().requires_grad_(true), Wb = W0.clone().requires_grad_(true);
  const auto ref = atenCausal(b, Wb);
  (ref * G).sum().backward();
  EXPECT_EQ(fused.sizes(), (std::vector<int64_t>{s.B, s.N, s.c, s.d}));
  EXPECT_LT(maxAbsDiff(fused, ref), 1e-12);
  EXPECT_LT(maxAbsDiff(a.grad(), b.grad()), 1e-10);
  EXPECT_LT(maxAbsDiff(Wa.grad(), Wb.grad()), 1e-10);
}

}  // namespace

TEST(DimwiseKernel, MatchesTheAtenFormulationAndItsGradients) {
  const int before = at::get_num_threads();
  for (int threads : {1, 2, 3}) {
    SCOPED_TRACE("threads=" + std::to_string(threads));
    at::set_num_threads(threads);
    for (const Shape& s : std::vector<Shape>{{2, 1, 5, 1, 32},     // one position, no checkpoint
                                             {2, 10, 6, 2, 4},     // three segments, 10 not a multiple of 4
                                             {2, 12, 6, 2, 4},     // a multiple of the segment
                                             {1, 37, 19, 3, 8},    // one sequence: rows in groups
                                             {3, 33, 40, 1, 32},   // the default segment, one more position
                                             {4, 70, 3, 2, 32},    // tiny d
                                             {1, 9, 70, 2, 1},     // large d, a checkpoint per position
                                             {2, 40, 33, 1, 64}})  // one segment longer than N
      checkAgainstAten(s);
  }
  at::set_num_threads(before);
}

TEST(DimwiseKernel, GradientMatchesFiniteDifferences) {
  torch::manual_seed(31);
  const auto opts = torch::TensorOptions().dtype(torch::kDouble);
  const auto x = torch::randn({2, 23, 3, 5}, opts), W = torch::randn({2, 5, 5}, opts);
  const auto G = torch::randn({2, 23, 2, 5}, opts);
  const auto a = x.clone().requires_grad_(true), Wa = W.clone().requires_grad_(true);
  (dimwiseCausalAttention(a, Wa, 4) * G).sum().backward();
  expectFiniteDifferences({x, W}, {a.grad(), Wa.grad()}, [&](const std::vector<torch::Tensor>& in) {
    torch::NoGradGuard noGrad;
    return (dimwiseCausalAttention(in[0], in[1], 4) * G).sum().item<double>();
  }, "dimwise causal");
}

TEST(DimwiseKernel, CausalOutputsIgnoreLaterTokens) {
  torch::manual_seed(32);
  const auto W = torch::randn({2, 6, 6}, torch::kDouble);
  expectCausalNoLeak(torch::randn({2, 70, 3, 6}, torch::kDouble),
                     [&](const torch::Tensor& in) { return dimwiseCausalAttention(in, W, 8); }, {0, 7, 8, 31, 65},
                     "dimwise");
}

TEST(DimwiseKernel, Float32AgreesWithFloat64AndTheFloat32AtenFormulation) {
  for (int64_t d : {21, 64}) {
    SCOPED_TRACE("d=" + std::to_string(d));
    torch::manual_seed(33);
    const auto x = torch::randn({3, 90, 3, d}, torch::kDouble);
    const auto W = torch::randn({2, d, d}, torch::kDouble);
    const auto G = torch::randn({3, 90, 2, d}, torch::kDouble);
    const auto xd = x.clone().requires_grad_(true), xf = x.to(torch::kFloat).requires_grad_(true);
    const auto Wf = W.to(torch::kFloat).requires_grad_(true);
    const auto dres = dimwiseCausalAttention(xd, W);
    const auto f = dimwiseCausalAttention(xf, Wf);
    (dres * G).sum().backward();
    (f * G.to(torch::kFloat)).sum().backward();
    EXPECT_LT(maxAbsDiff(f.to(torch::kDouble), dres) / dres.abs().max().item<double>(), 1e-5);
    EXPECT_LT(maxAbsDiff(xf.grad().to(torch::kDouble), xd.grad()) / xd.grad().abs().max().item<double>(), 1e-4);
    // The float32 ATen formulation is no closer to float64 than the kernel is (within a factor).
    const auto xa = x.to(torch::kFloat).requires_grad_(true);
    const auto Wa = W.to(torch::kFloat).requires_grad_(true);
    const auto aten = atenCausal(xa, Wa);
    (aten * G.to(torch::kFloat)).sum().backward();
    const double atenErr = maxAbsDiff(aten.to(torch::kDouble), dres), fusedErr = maxAbsDiff(f.to(torch::kDouble), dres);
    EXPECT_LT(fusedErr, 4 * atenErr + 1e-6);
    EXPECT_LT(maxAbsDiff(Wf.grad().to(torch::kDouble), Wa.grad().to(torch::kDouble)) /
                  Wa.grad().abs().max().item<double>(),
              1e-4);
  }
}

TEST(DimwiseKernel, Float32EveryFilterCountAgreesWithFloat64) {
  // The float rows are specialised for one to four filters and take a general path beyond (row_ops.h);
  // d = 37 spans three row blocks (kDimwiseRowBlock), N = 45 ends on a run of one position.
  const int before = at::get_num_threads();
  at::set_num_threads(2);
  for (int64_t c : {1, 3, 4, 5}) {
    SCOPED_TRACE("c=" + std::to_string(c));
    torch::manual_seed(34 + c);
    const auto x = torch::randn({2, 45, 3, 37}, torch::kDouble);
    const auto W = torch::randn({c, 37, 37}, torch::kDouble);
    const auto G = torch::randn({2, 45, c, 37}, torch::kDouble);
    const auto xd = x.clone().requires_grad_(true), Wd = W.clone().requires_grad_(true);
    const auto xf = x.to(torch::kFloat).requires_grad_(true), Wf = W.to(torch::kFloat).requires_grad_(true);
    const auto od = dimwiseCausalAttention(xd, Wd), of = dimwiseCausalAttention(xf, Wf);
    (od * G).sum().backward();
    (of * G.to(torch::kFloat)).sum().backward();
    auto rel = [](const torch::Tensor& f, const torch::Tensor& d) {
      return maxAbsDiff(f.to(torch::kDouble), d) / d.abs().max().item<double>();
    };
    EXPECT_LT(rel(of, od), 1e-5);
    EXPECT_LT(rel(xf.grad(), xd.grad()), 1e-4);
    EXPECT_LT(rel(Wf.grad(), Wd.grad()), 1e-4);
  }
  at::set_num_threads(before);
}

TEST(DimwiseKernel, EveryRowOperationsBuildAgreesWithFloat64IncludingRowsPastTheShiftBound) {
  // The float kernel on each row-operations build this CPU runs (SSE2, AVX2, AVX-512), against the
  // float64 kernel (which the tests above hold to the ATen formulation): once on ordinary inputs,
  // once with queries and keys 12x larger, where the state rows' ranges and |q|·(max k − min k) are
  // wide enough that the forward's bound on a row's new maximum overshoots by more than
  // kDimwiseShiftSlack and rows take their exp pass again with the exact maximum (row_ops.h).
  const std::string original = kernels::rowOpsIsa();
  const int before = at::get_num_threads();
  at::set_num_threads(2);
  for (double scale : {1.0, 12.0}) {
    torch::manual_seed(41);
    auto x = torch::randn({2, 70, 3, 40}, torch::kDouble);
    x.select(2, 0).mul_(scale), x.select(2, 1).mul_(scale);
    const auto W = torch::randn({2, 40, 40}, torch::kDouble);
    const auto G = torch::randn({2, 70, 2, 40}, torch::kDouble);
    const auto xd = x.clone().requires_grad_(true), Wd = W.clone().requires_grad_(true);
    const auto od = dimwiseCausalAttention(xd, Wd);
    (od * G).sum().backward();
    for (const char* isa : {"sse2", "avx2", "avx512"}) {
      if (!kernels::forceRowOpsIsa(isa)) continue;
      SCOPED_TRACE(std::string(isa) + " scale=" + std::to_string(scale));
      const auto xf = x.to(torch::kFloat).requires_grad_(true), Wf = W.to(torch::kFloat).requires_grad_(true);
      const auto of = dimwiseCausalAttention(xf, Wf);
      (of * G.to(torch::kFloat)).sum().backward();
      auto rel = [](const torch::Tensor& f, const torch::Tensor& d) {
        return maxAbsDiff(f.to(torch::kDouble), d) / d.abs().max().item<double>();
      };
      // Large inputs: |t·S| reaches the hundreds, where float32's rounding of S alone is ~1e-5 of it.
      const double tol = scale > 1 ? 2e-3 : 1e-4;
      EXPECT_LT(rel(of, od), tol / 10);
      EXPECT_LT(rel(xf.grad(), xd.grad()), tol);
      EXPECT_LT(rel(Wf.grad(), Wd.grad()), tol);
    }
    kernels::forceRowOpsIsa(original.c_str());
  }
  at::set_num_threads(before);
}

TEST(DimwiseKernel, KeepsNoPrefixTensorForBackward) {
  // B·N·d² would be 2·200·24² = 230 400 values; the kernel keeps q, k, v, W, the row log-sum-exps
  // [B, N, d] and ⌈N/K⌉ − 1 = 6 checkpoint states per sequence, and its own output O (the same
  // storage as the output: nothing added; the layer's output projection keeps it anyway).
  const int64_t B = 2, N = 200, d = 24, c = 3, K = 32;
  const auto qkv = torch::randn({B, N, 3, d}).requires_grad_(true);
  const auto W = torch::randn({c, d, d}).requires_grad_(true);
  const auto out = dimwiseCausalAttention(qkv, W, K);
  const auto saved = dimwiseCausalSavedTensors(out);
  ASSERT_EQ(saved.size(), 5u);
  EXPECT_EQ(saved[4].data_ptr(), out.data_ptr());
  EXPECT_EQ(saved[4].sizes(), out.sizes());
  int64_t total = 0;
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_LT(saved[i].numel(), B * N * d * d / 4) << saved[i].sizes();
    total += saved[i].numel();
  }
  EXPECT_EQ(saved[2].sizes(), (std::vector<int64_t>{B, N, d}));
  EXPECT_EQ(saved[3].sizes(), (std::vector<int64_t>{B, 6, d, d}));
  EXPECT_EQ(total, B * N * 3 * d + c * d * d + B * N * d + B * 6 * d * d);
  // N = 1: no checkpoint at all.
  const auto one = dimwiseCausalAttention(torch::randn({B, 1, 3, d}).requires_grad_(true), W, K);
  EXPECT_EQ(dimwiseCausalSavedTensors(one)[3].numel(), 0);
  EXPECT_THROW(dimwiseCausalSavedTensors(qkv * 2), std::invalid_argument);
}

TEST(DimwiseKernel, CausalModuleMatchesTheLoopReferenceAndTheAtenPath) {
  // The layer (projections, filters, wo) on the fused kernel against the contract's float64 loop
  // reference, and against its own ATen path (setFusedAttentionEnabled(false)): y, the map and
  // every gradient.
  if (!fusedAttentionSupports(torch::zeros({1}, torch::kDouble)))
    GTEST_SKIP() << "the fused kernels are off here (no BLAS): the layer has only its ATen path";
  for (bool bias : {false, true})
    for (const auto& [B, N, d, c] : std::vector<std::array<int, 4>>{{2, 37, 7, 2}, {1, 1, 4, 1}, {3, 9, 16, 3}}) {
      SCOPED_TRACE("B=" + std::to_string(B) + " N=" + std::to_string(N) + " d=" + std::to_string(d) +
                   " c=" + std::to_string(c) + (bias ? " bias" : ""));
      spec::Sizes z;
      z.F = 10;
      z.R = d;
      z.c = c;
      z.seq_len = N;
      const auto s = test::makeSpec(spec::Variant::Dimwise, z, true, bias);
      AttentionModule m = test::buildDouble(s, 41);
      test::perturbParameters(*m, 42);
      const auto x0 = test::randomInput(B, N, z.F, 43);
      const auto ref = test::referenceForward(s, test::weightsOf(*m), x0);
      const auto G = torch::randn({B, N, z.F}, torch::kDouble);
      auto run = [&](bool fused) {
        setFusedAttentionEnabled(fused);
        m->zero_grad();
        const auto x = x0.clone().requires_grad_(true);
        ForwardOptions options;
        options.with_maps = true;
        const auto out = m->forward(x, options);
        (out.y * G).sum().backward();
        std::vector<torch::Tensor> r = {out.y.detach(), out.maps.detach(), x.grad().clone()};
        for (const auto& p : m->parameters()) r.push_back(p.grad().defined() ? p.grad().clone() : torch::zeros({1}));
        setFusedAttentionEnabled(true);
        return r;
      };
      const auto fused = run(true), aten = run(false);
      test::expectClose(fused[0], ref.y, 1e-10, "y against the loop reference");
      test::expectClose(fused[1], ref.maps, 1e-10, "map against the loop reference");
      ASSERT_EQ(fused.size(), aten.size());
      for (size_t i = 0; i < fused.size(); ++i) EXPECT_LT(maxAbsDiff(fused[i], aten[i]), 1e-11) << "item " << i;
    }
}

TEST(DimwiseKernel, RejectsWhatItCannotCompute) {
  EXPECT_THROW(dimwiseCausalAttention(torch::zeros({2, 4, 2, 3}), torch::zeros({1, 3, 3})), std::invalid_argument);
  EXPECT_THROW(dimwiseCausalAttention(torch::zeros({2, 4, 3, 3}), torch::zeros({1, 2, 3})), std::invalid_argument);
  EXPECT_THROW(dimwiseCausalAttention(torch::zeros({2, 4, 3, 3}), torch::zeros({0, 3, 3})), std::invalid_argument);
  EXPECT_THROW(dimwiseCausalAttention(torch::zeros({2, 4, 3, 3}), torch::zeros({1, 3, 3}, torch::kDouble)),
               std::invalid_argument);
  EXPECT_THROW(dimwiseCausalAttention(torch::zeros({2, 4, 3, 3}), torch::zeros({1, 3, 3}), 0), std::invalid_argument);
}

TEST(MultilinearCausal, KeepsNoCubicMaskAndMatchesTheLoopReference) {
  // Block-term attention masks T[b,i,j,k] (j > i or k > i) from the [N, N] future mask in place:
  // the module holds no buffer (the [N, N, N] mask it used to keep), and the causal layer still
  // equals the contract's float64 reference, with gradients that match the same layer's ATen
  // autograd through an explicit [N, N, N] mask.
  spec::Sizes z;
  z.F = 8;
  z.R = 5;
  z.P = 2;
  z.seq_len = 7;
  const auto s = test::makeSpec(spec::Variant::Multilinear, z, true, true);
  AttentionModule m = test::buildDouble(s, 51);
  test::perturbParameters(*m, 52);
  EXPECT_EQ(m->buffers().size(), 0u);
  const auto x0 = test::randomInput(2, z.seq_len, z.F, 53);
  const auto ref = test::referenceForward(s, test::weightsOf(*m), x0);
  const auto x = x0.clone().requires_grad_(true);
  const auto y = m->forward(x, {}).y;
  test::expectClose(y, ref.y, 1e-10, "y against the loop reference");
  const auto G = torch::randn_like(y);
  (y * G).sum().backward();
  // The same layer written with the cubic mask, from the module's own parameters.
  const auto p = m->named_parameters();
  const auto xb = x0.clone().requires_grad_(true);
  const int64_t N = z.seq_len;
  auto lin = [&](const std::string& name, const torch::Tensor& in) {
    return torch::linear(in, p[name + ".weight"], p[name + ".bias"]);
  };
  const auto q = lin("wq", xb), k = lin("wk", xb), v = lin("wv", xb);
  const auto gbar = dynamic_cast<MultilinearImpl&>(*m).effectiveCores().mean(0);
  auto T = torch::einsum("bir,bjr,bkr->bijk", {q * gbar, k, v});
  const auto future = torch::ones({N, N}, torch::kBool).triu(1);
  T = T.masked_fill(future.unsqueeze(2) | future.unsqueeze(1), 0.0);
  const auto yb = lin("wo", T.reshape({2, N, N * N}));
  EXPECT_LT(maxAbsDiff(y, yb), 1e-12);
  (yb * G).sum().backward();
  EXPECT_LT(maxAbsDiff(x.grad(), xb.grad()), 1e-10);
}
