// Run configs (train --config, config.json of a run): a config or std::invalid_argument naming the
// field; a config's JSON is a fixed point of parse ∘ serialise.
#include "fuzz_util.h"
#include "model_core/run_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tensorscope::model_core;
  RunConfig c;
  try {
    c = runConfigFromJson(std::string(fuzz::text(data, size)));
  } catch (const std::invalid_argument&) {
    return 0;
  }
  const std::string once = runConfigToJson(c);
  FUZZ_CHECK(runConfigToJson(runConfigFromJson(once)) == once);
  return 0;
}
