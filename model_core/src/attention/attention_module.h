#pragma once
// Base of every attention layer (LibTorch). Internal to model_core: the public, torch-free
// facade is model_core/attention_layer.h. The math of each variant is the layer contract,
// docs/attention-variants.md; each subclass cites the section it implements.

#include <torch/nn/module.h>
#include <torch/types.h>

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "attention/rotary.h"
#include "spec/attention_spec.h"

namespace tensorscope::model_core {

/// What a forward pass returns. `maps` and `roles` are filled only when requested.
struct AttentionOutput {
  torch::Tensor y;      // [B, N, F]
  torch::Tensor maps;   // display maps (see displayMapShape), or undefined
  torch::Tensor roles;  // tp only: role vectors [B, H, N, D], or undefined
  /// Differential attention only: the two softmax maps of each head, P [B, H, 2, N, M] (`maps` is
  /// their difference A = P₀ − λ·P₁, what meets V); undefined otherwise.
  torch::Tensor map_parts;
  /// The layer's input x [B, N, F] as it entered the attention (inside a model: after the block's
  /// layer norm); set by the model's blocks when they report what their layers computed.
  torch::Tensor input;
};

/// The options a forward pass takes beyond the input.
struct ForwardOptions {
  bool with_maps = false;   ///< compute the display maps (costs memory; off while training)
  bool with_roles = false;  ///< tp: return the role vectors
};

/// One tensor of a weight file: `value` is what is saved; loading copies into `target`. A tensor
/// without a target is derived (the effective `core` of a structured THSA core, fixed factor
/// values): saved for readers, but it follows from the spec and the parameters.
struct NamedWeight {
  std::string name;
  torch::Tensor value;
  torch::Tensor target;
  bool derived() const { return !target.defined(); }
};

class AttentionModuleImpl : public torch::nn::Module {
 public:
  explicit AttentionModuleImpl(spec::AttentionSpec spec) : spec_(std::move(spec)) {}
  ~AttentionModuleImpl() override = default;

  /// x: [B, N, F] -> y: [B, N, F]. Throws std::invalid_argument for a wrongly shaped input.
  virtual AttentionOutput forward(const torch::Tensor& x, const ForwardOptions& options = {}) = 0;

  const spec::AttentionSpec& spec() const { return spec_; }

  /// The effective core C [R, R] (THSA family); undefined for other variants.
  virtual torch::Tensor effectiveCore() const { return {}; }

  /// Every tensor a weight file holds, under the contract's names (`wq.weight`, `core`, ...):
  /// parameters, the fixed parts of structured cores, and for THSA the effective `core`.
  virtual std::vector<NamedWeight> namedWeights() const;

  /// Loads weights by contract name. Every parameter must be present with its exact shape;
  /// unknown names, missing names and wrong shapes are all reported in one exception.
  /// A derived tensor may be left out; when given it must equal what the module derives.
  void loadWeights(const std::vector<std::pair<std::string, torch::Tensor>>& weights);

  /// Number of trainable scalars (equals spec::parameterCount).
  virtual std::int64_t trainableParameterCount() const;

  /// Turns queries and keys by their token's position (rotary positions, a model option; §9).
  /// Throws std::invalid_argument, saying why, for a layer that does not define it (the check
  /// the run configuration makes first: rotaryProblem in run_config.cpp).
  virtual void setRotary(const Rotary& rotary);
  const Rotary& rotary() const { return rotary_; }

 protected:
  /// Checks x is [B, N, F] with F = spec.F (and N = seq_len where the layer fixes N).
  void checkInput(const torch::Tensor& x, bool fixedLength = false) const;

  /// Whether the module applies rotary_ to its queries and keys (the modules that do override it).
  virtual bool turnsQueriesAndKeys() const { return false; }

  spec::AttentionSpec spec_;
  Rotary rotary_;  ///< off unless the model sets it
};

TORCH_MODULE(AttentionModule);

/// Loads `given` tensors into the weights `current()` lists (see AttentionModuleImpl::loadWeights
/// for the rules). `current` is called again after loading to check derived tensors. `what` names
/// the model in the error message.
void loadNamedWeights(const std::function<std::vector<NamedWeight>()>& current,
                      const std::vector<std::pair<std::string, torch::Tensor>>& given, const std::string& what);

/// Builds the module for a valid spec (throws std::invalid_argument listing the problems otherwise).
/// Weights are initialised from the current torch generator: call torch::manual_seed first.
/// `layer` is the block's index in its model (0 first), for designs that depend on depth
/// (differential attention's λ_init).
AttentionModule makeAttentionModule(const spec::AttentionSpec& spec, int layer = 0);

}  // namespace tensorscope::model_core
