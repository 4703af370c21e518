#pragma once
/// One attention layer behind a torch-free interface: build it from a spec, save/load its weights
/// as safetensors under the contract's names, run it on files.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "spec/attention_spec.h"

namespace tensorscope::model_core {

struct WeightInfo {
  std::string name;             ///< contract name, e.g. "wq.weight", "core", "core.A"
  std::vector<int64_t> shape;
  bool derived = false;         ///< follows from the spec and the other weights (e.g. THSA `core`)
};

class AttentionLayer {
 public:
  /// Builds the layer for a valid spec; weights are initialised from `seed` (CPU, bit-identical
  /// for the same seed). Throws std::invalid_argument listing every spec problem.
  AttentionLayer(const spec::AttentionSpec& spec, std::uint64_t seed);
  ~AttentionLayer();
  AttentionLayer(AttentionLayer&&) noexcept;
  AttentionLayer& operator=(AttentionLayer&&) noexcept;

  const spec::AttentionSpec& spec() const;
  std::int64_t trainableParameterCount() const;
  std::vector<WeightInfo> weights() const;

  /// Writes every weight (F32) atomically, with the spec JSON in the file's metadata.
  void saveWeights(const std::string& path) const;
  /// Loads weights by contract name; missing, unexpected and mis-shaped tensors are all reported.
  void loadWeights(const std::string& path);

  /// The file protocol of `tensorscope attention`: reads `x` ([B, N, F], float) from `input`,
  /// writes `y` (and `maps`, `roles` for tp, `map_parts` [B, H, 2, N, N] for differential
  /// attention's two maps per head, when `withMaps`) as F32 to `output`. Returns the
  /// names of the tensors written, in file order.
  std::vector<std::string> runOnFiles(const std::string& input, const std::string& output, bool withMaps) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tensorscope::model_core
