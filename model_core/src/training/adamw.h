#pragma once
// AdamW (Loshchilov & Hutter) written out, so its state is plain named tensors that checkpoint to
// safetensors and resume bit-identically. Same update as torch.optim.AdamW:
//   p ← p·(1 − lr·wd);  m ← β₁m + (1−β₁)g;  v ← β₂v + (1−β₂)g²;
//   p ← p − lr·(m/(1−β₁ᵗ)) / (√(v/(1−β₂ᵗ)) + ε)
// Weight decay applies to weight matrices (2-D and above) only, not to biases, LayerNorm gains or
// vectors of structured cores.

#include <torch/types.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace tensorscope::model_core {

class AdamW {
 public:
  struct Options {
    double beta1 = 0.9, beta2 = 0.98, eps = 1e-8, weight_decay = 0.01;
  };
  AdamW(std::vector<std::pair<std::string, torch::Tensor>> params, Options options);

  /// One update with learning rate `lr` from the parameters' current gradients (CPU parameters).
  void step(double lr);
  /// The same update on a GPU, in two halves so that the second can be captured in a CUDA graph and
  /// replayed (cuda_graph_step.h): `prepareDeviceStep` counts the step and writes this step's
  /// learning-rate and bias-correction factors into a device tensor; `applyDeviceStep` updates every
  /// parameter reading them there. The eager CUDA step runs the same two calls, so a replayed step and
  /// an eager one are the same kernels on the same numbers.
  void prepareDeviceStep(double lr);
  void applyDeviceStep();
  /// Allocates the device tensor of the factors (zeros) without counting a step: before capturing
  /// applyDeviceStep, which must read that tensor on every replay.
  void prepareDeviceState();
  void zeroGrad();
  int64_t stepCount() const { return t_; }

  /// State as named tensors ("exp_avg.<param>", "exp_avg_sq.<param>") plus the step count.
  std::vector<std::pair<std::string, torch::Tensor>> state() const;
  /// Restores state() output; throws std::invalid_argument naming missing or mis-shaped tensors.
  void loadState(const std::map<std::string, torch::Tensor>& tensors, int64_t step);

 private:
  struct Slot {
    std::string name;
    torch::Tensor param, m, v;
    bool decay;
  };
  std::vector<Slot> slots_;
  Options options_;
  int64_t t_ = 0;
  torch::Tensor hyper_;  ///< float32 [3] on the parameters' device: 1 − lr·wd, 1/(1−β₂ᵗ), lr/(1−β₁ᵗ)
};

/// Clips the global L2 norm of the gradients to `maxNorm` (0: no clipping); returns the norm before.
double clipGradNorm(const std::vector<torch::Tensor>& params, double maxNorm);

/// The device half of clipGradNorm, with no host synchronisation (capturable in a CUDA graph):
/// the global L2 norm as a float64 tensor on the gradients' device (undefined when no parameter has a
/// gradient), and the clipping by it: gradients × maxNorm/(norm + 1e-6) where norm > maxNorm > 0.
torch::Tensor gradNormTensor(const std::vector<torch::Tensor>& params);
void clipGradsByNorm(const std::vector<torch::Tensor>& params, const torch::Tensor& norm, double maxNorm);

/// Linear warm-up to `lr`, then cosine decay to min_ratio·lr at `total`.
double scheduledLr(int64_t step, int64_t total, int64_t warmup, double lr, double minRatio);

}  // namespace tensorscope::model_core
