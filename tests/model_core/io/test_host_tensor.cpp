// LibTorch -> HostTensor: the one copy of tensor values out as plain floats (inspection snapshots).
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <vector>

#include "io/host_tensor_torch.h"

namespace tensorscope::model_core {
namespace {

TEST(HostTensor, CopiesShapeAndRowMajorValuesAsFloat) {
  const at::Tensor t = at::arange(6, at::kDouble).view({2, 3});
  const HostTensor h = toHost(t);
  EXPECT_EQ(h.shape, (std::vector<std::int64_t>{2, 3}));
  EXPECT_EQ(h.values, (std::vector<float>{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(h.rows(), 2);
  EXPECT_EQ(h.cols(), 3);
  // A transposed (non-contiguous) view that requires grad comes out in its own row-major order.
  const HostTensor tr = toHost(t.clone().set_requires_grad(true).t());
  EXPECT_EQ(tr.shape, (std::vector<std::int64_t>{3, 2}));
  EXPECT_EQ(tr.values, (std::vector<float>{0, 3, 1, 4, 2, 5}));
}

TEST(HostTensor, RowsAndColumnsOnlyForMatrices) {
  const HostTensor none = toHost(at::Tensor());
  EXPECT_TRUE(none.shape.empty());
  EXPECT_TRUE(none.values.empty());
  EXPECT_EQ(none.rows(), 0);
  const HostTensor scalar = toHost(at::scalar_tensor(2.5));
  EXPECT_TRUE(scalar.shape.empty());
  EXPECT_EQ(scalar.values, std::vector<float>{2.5f});
  const HostTensor cube = toHost(at::zeros({2, 3, 4}));
  EXPECT_EQ(cube.values.size(), 24u);
  EXPECT_EQ(cube.rows(), 0);
  EXPECT_EQ(cube.cols(), 0);
  const HostTensor empty = toHost(at::zeros({0, 5}));
  EXPECT_EQ(empty.rows(), 0);
  EXPECT_EQ(empty.cols(), 5);
}

}  // namespace
}  // namespace tensorscope::model_core
