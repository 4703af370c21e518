#pragma once
// Torch-side overloads of the core analysis (model_core/analysis.h), for the trainer: they take
// the core tensor as it is, on any device, without a copy into std::vector first.

#include <ATen/ATen.h>

#include "model_core/analysis.h"

namespace tensorscope::model_core {

/// analyzeCore of a 2-D floating-point tensor C [rows, cols] (float, double, half or bfloat16;
/// any device, any strides; gradients are ignored). The SVD runs on a CPU double copy.
/// Throws std::invalid_argument for an undefined, non-2-D, empty or non-floating tensor, or a
/// NaN/infinite entry (named by its position).
CoreAnalysis analyzeCore(const at::Tensor& core);

/// analyzeCore(core).stable_rank.
double stableRank(const at::Tensor& core);

}  // namespace tensorscope::model_core
