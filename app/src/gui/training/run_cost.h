#pragma once
/// What a run costs before it trains, for the runs list's tooltip: its task in words, its size, its
/// steps and tokens, and a rough time on a CPU, so that a newcomer sees that the reference-size run
/// of the default session (4 layers, 2000 steps of a character model) is a long one.

#include <QString>

namespace tensorscope::model_core {
struct RunConfig;
}

namespace tensorscope::app {

struct RunCost {
  qint64 tokensPerStep = 0;   ///< batch × the model's sequence length
  double flopsPerStep = 0;    ///< forward and backward (3 × forward), attention and the rest
  double seconds = 0;         ///< every step, at kCpuFlopsPerSecond plus ~50 ms (0: no estimate, an invalid design)
};

/// The training throughput the estimate assumes, calibrated on dense THSA at the reference size:
/// about 1.3 s a step in the explorer on a laptop-class CPU (bench/README.md), where this model
/// counts ~230 GFLOP a step (the fused kernel does less work than the plain contraction counted).
inline constexpr double kCpuFlopsPerSecond = 180e9;

RunCost estimateRunCost(const model_core::RunConfig& config);

/// "Character language model on the King James Bible · 4 layers · 2000 steps of 32 × 128 tokens
/// (8.2 M tokens) · about 45 min on a CPU (rough estimate)".
QString runCostText(const model_core::RunConfig& config);

/// "about 43 min" (empty when the design has no estimate): the runs list says it of runs that
/// have not trained yet.
QString roughTrainingTime(const model_core::RunConfig& config);

/// The task in words ("reversing digit strings", "character language model on the King James Bible").
QString taskDescription(const QString& task);

}  // namespace tensorscope::app
