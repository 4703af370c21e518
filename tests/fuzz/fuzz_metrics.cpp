// Lines of metrics.jsonl (resume and eval read them back): a record or JsonError, line by line.
#include "fuzz_util.h"
#include "spec/json_reader.h"
#include "training/run_files.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tensorscope;
  const std::string_view all = fuzz::text(data, size);
  for (size_t pos = 0; pos <= all.size();) {
    const size_t eol = std::min(all.find('\n', pos), all.size());
    try {
      const auto record = model_core::parseMetricsRecord(all.substr(pos, eol - pos));
      FUZZ_CHECK(record.is_object() && record["step"].is_number_integer());
      FUZZ_CHECK(model_core::parseMetricsRecord(record.dump()) == record);
    } catch (const spec::JsonError&) {
    }
    pos = eol + 1;
  }
  return 0;
}
