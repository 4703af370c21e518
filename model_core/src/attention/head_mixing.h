#pragma once
// The talking-heads mixings as drawn in a spec (spec::HeadMixing, spec/slot_values.h): a trainable
// H x H parameter that starts at the drawn values, and, when some entries are frozen, the frozen
// values and the mask as buffers `<name>_frozen` and `<name>_mask` (as the THSA core's dense C).

#include <torch/nn/module.h>
#include <torch/types.h>

#include <string>

#include "spec/attention_spec.h"

namespace tensorscope::model_core {

struct HeadMixingWeights {
  torch::Tensor param;   ///< [H, H] (to-head, from-head); undefined when the mixing is off
  torch::Tensor frozen;  ///< [H, H] the drawn values; undefined when every entry trains
  torch::Tensor mask;    ///< [H, H] bool, true where trained; undefined when every entry trains

  bool defined() const { return param.defined(); }
  /// The mixing the layer applies: the parameter where trained, the drawn value where frozen.
  torch::Tensor effective() const;
};

/// Registers parameter `name` [H, H] on `module` from `mixing`'s values (the identity when it has
/// none); frozen entries add the two buffers. A mixing with every entry frozen is not trained.
HeadMixingWeights registerHeadMixing(torch::nn::Module& module, const std::string& name,
                                     const spec::HeadMixing& mixing, int64_t H);

/// The mixing named `name` of `module` as it applies it (effective()), when `module` has frozen
/// entries for it; undefined otherwise. AttentionModuleImpl::namedWeights saves this in place of
/// the raw parameter, whose frozen entries weight decay may have moved.
torch::Tensor effectiveHeadMixing(const torch::nn::Module& module, const std::string& name);

}  // namespace tensorscope::model_core
