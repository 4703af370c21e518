// The torch-side core analysis agrees with the std::vector one, for float and double tensors,
// any strides, tensors that require grad, and (when present) CUDA.

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <limits>
#include <vector>

#include "analysis/core_analysis_torch.h"
#include "analysis_test_util.h"

using namespace tensorscope::model_core;
using tensorscope::model_core::test::expectInvalid;

namespace {

std::vector<double> toVector(const at::Tensor& t) {
  const at::Tensor c = t.detach().to(at::kCPU, at::kDouble).contiguous();
  return {c.data_ptr<double>(), c.data_ptr<double>() + c.numel()};
}

void expectSame(const CoreAnalysis& a, const CoreAnalysis& b, double tol) {
  EXPECT_NEAR(a.stable_rank, b.stable_rank, tol);
  EXPECT_NEAR(a.frobenius_norm, b.frobenius_norm, tol);
  EXPECT_NEAR(a.spectral_norm, b.spectral_norm, tol);
  EXPECT_EQ(a.numerical_rank, b.numerical_rank);
  ASSERT_EQ(a.singular_values.size(), b.singular_values.size());
  for (std::size_t i = 0; i < a.singular_values.size(); ++i) EXPECT_NEAR(a.singular_values[i], b.singular_values[i], tol);
}

}  // namespace

TEST(CoreAnalysisTorch, AgreesWithVectorOverloadForDoubleAndFloat) {
  at::manual_seed(11);
  const at::Tensor d = at::randn({12, 12}, at::kDouble);
  expectSame(analyzeCore(d), analyzeCore(toVector(d), 12, 12), 1e-13);
  const at::Tensor f = at::randn({16, 16}, at::kFloat);
  const auto fromTensor = analyzeCore(f);
  const auto c = f.contiguous();
  const std::vector<float> values(c.data_ptr<float>(), c.data_ptr<float>() + c.numel());
  expectSame(fromTensor, analyzeCore(values, 16, 16), 1e-12);
  EXPECT_NEAR(stableRank(f), fromTensor.stable_rank, 1e-14);
}

TEST(CoreAnalysisTorch, KroneckerCoreHasFourHeads) {
  // sqrt(H) (I_H (x) 1_D 1_D^T) with H = 4, D = 8, as the mhsa preset builds it.
  const at::Tensor core = at::kron(at::eye(4, at::kFloat), at::ones({8, 8}, at::kFloat)) * 2.0;
  EXPECT_NEAR(stableRank(core), 4.0, 1e-12);
  EXPECT_NEAR(stableRank(core.to(at::kDouble)), 4.0, 1e-12);
}

TEST(CoreAnalysisTorch, NonContiguousAndGradTensorsWork) {
  at::manual_seed(5);
  const at::Tensor base = at::randn({6, 9}, at::kDouble);
  const at::Tensor transposed = base.t();  // [9, 6], non-contiguous view
  ASSERT_FALSE(transposed.is_contiguous());
  const auto a = analyzeCore(transposed);
  expectSame(a, analyzeCore(toVector(transposed), 9, 6), 1e-13);
  expectSame(a, analyzeCore(base), 1e-12);  // C and C^T share their spectrum
  const at::Tensor trainable = base.clone().set_requires_grad(true);
  expectSame(analyzeCore(trainable), analyzeCore(base), 0.0);
  EXPECT_EQ(analyzeCore(at::zeros({3, 3}, at::kFloat)).stable_rank, 0.0);
}

TEST(CoreAnalysisTorch, WorksOnCudaTensors) {
  if (!at::hasCUDA()) GTEST_SKIP() << "no CUDA device in this LibTorch build or machine";
  at::manual_seed(3);
  const at::Tensor cpu = at::randn({8, 8}, at::kFloat);
  expectSame(analyzeCore(cpu.to(at::kCUDA)), analyzeCore(cpu), 1e-12);
  expectSame(analyzeCore(cpu.to(at::kCUDA, at::kDouble)), analyzeCore(cpu.to(at::kDouble)), 1e-12);
}

TEST(CoreAnalysisTorch, RejectsBadTensorsPrecisely) {
  expectInvalid([] { analyzeCore(at::Tensor()); }, "analyzeCore: the tensor is undefined");
  expectInvalid([] { analyzeCore(at::zeros({2, 3, 4})); }, "analyzeCore: expected a 2-D tensor [rows, cols]; got a 3-D tensor [2, 3, 4]");
  expectInvalid([] { stableRank(at::zeros({0, 3})); }, "stableRank: expected a non-empty matrix; got shape [0, 3]");
  expectInvalid([] { analyzeCore(at::ones({2, 2}, at::kLong)); }, "expected a floating-point tensor", "Long");
  at::Tensor bad = at::ones({3, 4}, at::kFloat);
  bad[2][1] = std::numeric_limits<float>::quiet_NaN();
  expectInvalid([&] { analyzeCore(bad); }, "analyzeCore: entry (2, 1) is NaN");
  expectInvalid([&] { analyzeCore(bad.t()); }, "entry (1, 2) is NaN");
}
