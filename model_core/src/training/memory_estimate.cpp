// How much memory a training run needs, estimated before anything is allocated (the memory guard's
// input; docs/reliability.md). Counts every value of the model (checked against the real model by
// MemoryGuard.TheEstimateCountsEveryValueOfTheRealModel), the activations and the evaluation set.
#include <cstdint>

#include "model_core/run_config.h"
#include "model_core/trainer.h"
#include "spec/cost_model.h"

namespace tensorscope::model_core {

std::int64_t estimateModelValues(const RunConfig& c, std::int64_t vocabulary) {
  const std::int64_t F = c.model.d_model, N = modelSequenceLength(c), hidden = int64_t(c.model.ffn_multiplier) * F;
  std::int64_t values = 2 * F;  // final LayerNorm
  for (int i = 0; i < c.model.layers; ++i) {
    const auto cost = spec::estimateCost(layerSpec(c.model, i), 1, N);
    values += cost.parameters + cost.frozen_parameters;
    values += 4 * F + (F * hidden + hidden) + (hidden * F + F);  // two LayerNorms, the FFN
  }
  if (c.task.name == "fashion_mnist") {
    const std::int64_t patchDim = int64_t(c.task.patch) * c.task.patch;
    values += patchDim * F + F + F * vocabulary + vocabulary;  // patch projection, class head
  } else {
    values += vocabulary * F * (1 + (c.model.tp_role_embedding ? 1 : 0) + (c.model.tied_embeddings ? 0 : 1));
  }
  const bool rotary = c.model.positions == "rotary" || c.model.positions == "rotary_interleaved";
  if (!rotary) values += N * F;  // learned positions, or the sinusoid table (rotary: none)
  return values;  // (causal multilinear no longer keeps an [N, N, N] mask buffer: issue 38)
}

double estimateTrainingMemory(const RunConfig& c, std::int64_t vocabulary) {
  const bool image = c.task.name == "fashion_mnist";
  if (vocabulary < 0) vocabulary = image ? 10 : 256;
  const int64_t tokens = modelSequenceLength(c);
  const double B = double(c.train.batch), N = double(tokens), F = double(c.model.d_model);
  double activations = 0;
  for (int i = 0; i < c.model.layers; ++i) {
    const auto cost = spec::estimateCost(layerSpec(c.model, i), c.train.batch, tokens);
    // attention activations, plus LN, FFN (two of width mult·F) and residual tensors
    activations += cost.activation_bytes + 4.0 * B * N * F * (4.0 + 2.0 * c.model.ffn_multiplier);
  }
  const double outputs = image ? B * double(vocabulary) : B * N * double(vocabulary);
  activations += 3.0 * 4.0 * outputs;  // logits, log-softmax, their gradient
  // The evaluation set stays in memory: tokens, targets (int64) and the loss mask (float32),
  // or float32 patches and an int64 label per image.
  const double patchDim = double(c.task.patch) * c.task.patch;
  const double evalSet = double(c.train.eval_examples) * (image ? N * patchDim * 4.0 + 8.0 : N * 20.0);
  // weights + gradients + two AdamW moments; backward roughly doubles live activations
  return 16.0 * double(estimateModelValues(c, vocabulary)) + 2.0 * activations + 2.0 * evalSet;
}


}  // namespace tensorscope::model_core
