// Demo scripts (tensorscope --demo): commands or std::invalid_argument with the line; commands
// format back to a script that parses to the same commands.
#include "fuzz_util.h"
#include "gui/shell/demo_script.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tensorscope::app;
  std::vector<DemoCommand> script;
  try {
    script = parseDemoScript(fuzz::text(data, size), "demo");
  } catch (const std::invalid_argument& e) {
    FUZZ_CHECK(std::string(e.what()).rfind("demo line ", 0) == 0);
    return 0;
  }
  const auto again = parseDemoScript(formatDemoScript(script), "again");
  FUZZ_CHECK(again.size() == script.size());
  for (size_t i = 0; i < script.size(); ++i) FUZZ_CHECK(again[i].name == script[i].name && again[i].arg == script[i].arg);
  return 0;
}
