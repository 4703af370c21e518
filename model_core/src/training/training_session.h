#pragma once
// A training session (TrainingSession; the explorer's session document is app::Session): task, model,
// optimizer and RNG state, with checkpoint I/O. The trainer loop
// (trainer.cpp), evaluation and inference all work through it.

#include <torch/types.h>

#include <memory>
#include <string>
#include <vector>

#include "model_core/network_values.h"
#include "model_core/run_config.h"
#include "model_core/snapshots.h"
#include "training/adamw.h"
#include "training/cuda_graph_step.h"
#include "training/transformer.h"

namespace tensorscope::model_core {

class TrainingSession {
 public:
  /// Validates `config`, builds the task (loading its data) and the model from config.train.seed.
  explicit TrainingSession(const RunConfig& config);
  /// The same with the task already built (makeTask(config.task)), e.g. to size the memory guard.
  TrainingSession(const RunConfig& config, std::unique_ptr<Task> task);
  // Not copied or moved: the captured CUDA step calls back into this object.
  TrainingSession(const TrainingSession&) = delete;
  TrainingSession& operator=(const TrainingSession&) = delete;

  const RunConfig& config() const { return config_; }
  Task& task() { return *task_; }
  Transformer& model() { return model_; }
  AdamW& optimizer() { return *optimizer_; }
  torch::Device device() const { return device_; }
  int64_t step() const { return step_; }
  std::uint64_t& dataRng() { return dataRng_; }

  /// One optimisation step at learning rate `lr`; returns {loss, grad_norm}. Does not apply the
  /// update when the loss or the gradient norm is not finite (the caller stops the run).
  /// `poison` makes this step's loss NaN (fault injection for testing the divergence guard).
  std::pair<double, double> trainStep(double lr, bool poison = false);
  /// How training steps run on CUDA: "captured" (CUDA graphs, cuda_graph_step.h), "eager: REASON",
  /// "not captured yet"; "cpu" on the CPU.
  std::string stepMode() const;
  int64_t tokensPerStep() const;

  /// Loss, accuracy (and exact match for question-answer tasks) on a fixed evaluation set.
  EvalSnapshot evaluate(Split split, int64_t examples);
  /// The splits evaluated for this task, with their display names.
  std::vector<std::pair<Split, std::string>> evalSplits() const;
  /// Cores, stable ranks, spectra, probe maps and TP roles at the current step. `probe` is what the
  /// attention maps are computed on: empty for the first evaluation example (image), else typed
  /// text (a question of a question-answer task, which the model then answers; a text for char_lm)
  /// or an image task's validation image number. Throws std::invalid_argument, with the reason,
  /// for a probe the model cannot read (an unknown character, longer than the context).
  /// With `networkLayer` ≥ 0, the snapshot also carries every tensor of that layer's diagram on the
  /// same probe (InspectionSnapshot::network; std::invalid_argument for a layer the model lacks).
  InspectionSnapshot inspect(const std::string& probe = "", int networkLayer = -1);
  /// Every tensor of layer `layer`'s diagram on `probe` (read as inspect reads it): x is what
  /// enters that layer's attention. Throws std::invalid_argument for a layer the model lacks or a
  /// probe it cannot read.
  NetworkValues inspectNetwork(int layer, const std::string& probe = "");

  /// Writes model.safetensors, optimizer.safetensors and trainer_state.json into `dir` (a staging
  /// directory of CheckpointStore); refuses (std::runtime_error) when a weight is not finite.
  void saveCheckpoint(const std::string& dir, const std::string& status, const std::string& message) const;
  /// Restores a checkpoint written by saveCheckpoint (weights, optimizer, step, RNG states) after
  /// validating trainer_state.json (format, version, ranges) and that the three files hold one step.
  void loadCheckpoint(const std::string& dir);
  /// True when every weight is finite (one float64 reduction per tensor).
  bool weightsFinite() const;
  /// Loads only the model weights (evaluation, inference).
  void loadWeights(const std::string& dir);

  /// What warmStart took over.
  struct WarmStartReport {
    std::int64_t source_step = -1;        ///< step of the checkpoint (-1 when it does not say)
    std::vector<std::string> loaded;       ///< copied from the checkpoint
    std::vector<std::string> from_config;  ///< THSA core tensors and drawn slot values kept as the config defines them
    std::vector<std::string> unmatched;    ///< absent from the checkpoint or of another shape: fresh
  };
  /// Copies every weight of `dir`'s model.safetensors whose name and shape match this model
  /// (skipping, when `coresFromConfig`, THSA core tensors and the head mixings and MTA kernels whose
  /// values the design draws: spec/slot_values.h). The optimizer and step stay fresh.
  WarmStartReport warmStart(const std::string& dir, bool coresFromConfig);

 private:
  /// A probe input (batch of one), its token texts and its caption.
  struct Probe {
    torch::Tensor input;
    std::vector<std::string> tokens;
    std::string description;
  };
  Probe probeInput(const std::string& probe);
  /// Every tensor of layer `layer`'s diagram from a forward pass on probe `p` (its outputs `outs`).
  NetworkValues networkValues(int layer, const Probe& p, const std::vector<AttentionOutput>& outs) const;
  torch::Tensor sequenceLoss(const torch::Tensor& logits, const torch::Tensor& targets, const torch::Tensor& mask);
  /// The next training batch on the device: {x, labels} (image tasks) or {x, targets, mask}.
  std::vector<torch::Tensor> nextTrainBatch();
  /// The training loss of a batch from nextTrainBatch.
  torch::Tensor batchLoss(const std::vector<torch::Tensor>& batch);
  /// Drops the captured graphs (they read the parameters in place; a restore writes them anew).
  void dropCapturedStep();
  double exactMatch(const TokenBatch& batch);

  RunConfig config_;
  std::unique_ptr<Task> task_;
  Transformer model_{nullptr};
  std::unique_ptr<AdamW> optimizer_;
  std::unique_ptr<CudaGraphStep> graphStep_;  ///< CUDA only: the step as CUDA graphs
  torch::Device device_{torch::kCPU};
  int64_t step_ = 0;
  std::uint64_t dataRng_ = 0;
};

/// Builds the ModelShape a task gives.
ModelShape modelShapeFor(const Task& task, const TaskConfig& config);

}  // namespace tensorscope::model_core
