#include "attention/head_mixing.h"

#include <torch/types.h>

#include "spec/slot_values.h"

namespace tensorscope::model_core {

torch::Tensor HeadMixingWeights::effective() const {
  // Module::to(dtype) also converts bool buffers, so the mask is read back as bool here.
  return mask.defined() ? torch::where(mask.to(torch::kBool), param, frozen) : param;
}

HeadMixingWeights registerHeadMixing(torch::nn::Module& module, const std::string& name,
                                     const spec::HeadMixing& mixing, int64_t H) {
  const int h = static_cast<int>(H);
  const auto values = torch::tensor(spec::mixingValues(mixing, h), torch::kDouble).reshape({H, H}).to(torch::kFloat);
  const auto maskValues = spec::mixingMask(mixing, h);
  const auto mask =
      torch::tensor(std::vector<int64_t>(maskValues.begin(), maskValues.end()), torch::kLong).reshape({H, H}) != 0;
  HeadMixingWeights w;
  w.param = module.register_parameter(name, values.clone(), /*requires_grad=*/mask.any().item<bool>());
  if (!mask.all().item<bool>()) {
    w.frozen = module.register_buffer(name + "_frozen", values.clone());
    w.mask = module.register_buffer(name + "_mask", mask);
  }
  return w;
}

torch::Tensor effectiveHeadMixing(const torch::nn::Module& module, const std::string& name) {
  const auto buffers = module.named_buffers(/*recurse=*/false);
  const auto* frozen = buffers.find(name + "_frozen");
  const auto* mask = buffers.find(name + "_mask");
  const auto params = module.named_parameters(/*recurse=*/false);
  const auto* param = params.find(name);
  if (!frozen || !mask || !param) return {};
  return HeadMixingWeights{*param, *frozen, *mask}.effective();
}

}  // namespace tensorscope::model_core
