// makeTask: the task for a config. Apart from task_config.cpp (torch-free, fuzzed alone in
// tests/fuzz) because the tasks it builds use LibTorch.
#include <stdexcept>

#include "model_core/tasks.h"
#include "tasks/task_factory.h"

namespace tensorscope::model_core {

std::unique_ptr<Task> makeTask(const TaskConfig& config) {
  tasks::requireValidTaskConfig(config);
  if (config.name == "arithmetic") return tasks::makeArithmeticTask(config);
  if (config.name == "char_lm") return tasks::makeCharLmTask(config);
  if (config.name == "fashion_mnist") return tasks::makeFashionMnistTask(config);
  return tasks::makeAlgorithmicTask(config);
}

}  // namespace tensorscope::model_core
