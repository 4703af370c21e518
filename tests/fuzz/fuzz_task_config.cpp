// Task configs (the "task" object of a run config): a config or std::invalid_argument.
#include "fuzz_util.h"
#include "model_core/tasks.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tensorscope::model_core;
  TaskConfig c;
  try {
    c = taskConfigFromJson(std::string(fuzz::text(data, size)));
  } catch (const std::invalid_argument&) {
    return 0;
  }
  const std::string once = taskConfigToJson(c);
  FUZZ_CHECK(taskConfigToJson(taskConfigFromJson(once)) == once);
  FUZZ_CHECK(validateTaskConfig(c).empty());
  return 0;
}
