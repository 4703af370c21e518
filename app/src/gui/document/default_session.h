#pragma once
/// The explorer's built-in default session and the default run settings of a new design.

#include <QString>

#include "gui/document/session.h"
#include "spec/attention_spec.h"

namespace tensorscope::app {

/// The default session: MHSA, dense THSA and heads-only THSA (64 heads of size 1) at (nearly) equal
/// attention parameter count on reversing 16 digits, and dense THSA at the benchmark's reference
/// size (referenceDenseThsaRun).
Session defaultSession();

/// Dense THSA at the reference size of bench/train_bench (KJV char LM, F = 128, 4 layers, H = 4,
/// D = 32, R = 128, N = 128, batch 32): what the fused dense kernel makes trainable live.
RunEntry referenceDenseThsaRun();

/// A run config for `spec` with the default model, task and training settings of the explorer.
model_core::RunConfig defaultRunConfig(const spec::AttentionSpec& spec, const QString& task = "reverse");

}  // namespace tensorscope::app
