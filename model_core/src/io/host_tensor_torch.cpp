#include "io/host_tensor_torch.h"

namespace tensorscope::model_core {

HostTensor toHost(const at::Tensor& tensor) {
  HostTensor h;
  if (!tensor.defined()) return h;
  const auto c = tensor.detach().to(at::kCPU, at::kFloat).contiguous();
  h.shape = c.sizes().vec();
  h.values.assign(c.data_ptr<float>(), c.data_ptr<float>() + c.numel());
  return h;
}

}  // namespace tensorscope::model_core
