#pragma once
// Evaluates a spec::TensorNetwork with LibTorch: binds its nodes to a module's contract-named
// weights and the input, runs the plan (einsum steps, softmax boxes with their scale and causal
// mask, elementwise operations) and returns y and the display maps. The diagram and the module
// are built from one AttentionSpec; this is how the diagram is shown to compute the module.

#include <torch/types.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "attention/attention_module.h"
#include "spec/tensor_network.h"

namespace tensorscope::model_core {

/// What a network evaluates to.
struct NetworkValue {
  torch::Tensor y;     ///< [B, N, F]
  torch::Tensor maps;  ///< [B, maps_shape...] (the module's display maps), or undefined
};

/// Converts a module's floating-point parameters and buffers to float64 in place. Unlike
/// Module::to(kDouble), which converts every tensor, it leaves boolean masks (a dense core's
/// trainable mask, multilinear's causal mask) boolean.
void toFloat64(torch::nn::Module& module);

class NetworkEvaluator {
 public:
  /// Takes a network from spec::buildTensorNetwork; throws std::invalid_argument when
  /// spec::checkNetwork finds it inconsistent.
  explicit NetworkEvaluator(spec::TensorNetwork network);

  const spec::TensorNetwork& network() const { return network_; }

  /// The tensor of every drawn node: weights by contract name viewed to the node's legs, the
  /// input x [B, N, F] for "x", constants by recipe (in x's dtype and device). Throws
  /// std::invalid_argument for a missing weight or one whose size does not fit the legs.
  std::map<std::string, torch::Tensor> bind(const std::vector<NamedWeight>& weights, const torch::Tensor& x) const;

  /// Runs the plan (only the steps y, and with `withMaps` the maps, depend on).
  NetworkValue evaluate(const std::vector<NamedWeight>& weights, const torch::Tensor& x, bool withMaps = true) const;

  /// Every tensor of the network: the bound nodes (as `bind`) and the output of every plan step,
  /// the display maps' steps included, by id; for a step whose operation is a softmax, a
  /// normalisation or φ, also what it was applied to, as "<output>.logits" (scaled and masked as
  /// the softmax sees it: masked entries -inf). What the diagram's inspector shows.
  std::map<std::string, torch::Tensor> evaluateAll(const std::vector<NamedWeight>& weights, const torch::Tensor& x) const;

 private:
  /// Runs the plan steps whose outputs are in `needed` (empty: every step) into `values`; with
  /// `logits`, also each operation's input as "<output>.logits".
  void run(std::map<std::string, torch::Tensor>& values, const std::set<std::string>& needed, std::int64_t batch,
           bool logits = false) const;
  /// One step; `preOp`, when given, receives the tensor the step's operation is applied to.
  torch::Tensor runStep(const spec::PlanStep& step, const std::map<std::string, torch::Tensor>& values,
                        const std::map<char, std::int64_t>& sizes, torch::Tensor* preOp = nullptr) const;

  spec::TensorNetwork network_;
};

}  // namespace tensorscope::model_core

namespace tensorscope::model_core {
struct NetworkValues;

/// Fills `out.spec`, `out.network` and `out.values` by evaluating every tensor of `spec`'s
/// network with `weights` (contract names) on `x` [1, N, F]. With `rotary.on` (a layer of a model
/// with rotary positions) the network carries the turns of its queries and keys
/// (spec::withRotaryTurns, blocks of the head size D), so its y is the layer's.
void evaluateNetworkValues(const spec::AttentionSpec& spec, const std::vector<NamedWeight>& weights,
                           const torch::Tensor& x, NetworkValues& out, const Rotary& rotary = Rotary{});

/// spec::buildTensorNetwork(spec, seq), with the rotary turns of `rotary` when it is on.
spec::TensorNetwork layerNetwork(const spec::AttentionSpec& spec, std::int64_t seq, const Rotary& rotary);

}  // namespace tensorscope::model_core
