#pragma once
// Constructors of the concrete tasks, used by makeTask (task_factory.cpp). Each expects a
// config that validateTaskConfig accepted.

#include <memory>
#include <string>

#include "model_core/tasks.h"

namespace tensorscope::model_core::tasks {

std::unique_ptr<Task> makeArithmeticTask(const TaskConfig& config);
/// copy, reverse or sort (config.name).
std::unique_ptr<Task> makeAlgorithmicTask(const TaskConfig& config);
std::unique_ptr<Task> makeCharLmTask(const TaskConfig& config);
std::unique_ptr<Task> makeFashionMnistTask(const TaskConfig& config);

/// Throws std::invalid_argument listing every problem validateTaskConfig finds (task_config.cpp).
void requireValidTaskConfig(const TaskConfig& config);

/// Symbols of the algorithmic tasks, in order of use: 0-9, a-z, A-Z.
inline constexpr std::string_view kAlgorithmicSymbols =
    "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
/// Sequence length of the algorithmic extrapolation split: half again as long (at least +1).
inline int algorithmicExtrapolationLength(int length) { return length + (length + 1) / 2; }

}  // namespace tensorscope::model_core::tasks
