#pragma once
/// The learned λ of differential attention in a run directory's checkpoint (docs/attention-variants.md
/// §8.5): per layer, λ = e^{λq1·λk1} − e^{λq2·λk2} + λ_init(l), what the layer multiplies its second
/// map by. Read from the checkpoint's weights, never recomputed from a config.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tensorscope::model_core {

/// One entry per layer of the run: the learned λ of a differential layer, nullopt for a layer that
/// is not differential. Throws std::invalid_argument when the run has no readable checkpoint or
/// its weights lack the λ parameters its config implies.
std::vector<std::optional<double>> learnedDiffLambdas(const std::string& run_dir);

/// One trained parameter of a layer's attention, as the checkpoint holds it.
struct LearnedWeight {
  std::string name;                ///< e.g. "mix_post" (blocks.L.attn.mix_post)
  std::vector<std::int64_t> shape;
  std::vector<double> values;      ///< row-major
};

/// The parameters `names` of layer `layer`'s attention (blocks.LAYER.attn.NAME) from the run
/// directory's checkpoint, in the order asked; a name the checkpoint lacks is left out (the layer's
/// design has no such weight). Throws std::invalid_argument when the run has no readable checkpoint
/// or no such layer.
std::vector<LearnedWeight> learnedAttentionWeights(const std::string& run_dir, int layer,
                                                   const std::vector<std::string>& names);

}  // namespace tensorscope::model_core
