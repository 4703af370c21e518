// batchedProduct (attention/kernels.h): one single-threaded BLAS product per matrix of the batch,
// on its own thread, reading strided head views in place; against torch::matmul, its oracle and its
// path elsewhere: values and both gradients, with and without the transposed right operand, head
// views of a projection, expanded (shared) key heads, an empty contraction, 1-3 threads.

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cstdlib>

#include "attention/fused_attention.h"
#include "attention/kernels.h"

namespace tensorscope::model_core {
namespace {

double maxAbsDiff(const torch::Tensor& a, const torch::Tensor& b) {
  return (a.to(torch::kDouble) - b.to(torch::kDouble)).abs().max().item<double>();
}

/// The product and the gradients of both operands against an upstream g, by batchedProduct or by
/// torch::matmul.
std::vector<torch::Tensor> run(const torch::Tensor& a0, const torch::Tensor& b0, bool transB, const torch::Tensor& g,
                               bool fused) {
  const auto a = a0.detach().clone().requires_grad_(true), b = b0.detach().clone().requires_grad_(true);
  // The operands as the layers pass them: head views [B, H, N, D] of [B, N, H, D] projections.
  const auto av = a.transpose(1, 2), bv = b.transpose(1, 2);
  const auto y = fused ? batchedProduct(av, bv, transB) : torch::matmul(av, transB ? bv.transpose(-2, -1) : bv);
  (y * g).sum().backward();
  return {y.detach(), a.grad(), b.grad()};
}

}  // namespace

TEST(BatchedProduct, EqualsMatmulWithBothGradientsOnHeadViews) {
  torch::manual_seed(31);
  for (const auto dtype : {torch::kDouble, torch::kFloat})
    for (bool transB : {true, false}) {
      SCOPED_TRACE(std::string(dtype == torch::kDouble ? "float64" : "float32") + (transB ? " a·bᵀ" : " a·b"));
      const double tol = dtype == torch::kDouble ? 1e-12 : 2e-5;
      const int64_t B = 3, N = 37, M = 29, H = 2, D = 5;
      const auto a = torch::randn({B, N, H, D}, dtype);
      // b [B, M, H, D] (a·bᵀ: keys) or [B, D', H, M]-shaped so that a·b contracts D.
      const auto b = transB ? torch::randn({B, M, H, D}, dtype) : torch::randn({B, D, H, M}, dtype);
      const auto g = torch::randn({B, H, N, M}, dtype);
      const auto f = run(a, b, transB, g, true), r = run(a, b, transB, g, false);
      EXPECT_LT(maxAbsDiff(f[0], r[0]), tol) << "product";
      EXPECT_LT(maxAbsDiff(f[1], r[1]), tol) << "gradient of a";
      EXPECT_LT(maxAbsDiff(f[2], r[2]), tol) << "gradient of b";
      EXPECT_GT(f[2].abs().sum().item<double>(), 1.0);
    }
}

TEST(BatchedProduct, SharedKeyHeadsAnEmptyContractionThreadsAndTheSwitch) {
  torch::manual_seed(32);
  // Keys shared by two query heads each (GQA's expand, stride 0 on the head axis): the gradient of
  // the shared key sums over its heads, as matmul's does.
  const auto q = torch::randn({2, 4, 9, 3}, torch::kDouble);
  const auto k0 = torch::randn({2, 2, 1, 9, 3}, torch::kDouble).requires_grad_(true);
  const auto k = k0.expand({2, 2, 2, 9, 3}).reshape({2, 4, 9, 3});  // a view where it can be
  const auto kr = k0.detach().clone().requires_grad_(true);
  const auto y = batchedProduct(q, k, true);
  const auto yr = torch::matmul(q, kr.expand({2, 2, 2, 9, 3}).reshape({2, 4, 9, 3}).transpose(-2, -1));
  EXPECT_LT(maxAbsDiff(y, yr), 1e-13);
  y.sum().backward();
  yr.sum().backward();
  EXPECT_LT(maxAbsDiff(k0.grad(), kr.grad()), 1e-12);
  // A matrix shared by the whole batch (expand: stride 0 on the batch axis, read in place) is how
  // mixHeads applies a head mixing; its gradient sums over the batch. mixHeads against einsum.
  const auto c = torch::randn({3, 4}, torch::kDouble).requires_grad_(true);
  const auto cr = c.detach().clone().requires_grad_(true);
  const auto maps = torch::randn({5, 4, 7, 6}, torch::kDouble).requires_grad_(true);
  const auto mapsr = maps.detach().clone().requires_grad_(true);
  const auto mixed = mixHeads(c, maps), want = torch::einsum("lh,bhnm->blnm", {cr, mapsr});
  EXPECT_EQ(mixed.sizes(), want.sizes());
  EXPECT_LT(maxAbsDiff(mixed, want), 1e-13);
  const auto gm = torch::randn(want.sizes(), torch::kDouble);
  (mixed * gm).sum().backward();
  (want * gm).sum().backward();
  EXPECT_LT(maxAbsDiff(c.grad(), cr.grad()), 1e-12);
  EXPECT_LT(maxAbsDiff(maps.grad(), mapsr.grad()), 1e-13);
  // Expanded rows (stride 0 along the row axis) are copied, not read at a stride BLAS refuses.
  const auto row = torch::randn({2, 1, 1, 3}, torch::kDouble).expand({2, 1, 6, 3});
  EXPECT_LT(maxAbsDiff(batchedProduct(row, torch::ones({2, 1, 4, 3}, torch::kDouble), true),
                       torch::matmul(row, torch::ones({2, 1, 3, 4}, torch::kDouble))),
            1e-14);
  // An empty contraction gives zeros.
  const auto e = batchedProduct(torch::randn({2, 3, 0}), torch::randn({2, 0, 4}), false);
  EXPECT_EQ(e.sizes(), (std::vector<int64_t>{2, 3, 4}));
  EXPECT_EQ(e.abs().sum().item<float>(), 0.0f);
  // Each product on one thread: 1 to 3 threads give the same bits.
  const auto a = torch::randn({4, 3, 33, 16}), b = torch::randn({4, 3, 40, 16});
  const int threads = at::get_num_threads();
  at::set_num_threads(1);
  const auto one = batchedProduct(a, b, true);
  for (int t : {2, 3}) {
    at::set_num_threads(t);
    EXPECT_TRUE(torch::equal(batchedProduct(a, b, true), one)) << t << " threads";
  }
  at::set_num_threads(threads);
  setFusedAttentionEnabled(false);
  const auto off = batchedProduct(a, b, true);
  setFusedAttentionEnabled(true);
  EXPECT_TRUE(torch::equal(off, torch::matmul(a, b.transpose(-2, -1))));
  EXPECT_THROW(batchedProduct(a, torch::randn({4, 2, 40, 16}), true), std::invalid_argument);
  EXPECT_THROW(batchedProduct(a, b, false), std::invalid_argument);
}

}  // namespace tensorscope::model_core

namespace tensorscope::model_core {
namespace {

/// headProducts' value and the gradients of a, w and the tail against an upstream g, by the kernel or
/// by its ATen oracle (setFusedAttentionEnabled(false)). `a` is read as a head view of a wider
/// projection (the way MLA passes q_nope: the first k of every head's k + 2 features).
std::vector<torch::Tensor> runHeads(const torch::Tensor& a0, const torch::Tensor& w0, bool transW,
                                    const torch::Tensor& tail0, const torch::Tensor& g, bool fused) {
  const auto a = a0.detach().clone().requires_grad_(true), w = w0.detach().clone().requires_grad_(true);
  const auto tail = tail0.defined() ? tail0.detach().clone().requires_grad_(true) : torch::Tensor();
  setFusedAttentionEnabled(fused);
  const auto y = headProducts(a.narrow(2, 0, a.size(2) - 2), w, transW, tail);
  setFusedAttentionEnabled(true);
  (y * g).sum().backward();
  return {y.detach(), a.grad(), w.grad(), tail.defined() ? tail.grad() : torch::zeros({1}, a.options())};
}

}  // namespace

TEST(HeadProducts, EqualMatmulAndCatWithEveryGradient) {
  setenv("TENSORSCOPE_GEMM", "dnnl", 0);  // float32 on the projection GEMM where it loads (kernels/gemm.h)
  torch::manual_seed(33);
  for (const auto dtype : {torch::kDouble, torch::kFloat})
    for (bool transW : {false, true})
      for (int r : {0, 3})
        for (int64_t T : {1, 37, 700}) {  // 700 rows: several row blocks a head
          SCOPED_TRACE(std::string(dtype == torch::kDouble ? "float64" : "float32") + (transW ? " a·wᵀ" : " a·w") +
                       " r=" + std::to_string(r) + " T=" + std::to_string(T));
          const double tol = dtype == torch::kDouble ? 1e-11 : 3e-4;
          const int64_t H = 3, k = 5, n = 4;
          const auto a = torch::randn({T, H, k + 2}, dtype);
          const auto w = transW ? torch::randn({H, n, k}, dtype) : torch::randn({H, k, n}, dtype);
          const auto tail = r > 0 ? torch::randn({T, H, r}, dtype) : torch::Tensor();
          const auto g = torch::randn({T, H, n + r}, dtype);
          const auto f = runHeads(a, w, transW, tail, g, true), o = runHeads(a, w, transW, tail, g, false);
          ASSERT_EQ(f[0].sizes(), (std::vector<int64_t>{T, H, n + r}));
          EXPECT_LT(maxAbsDiff(f[0], o[0]), tol) << "products";
          EXPECT_LT(maxAbsDiff(f[1], o[1]), tol) << "gradient of a";
          EXPECT_LT(maxAbsDiff(f[2], o[2]), tol) << "gradient of w";
          EXPECT_LT(maxAbsDiff(f[3], o[3]), tol) << "gradient of the tail";
          // The two features of every head past q_nope's k get no gradient.
          EXPECT_EQ(f[1].narrow(2, k, 2).abs().max().item<double>(), 0.0);
          EXPECT_GT(f[2].abs().sum().item<double>(), 0.5);
        }
  // The definition itself in float64: out[t, h] = [a[t, h]·w[h], tail[t, h]].
  const auto a = torch::randn({6, 2, 3}, torch::kDouble), w = torch::randn({2, 3, 4}, torch::kDouble);
  const auto tail = torch::randn({6, 2, 2}, torch::kDouble);
  const auto y = headProducts(a, w, false, tail);
  for (int64_t t = 0; t < 6; ++t)
    for (int64_t h = 0; h < 2; ++h) {
      EXPECT_LT(maxAbsDiff(y[t][h].narrow(0, 0, 4), torch::matmul(a[t][h], w[h])), 1e-14);
      EXPECT_TRUE(torch::equal(y[t][h].narrow(0, 4, 2), tail[t][h]));
    }
}

TEST(HeadProducts, ThreadsAnEmptyContractionAndRefusals) {
  setenv("TENSORSCOPE_GEMM", "dnnl", 0);  // float32 on the projection GEMM where it loads (kernels/gemm.h)
  torch::manual_seed(34);
  // 1-3 threads: float64 (row blocks of single-threaded BLAS calls) gives the same bits; float32 on
  // the projection GEMM (one multi-threaded call a head) the same values within rounding.
  const int threads = at::get_num_threads();
  for (const auto dtype : {torch::kDouble, torch::kFloat}) {
    const auto a = torch::randn({1000, 2, 16}, dtype), w = torch::randn({2, 16, 24}, dtype);
    const auto tail = torch::randn({1000, 2, 8}, dtype);
    at::set_num_threads(1);
    const auto one = headProducts(a, w, false, tail);
    for (int t : {2, 3}) {
      at::set_num_threads(t);
      const auto y = headProducts(a, w, false, tail);
      if (dtype == torch::kDouble) EXPECT_TRUE(torch::equal(y, one)) << t << " threads";
      else EXPECT_LT(maxAbsDiff(y, one), 1e-4) << t << " threads";
    }
  }
  at::set_num_threads(threads);
  const auto a = torch::randn({1000, 2, 16}), w = torch::randn({2, 16, 24}), tail = torch::randn({1000, 2, 8});
  const auto e = headProducts(torch::randn({5, 2, 0}), torch::randn({2, 0, 3}), false, torch::Tensor());
  EXPECT_EQ(e.sizes(), (std::vector<int64_t>{5, 2, 3}));
  EXPECT_EQ(e.abs().sum().item<float>(), 0.0f);
  EXPECT_THROW(headProducts(a, torch::randn({3, 16, 24}), false, tail), std::invalid_argument);  // heads
  EXPECT_THROW(headProducts(a, w, true, tail), std::invalid_argument);                           // contraction
  EXPECT_THROW(headProducts(a, w, false, torch::randn({999, 2, 8})), std::invalid_argument);     // tail rows
}

}  // namespace tensorscope::model_core
