#pragma once
// The models around the attention layers (LibTorch, internal to model_core).

#include <torch/nn/module.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/dropout.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>

#include "attention/attention_module.h"
#include "model_core/run_config.h"

namespace tensorscope::model_core {

/// Pre-LN block: x + attn(LN₁(x)), then + W₂·GELU(W₁·LN₂(x)).
class BlockImpl : public torch::nn::Module {
 public:
  /// `layer`: the block's index (0 first), for attention designs that depend on depth.
  BlockImpl(const spec::AttentionSpec& spec, int ffnMultiplier, double residualDropout, int layer = 0);
  torch::Tensor forward(const torch::Tensor& x, const ForwardOptions& options, AttentionOutput* inspect);
  AttentionModule attention() const { return attn_; }

 private:
  torch::nn::LayerNorm ln1_{nullptr}, ln2_{nullptr};
  AttentionModule attn_{nullptr};
  torch::nn::Linear fc1_{nullptr}, fc2_{nullptr};
  torch::nn::Dropout drop_{nullptr};
};
TORCH_MODULE(Block);

/// Sizes the data gives the model.
struct ModelShape {
  int64_t vocab = 0;       ///< decoder: vocabulary size
  int64_t seq_len = 0;     ///< decoder: tokens; classifier: patch tokens
  int64_t patch_dim = 0;   ///< classifier: floats per patch
  int64_t classes = 0;     ///< classifier: classes
};

/// Decoder-only language model (tied or separate output head, learned, sinusoidal or rotary positions,
/// optional TP role-modulated embedding), or an encoder classifier over image patches
/// (mean-pooled, non-causal). Parameter names are those of the exported PyTorch module.
class TransformerImpl : public torch::nn::Module {
 public:
  TransformerImpl(const ModelConfig& config, const ModelShape& shape);

  /// tokens [B, N] (int64) -> logits [B, N, V]; or patches [B, T, P] -> logits [B, classes].
  /// With `inspect`, fills one AttentionOutput per layer (maps/roles as `options` ask).
  torch::Tensor forward(const torch::Tensor& input, const ForwardOptions& options = {},
                        std::vector<AttentionOutput>* inspect = nullptr);

  bool isClassifier() const { return classifier_; }
  const ModelShape& shape() const { return shape_; }
  std::vector<Block> blocks() const { return blocks_; }

  /// Weight-file entries: module parameters, with each attention layer's contract names under
  /// `blocks.<i>.attn.` (including the derived THSA `core`).
  std::vector<NamedWeight> namedWeights() const;
  void loadWeights(const std::vector<std::pair<std::string, torch::Tensor>>& weights);

 private:
  torch::Tensor embed(const torch::Tensor& input);

  ModelConfig config_;
  ModelShape shape_;
  bool classifier_ = false;
  torch::nn::Embedding tokens_{nullptr}, roles_{nullptr}, positions_{nullptr};
  torch::nn::Linear patchIn_{nullptr}, head_{nullptr};
  torch::Tensor sinusoid_;  // [N, F] buffer when positions are sinusoidal
  std::vector<Block> blocks_;
  torch::nn::LayerNorm lnF_{nullptr};
};
TORCH_MODULE(Transformer);

/// Builds the model for a validated config and its task's shape; weights from the current seed.
Transformer makeTransformer(const ModelConfig& config, const ModelShape& shape);

}  // namespace tensorscope::model_core
