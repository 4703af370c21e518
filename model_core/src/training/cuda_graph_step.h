#pragma once
// A training step on CUDA as CUDA graphs (issue 39): small models are bound by kernel launches (a
// reference-size step is a few hundred small kernels, each a few microseconds of CPU work), and a
// graph replays them all with one launch. Two graphs, captured once on the first step:
//   1. forward, loss, backward and the global gradient norm, into this object's own input tensors;
//   2. the gradient clipping and the AdamW update (AdamW::applyDeviceStep).
// Between them the host reads the loss and the norm (the one synchronisation an eager step has too)
// and replays the update only when both are finite, as the eager step does. The eager CUDA step runs
// the same functions, so a replayed step equals an eager one; the step count, learning rate and
// bias corrections live in device tensors written before each replay (AdamW::prepareDeviceStep).
//
// Where a graph cannot serve, `step` returns nothing and the caller runs the step eagerly: a CPU-only
// LibTorch, switched off (setCudaGraphsEnabled, TENSORSCOPE_CUDA_GRAPHS=0), a batch of other shapes
// than the captured one, or a capture that failed (an operation that synchronises with the host);
// `status()` says which.

#include <torch/types.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace tensorscope::model_core {

class AdamW;

/// Whether training steps on CUDA are captured as graphs (process-wide). On by default; the
/// environment's TENSORSCOPE_CUDA_GRAPHS=0 switches it off (read once).
bool cudaGraphsEnabled();
void setCudaGraphsEnabled(bool enabled);

class CudaGraphStep {
 public:
  /// The loss of a batch given as device tensors (the model in training mode, no dropout).
  using LossFunction = std::function<torch::Tensor(const std::vector<torch::Tensor>&)>;
  /// `eagerBecause`, when not empty, is a reason of the caller's why every step must run eagerly.
  CudaGraphStep(LossFunction loss, std::vector<torch::Tensor> params, AdamW& optimizer, double gradClip,
                std::string eagerBecause = "");
  ~CudaGraphStep();
  CudaGraphStep(const CudaGraphStep&) = delete;
  CudaGraphStep& operator=(const CudaGraphStep&) = delete;

  /// One step on `batch` at learning rate `lr`: {loss, gradient norm}, the update applied when both
  /// are finite. Nothing (and no state changed) when the step must run eagerly.
  std::optional<std::pair<double, double>> step(const std::vector<torch::Tensor>& batch, double lr);
  /// "captured", "not captured yet", or why steps run eagerly.
  std::string status() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tensorscope::model_core
