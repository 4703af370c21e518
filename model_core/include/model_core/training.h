#pragma once
/// Training engine: run configuration, UI-agnostic trainer driven by a progress sink and a control
/// block, evaluation and inference on a run directory. Torch-free header.

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
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
/// The attention spec of layer i (expanding a single shared spec).
spec::AttentionSpec layerSpec(const ModelConfig& model, int layer);
/// Tokens the model sees per example: task.seq_len, or for fashion_mnist the (28/patch)² patches.
std::int64_t modelSequenceLength(const RunConfig& config);

/// Per-step scalars.
struct MetricsSnapshot {
  std::int64_t step = 0;
  double loss = 0, lr = 0, grad_norm = 0;
  double tokens_per_second = 0;
  double elapsed_seconds = 0;
};

struct EvalSnapshot {
  std::int64_t step = 0;  ///< the step of the weights evaluated; -1 when unknown (a bare weights file)
  std::string split;
  double loss = 0;
  double accuracy = 0;     ///< token accuracy on loss positions (sequences) or class accuracy
  double exact_match = -1; ///< question-answer tasks (greedy decoding); -1 when not applicable
};

/// A dense matrix as plain data.
struct Matrix {
  int rows = 0, cols = 0;
  std::vector<float> values;  ///< row-major
};

/// What the views show about the model's insides at one step.
struct InspectionSnapshot {
  std::int64_t step = 0;
  std::vector<int> core_layers;             ///< layers that have a core C
  std::vector<Matrix> cores;                ///< their effective C
  std::vector<double> stable_ranks;         ///< ‖C‖_F²/‖C‖_2² per core
  std::vector<std::vector<double>> spectra; ///< singular values per core
  /// Attention maps for the probe example: per layer, one map per head/channel ([N, N] or [d, d]).
  std::vector<std::vector<Matrix>> maps;
  std::vector<std::string> probe_tokens;    ///< token texts of the probe input
  /// TP role vectors of the last TP layer for a probe batch: one row per (example, token, head 0).
  Matrix roles;
  std::vector<std::string> role_tokens;     ///< token text of each role row
  std::vector<std::string> role_labels;     ///< structural label of each role row
  std::vector<std::string> role_contexts;   ///< the question around each token
};

/// Receives progress from a training run (called on the training thread).
class ProgressSink {
 public:
  virtual ~ProgressSink() = default;
  virtual void onStart(std::int64_t /*first_step*/, std::int64_t /*total_steps*/, const std::string& /*device*/,
                       int /*threads*/) {}
  virtual void onMetrics(const MetricsSnapshot&) {}
  virtual void onEval(const EvalSnapshot&) {}
  virtual void onInspection(const InspectionSnapshot&) {}
  virtual void onCheckpoint(std::int64_t /*step*/, const std::string& /*run_dir*/) {}
  virtual void onMessage(const std::string&) {}
};

/// Start/pause/step/resume/stop across threads. stop takes effect within one step.
class TrainerControl {
 public:
  void requestStop();
  void pause();
  void resume();
  /// While paused: run exactly one more step.
  void step();
  bool stopRequested() const { return stop_.load(); }
  bool paused() const;
  /// Asks for a checkpoint at the next step boundary, also while paused (e.g. to fork the run from
  /// its current state). The sink's onCheckpoint reports it.
  void requestCheckpoint();
  /// Called by the trainer between steps: blocks while paused (until resume, step or stop),
  /// calling `writeCheckpoint` (when given) for each checkpoint request meanwhile.
  /// Returns false when the run must stop.
  bool waitToProceed(const std::function<void()>& writeCheckpoint = {});

  /// Fault injection for testing the divergence guard: the loss of step `step` becomes NaN, so
  /// its gradients are NaN too, exactly as a real blow-up would deliver them.
  void injectNonFiniteLossAt(std::int64_t step) { faultStep_.store(step); }
  bool faultInjectedAt(std::int64_t step) const { return faultStep_.load() == step; }
  /// For testing wake-ups: called, under the control's mutex, each time waitToProceed is about to
  /// sleep (its condition was false). Set it before the trainer starts.
  void setSleepProbeForTesting(std::function<void()> probe) { sleepProbe_ = std::move(probe); }

 private:
  std::atomic<bool> stop_{false};
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  bool paused_ = false;
  bool checkpointRequested_ = false;
  int pendingSteps_ = 0;
  std::atomic<std::int64_t> faultStep_{-1};
  std::function<void()> sleepProbe_;
};

struct TrainResult {
  std::int64_t steps_done = 0;  ///< the step reached (counting resumed steps)
  bool stopped_early = false;   ///< stop requested
  bool diverged = false;        ///< loss became NaN/Inf; the last good checkpoint is kept
  std::string message;
  double final_loss = 0;
};

/// A new run that starts from another run's weights (a fork) instead of a fresh initialisation.
struct WarmStart {
  std::string checkpoint_dir;     ///< run directory or snapshot holding model.safetensors; empty: none
  bool cores_from_config = true;  ///< THSA core tensors come from the config (e.g. an edited C), not the checkpoint
};

/// Trains `config` into `run_dir` (created; config.json, model.safetensors, optimizer.safetensors,
/// trainer_state.json, metrics.jsonl, metrics.csv; every write atomic). With `resume`, continues
/// from the run directory's checkpoint bit-identically on CPU. Throws std::invalid_argument for an
/// invalid config or one whose memory estimate exceeds the machine (with the estimate), and
/// std::runtime_error for I/O failures.
/// With a `warm` start (new runs only), every weight of the checkpoint whose name and shape match
/// the new model is copied in before the first step (THSA cores from the config unless told
/// otherwise); the optimizer, schedule and data stream start fresh. What was taken over and what
/// was not is reported through the sink and recorded in `run_dir/init.json`.
TrainResult train(const RunConfig& config, const std::string& run_dir, TrainerControl& control,
                  ProgressSink& sink, bool resume = false, std::int64_t steps_override = -1,
                  const WarmStart& warm = {});

/// Copies a run directory's latest checkpoint (model.safetensors, config.json, trainer_state.json)
/// into `out_dir` (created), each file atomically, after checking that the weights file reads.
/// A running trainer may keep writing `run_dir`: the copy is one consistent checkpoint. Returns its
/// step. Throws std::invalid_argument when `run_dir` holds no readable checkpoint.
std::int64_t snapshotCheckpoint(const std::string& run_dir, const std::string& out_dir);

/// The THSA core of layer `layer` in a run directory's checkpoint, as a spec: the run's own core
/// structure, kinds and trainable mask with the learned values (dense entries, trainable factors,
/// trainable c2/c3). Throws std::invalid_argument when that layer has no core or the weights file
/// does not match the run's config.
spec::CoreSpec learnedCoreSpec(const std::string& run_dir, int layer);

/// Every value the model of `config` holds (parameters, frozen tensors, buffers) for a task of
/// `vocabulary` tokens (decoders) or classes (image classifiers).
std::int64_t estimateModelValues(const RunConfig& config, std::int64_t vocabulary);
/// Estimated peak training memory in bytes: every model value with its gradient and AdamW
/// moments, the activations of a step (logits over the real vocabulary included) and the
/// evaluation set. `vocabulary` < 0 assumes 256 tokens (10 classes for images); the trainer
/// passes the task's real size.
double estimateTrainingMemory(const RunConfig& config, std::int64_t vocabulary = -1);

/// Evaluates a run directory's checkpoint on every split of its task.
std::vector<EvalSnapshot> evaluateRun(const std::string& run_dir);

/// File protocol of `tensorscope infer`: reads `tokens` (I64 [B, N]) or `patches` (F32 [B, T, P])
/// from `input`, writes `logits` (F32) to `output`.
void inferFiles(const std::string& run_dir, const std::string& input, const std::string& output);

}  // namespace tensorscope::model_core

namespace tensorscope::model_core {

/// Writes a self-contained PyTorch export of a run into `out_dir`: model.py (the architecture,
/// `load(DIR)` returning a torch.nn.Module whose forward(tokens [B, N] int64) gives logits
/// [B, N, V], or class logits for the image classifier), model.safetensors and config.json.
/// Throws std::invalid_argument / std::runtime_error with the reason.
void exportPyTorch(const std::string& run_dir, const std::string& out_dir);

}  // namespace tensorscope::model_core
