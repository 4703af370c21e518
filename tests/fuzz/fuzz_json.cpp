// The bounded JSON parser every reader shares (spec/json_reader.h): a value or JsonError; a value
// re-serialises and parses back to itself.
#include "fuzz_util.h"
#include "spec/json_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tensorscope::spec;
  nlohmann::json value;
  try {
    value = parseUntrustedJson(fuzz::text(data, size));
  } catch (const JsonError&) {
    return 0;
  }
  const std::string again = value.dump();
  FUZZ_CHECK(parseUntrustedJson(again) == value);
  FUZZ_CHECK(jsonPreview(value).size() <= 48 + 3);
  return 0;
}
