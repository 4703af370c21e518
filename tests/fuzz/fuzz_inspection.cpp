// inspection.safetensors of a run directory (the explorer restores a reopened run's views from it):
// a snapshot or std::invalid_argument naming the source; what it accepts writes back to bytes that
// read the same again.
#include "fuzz_util.h"
#include "model_core/inspection_files.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tensorscope::model_core;
  InspectionSnapshot s;
  try {
    s = parseInspection(fuzz::text(data, size), "inspection.safetensors");
  } catch (const std::invalid_argument& e) {
    FUZZ_CHECK(std::string(e.what()).rfind("inspection.safetensors", 0) == 0);
    return 0;
  }
  FUZZ_CHECK(s.cores.size() == s.core_layers.size() && s.spectra.size() == s.core_layers.size() &&
             s.stable_ranks.size() == s.core_layers.size());
  for (const auto& r : s.roles) FUZZ_CHECK(s.role_tokens.size() == static_cast<size_t>(r.vectors.rows()));
  const std::string bytes = serializeInspection(s);
  FUZZ_CHECK(serializeInspection(parseInspection(bytes, "again")) == bytes);
  return 0;
}
