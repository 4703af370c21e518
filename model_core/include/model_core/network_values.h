#pragma once
/// The value of every tensor of a layer's tensor diagram for one input: what the diagram's
/// inspector shows when a node, a leg or a box is clicked, and what contraction stepping shows
/// after each step. Torch-free header; computed by model_core's network evaluator, so the values
/// are those of the executable diagram (which equals the layer, `tensorscope diagram --check`).

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "model_core/host_tensor.h"
#include "spec/attention_spec.h"
#include "spec/tensor_network.h"

namespace tensorscope::model_core {

struct NetworkValues {
  spec::AttentionSpec spec;      ///< the layer's design (a trained run's learned core included)
  spec::TensorNetwork network;   ///< built for `spec` at the input's length
  /// By node id and by plan-step output id: the input x, the weights viewed to their node's legs,
  /// the constants, and the result of every plan step (the display maps' steps included); for a
  /// step ending in a softmax, a normalisation or φ, also "<output>.logits", what that operation
  /// was applied to (a softmax's input scaled and masked: masked entries -inf). Batched tensors keep
  /// their leading batch axis, of size 1 (one probe).
  std::map<std::string, HostTensor> values;
  int layer = 0;                   ///< the model's layer (0 for a lone design)
  std::int64_t step = -1;          ///< training step of the weights; -1 for random weights
  std::string probe;               ///< what the input is, for captions
  std::vector<std::string> tokens; ///< the text of each position along N (empty for a random x)

  /// The value of `id`, or null.
  const HostTensor* find(const std::string& id) const {
    const auto it = values.find(id);
    return it == values.end() ? nullptr : &it->second;
  }
};

/// A lone design with random weights (the module's initialisation from `seed`, then every
/// parameter perturbed by N(0, 0.1²) so identity-like initial cores do not hide structure) and a
/// random input x ~ N(0, 1) of `seq` tokens (multilinear: its sizes.seq_len). Seeds and draws from
/// torch's global generator: not for use while a run trains with dropout. Throws
/// std::invalid_argument for an invalid spec or a size the memory guard refuses.
NetworkValues designNetworkValues(const spec::AttentionSpec& spec, std::int64_t seq, std::uint64_t seed);

/// Layer `layer` of a run directory's newest checkpoint on `probe` (as probeRun: typed text, an
/// image number, or empty for the task's default example): x is what enters that layer's
/// attention. Throws std::invalid_argument with the reason (no such layer, no readable weights, a
/// probe the model cannot read).
NetworkValues runNetworkValues(const std::string& run_dir, int layer, const std::string& probe);

}  // namespace tensorscope::model_core
