#pragma once
// GELU, x·Φ(x) with the exact (erf) normal CDF, as the transformer's feed-forward layer applies it
// (PyTorch's F.gelu default, which the exported model.py calls). On the CPU in float32 and float64
// it runs on the vectorised row operations (kernels/row_ops.h: AVX-512, AVX2 or SSE2, picked at run
// time) in one pass forward and one backward; LibTorch 1.13's own kernel dispatches to AVX2 at
// most and takes ~9% of the reference training step. Elsewhere, or with the fused kernels switched
// off (setFusedAttentionEnabled(false)), torch::gelu, which is also its test oracle.

#include <torch/types.h>

namespace tensorscope::model_core {

/// GELU(x) elementwise; differentiable (first order on the fused path; a backward taken with
/// create_graph runs ATen's gelu_backward, so higher orders exist too).
torch::Tensor fusedGelu(const torch::Tensor& x);

}  // namespace tensorscope::model_core
