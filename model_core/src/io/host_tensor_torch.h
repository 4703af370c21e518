#pragma once
// From LibTorch tensors to HostTensor (private to model_core: includes ATen). The one way tensor
// values are copied out as plain floats; safetensors files go through io/tensor_convert.h, which
// keeps their dtype.

#include <ATen/ATen.h>

#include "model_core/host_tensor.h"

namespace tensorscope::model_core {

/// A float32, contiguous CPU copy of `tensor` (any device, dtype, strides or grad; detached). An
/// undefined tensor gives an empty HostTensor.
HostTensor toHost(const at::Tensor& tensor);

}  // namespace tensorscope::model_core
