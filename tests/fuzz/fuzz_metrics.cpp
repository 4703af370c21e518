// metrics.jsonl (resume, eval and the explorer read it back): the bounded log reader agrees line by
// line with parsing each line whole; every record it returns re-parses from its dump.
#include <sstream>
#include <vector>

#include "fuzz_util.h"
#include "model_core/run_files.h"
#include "spec/json_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tensorscope;
  if (size == 0) return 0;
  // The first byte picks the line bound (16 to 4096 bytes, or the real 64 KiB) so that the
  // too-long path and lines crossing the reader's 16 KiB chunks are both reached.
  const size_t bound = data[0] == 0xff ? model_core::kMaxMetricsLineBytes : size_t(16) << (data[0] % 9);
  const std::string_view all = fuzz::text(data + 1, size - 1);
  // The oracle: split on newlines, parse each line whole.
  std::vector<std::pair<int64_t, nlohmann::json>> expected;
  std::vector<int64_t> expectedDamaged;
  int64_t lineNo = 0;
  for (size_t pos = 0; pos < all.size();) {
    const size_t eol = std::min(all.find('\n', pos), all.size());
    const std::string_view line = all.substr(pos, eol - pos);
    ++lineNo;
    if (line.size() > bound) {
      expectedDamaged.push_back(lineNo);
    } else if (!line.empty()) {
      try {
        auto record = model_core::parseMetricsRecord(line);
        FUZZ_CHECK(record.is_object() && record["step"].is_number_integer());
        FUZZ_CHECK(model_core::parseMetricsRecord(record.dump()) == record);
        try {  // the typed record: whatever it reads, it writes back and reads again the same
          const auto typed = model_core::metricsRecordFromJson(record);
          FUZZ_CHECK(model_core::metricsRecordFromJson(model_core::metricsRecordToJson(typed)) == typed);
        } catch (const spec::JsonError&) {
        }
        expected.emplace_back(lineNo, std::move(record));
      } catch (const spec::JsonError&) {
        expectedDamaged.push_back(lineNo);
      }
    }
    pos = eol + 1;
  }
  std::istringstream in{std::string(all)};
  std::vector<std::pair<int64_t, nlohmann::json>> records;
  std::vector<int64_t> damaged;
  const int64_t lines = model_core::readMetricsLog(
      in, [&](int64_t n, const nlohmann::json& j) { records.emplace_back(n, j); },
      [&](int64_t n, const std::string& reason) {
        FUZZ_CHECK(!reason.empty());
        damaged.push_back(n);
      },
      bound);
  FUZZ_CHECK(lines == lineNo);
  FUZZ_CHECK(records == expected);
  FUZZ_CHECK(damaged == expectedDamaged);
  return 0;
}
