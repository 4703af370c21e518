#pragma once
/// A training run's configuration: the model around the attention layers, the task and the
/// optimisation settings, with their validation and versioned JSON form. Torch-free (the fuzz
/// harnesses build its reader alone).

#include <cstdint>
#include <string>
#include <vector>

#include "model_core/tasks.h"
#include "spec/attention_spec.h"

namespace tensorscope::model_core {

/// The network around the attention layers.
struct ModelConfig {
  std::string kind = "decoder";  ///< "decoder" (token tasks) or "encoder_classifier" (image patches)
  int layers = 2;
  int d_model = 64;              ///< F of every attention spec
  int ffn_multiplier = 4;        ///< FFN width = ffn_multiplier * d_model (GELU)
  std::string positions = "learned";  ///< "learned" or "sinusoidal"
  bool tied_embeddings = true;   ///< decoder: logits = h·Eᵀ with the token embedding E
  bool tp_role_embedding = false;  ///< TP-Transformer eq. 2: x_i = E[w_i] + p_i + E_r[w_i] ⊙ p_i
  double residual_dropout = 0.0;
  /// One spec per layer, or a single spec used by every layer. F must equal d_model; decoders
  /// force causal attention.
  std::vector<spec::AttentionSpec> attention;
};

/// Largest evaluation set a run may ask for (train.eval_examples), like the largest batch.
inline constexpr std::int64_t kMaxEvalExamples = 65536;

struct TrainConfig {
  std::int64_t steps = 1000;
  std::int64_t batch = 32;
  double lr = 1e-3;
  double weight_decay = 0.01;  ///< AdamW decoupled decay, on weight matrices only
  double beta1 = 0.9, beta2 = 0.98, eps = 1e-8;
  std::int64_t warmup = 100;   ///< linear warm-up steps, then cosine decay to min_lr_ratio·lr
  double min_lr_ratio = 0.1;
  double grad_clip = 1.0;      ///< global gradient-norm clip; 0 disables
  std::int64_t eval_interval = 100;
  std::int64_t eval_examples = 256;  ///< in [1, kMaxEvalExamples]
  std::int64_t checkpoint_interval = 200;
  std::int64_t inspect_interval = 50;  ///< cores, maps and roles snapshots
  std::uint64_t seed = 1;
  std::string device = "cpu";  ///< "cpu" or "cuda"
  int threads = 0;             ///< 0: all cores
  /// Finite-divergence guard: the run stops (status diverged) when the loss stays above
  /// divergence_factor × the running minimum of its moving average for divergence_steps
  /// consecutive steps; periodic checkpoints wait while it is above. 0 disables the guard.
  double divergence_factor = 10;
  std::int64_t divergence_steps = 20;
};

struct RunConfig {
  ModelConfig model;
  TaskConfig task;
  TrainConfig train;
};

/// JSON form ("tensorscope.run_config", version 1). Fields left out take defaults; unknown fields
/// and invalid values are errors. Throws std::invalid_argument listing every problem.
std::string runConfigToJson(const RunConfig& config);
RunConfig runConfigFromJson(const std::string& text);
RunConfig readRunConfig(const std::string& path);
/// Every problem of a config, as "field: message" lines (empty when valid).
std::vector<std::string> validateRunConfig(const RunConfig& config);
/// Most problems one message lists: a config of 100,000 bad elements gets 20 lines and a count,
/// not 10 MB.
inline constexpr std::size_t kMaxListedProblems = 20;
/// "HEAD:" and the lines, each on its own indented line and shown with displayText; past
/// kMaxListedProblems, "… and N more problems (M in all)".
std::string listProblems(const std::string& head, const std::vector<std::string>& lines);
/// Text safe to print on a terminal or into a report: control characters (C0, DEL, C1) become
/// visible escapes (\n, \x1b, \u009b); everything else is kept as it is.
std::string displayText(const std::string& text);
/// The attention spec of layer i (expanding a single shared spec).
spec::AttentionSpec layerSpec(const ModelConfig& model, int layer);
/// Tokens the model sees per example: task.seq_len, or for fashion_mnist the (28/patch)² patches.
std::int64_t modelSequenceLength(const RunConfig& config);
/// The names of the splits a run of `config` is evaluated on, as its metrics log records them
/// ("interpolation" and "extrapolation" for arithmetic, else "validation"; TrainingSession::evalSplits).
std::vector<std::string> evaluationSplitNames(const RunConfig& config);

}  // namespace tensorscope::model_core
