#include "training/cuda_graph_step.h"

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <exception>

#include "build_config.h"
#include "training/adamw.h"

#if TS_TORCH_HAS_CUDA_BUILD
#include <ATen/cuda/CUDAEvent.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

namespace tensorscope::model_core {
namespace {

std::atomic<bool> g_graphs{[] {
  const char* v = std::getenv("TENSORSCOPE_CUDA_GRAPHS");
  return !(v && std::strcmp(v, "0") == 0);
}()};

#if TS_TORCH_HAS_CUDA_BUILD
bool sameShapes(const std::vector<torch::Tensor>& a, const std::vector<torch::Tensor>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i].sizes() != b[i].sizes() || a[i].scalar_type() != b[i].scalar_type()) return false;
  return true;
}
#endif

}  // namespace

bool cudaGraphsEnabled() { return g_graphs.load(); }
void setCudaGraphsEnabled(bool enabled) { g_graphs = enabled; }

struct CudaGraphStep::Impl {
  LossFunction loss;
  std::vector<torch::Tensor> params;
  AdamW& optimizer;
  double gradClip;
  std::string eagerBecause;               // non-empty: every step runs eagerly, for this reason
  std::vector<torch::Tensor> inputs;      // the captured graphs' own batch tensors
  torch::Tensor lossValue, gradNorm;      // written by the first graph on every replay
#if TS_TORCH_HAS_CUDA_BUILD
  std::unique_ptr<at::cuda::CUDAGraph> gradients, update;

  /// Captures both graphs on a side stream (CUDA graphs cannot capture the legacy default stream),
  /// after one uncaptured forward and backward there so that cuBLAS and the allocator are set up.
  /// Returns false, with the reason in eagerBecause, when capture fails; nothing was updated then.
  bool capture(const std::vector<torch::Tensor>& batch) {
    for (const auto& t : batch) inputs.push_back(t.clone());
    const auto side = c10::cuda::getStreamFromPool();
    at::cuda::CUDAEvent before;
    before.record(c10::cuda::getCurrentCUDAStream());
    before.block(side);
    bool capturing = false;
    try {
      c10::cuda::CUDAStreamGuard onSide(side);
      loss(inputs).backward();
      for (auto& p : params) p.mutable_grad() = torch::Tensor();  // the graph allocates them in its pool
      gradients = std::make_unique<at::cuda::CUDAGraph>();
      gradients->capture_begin();
      capturing = true;
      const auto l = loss(inputs);
      l.backward();
      lossValue = l.detach();
      gradNorm = gradNormTensor(params);
      gradients->capture_end();
      capturing = false;
      if (!gradNorm.defined()) throw std::runtime_error("no parameter has a gradient");
      optimizer.prepareDeviceState();  // the factors' tensor, read by every replay of the update
      update = std::make_unique<at::cuda::CUDAGraph>();
      update->capture_begin(gradients->pool());
      capturing = true;
      clipGradsByNorm(params, gradNorm, gradClip);
      optimizer.applyDeviceStep();
      update->capture_end();
      capturing = false;
    } catch (const std::exception& e) {
      if (capturing) {
        try {
          (update ? update : gradients)->capture_end();
        } catch (...) {
        }
      }
      eagerBecause = std::string("capture failed: ") + e.what();
      const auto cut = eagerBecause.find('\n');
      if (cut != std::string::npos) eagerBecause.resize(cut);
      gradients.reset();
      update.reset();
      inputs.clear();
      for (auto& p : params) p.mutable_grad() = torch::Tensor();
      c10::cuda::getCurrentCUDAStream().synchronize();
      return false;
    }
    at::cuda::CUDAEvent after;
    after.record(side);
    after.block(c10::cuda::getCurrentCUDAStream());
    return true;
  }
#endif
};

CudaGraphStep::CudaGraphStep(LossFunction loss, std::vector<torch::Tensor> params, AdamW& optimizer, double gradClip,
                             std::string eagerBecause)
    : impl_(new Impl{std::move(loss), std::move(params), optimizer, gradClip, std::move(eagerBecause), {}, {}, {}}) {
#if !TS_TORCH_HAS_CUDA_BUILD
  impl_->eagerBecause = "this LibTorch has no CUDA";
#endif
  if (!cudaGraphsEnabled()) impl_->eagerBecause = "CUDA graphs are switched off";
}

CudaGraphStep::~CudaGraphStep() = default;

std::optional<std::pair<double, double>> CudaGraphStep::step(const std::vector<torch::Tensor>& batch, double lr) {
  auto& s = *impl_;
  if (!s.eagerBecause.empty()) return std::nullopt;
#if TS_TORCH_HAS_CUDA_BUILD
  if (!s.gradients) {
    if (!s.capture(batch)) return std::nullopt;
  } else if (!sameShapes(batch, s.inputs)) {
    s.eagerBecause = "the batches change shape";
    return std::nullopt;
  }
  {
    torch::NoGradGuard noGrad;
    for (std::size_t i = 0; i < batch.size(); ++i) s.inputs[i].copy_(batch[i]);
  }
  s.gradients->replay();
  const double lossValue = s.lossValue.item<double>(), norm = s.gradNorm.item<double>();
  if (std::isfinite(lossValue) && std::isfinite(norm)) {
    s.optimizer.prepareDeviceStep(lr);
    s.update->replay();
  }
  return std::make_pair(lossValue, norm);
#else
  (void)batch, (void)lr;
  return std::nullopt;
#endif
}

std::string CudaGraphStep::status() const {
  if (!impl_->eagerBecause.empty()) return "eager: " + impl_->eagerBecause;
#if TS_TORCH_HAS_CUDA_BUILD
  if (impl_->gradients) return "captured";
#endif
  return "not captured yet";
}

}  // namespace tensorscope::model_core
