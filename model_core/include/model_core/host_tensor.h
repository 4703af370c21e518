#pragma once
/// A float tensor as plain data: how tensor values leave LibTorch for the explorer, the command
/// line and the tests (the inspection snapshots' cores, attention maps and TP roles). Torch-free;
/// model_core converts with one private function (src/io/host_tensor_torch.h). Safetensors files
/// keep their own dtype-carrying TensorData (model_core/safetensors.h).

#include <cstdint>
#include <vector>

namespace tensorscope::model_core {

/// A float32 tensor: its shape and its values, row-major. No tensor at all (e.g. no role vectors)
/// has neither a shape nor values; a 0-d tensor has an empty shape and one value.
struct HostTensor {
  std::vector<std::int64_t> shape;
  std::vector<float> values;  ///< product(shape) entries, row-major

  /// For a 2-D tensor (a matrix such as a core C or an attention map): its rows and columns; 0 for
  /// any other rank.
  int rows() const { return shape.size() == 2 ? static_cast<int>(shape[0]) : 0; }
  int cols() const { return shape.size() == 2 ? static_cast<int>(shape[1]) : 0; }
};

}  // namespace tensorscope::model_core
