#pragma once
/// The small files of a run directory that the trainer reads back (issue 19): trainer_state.json,
/// init.json and the lines of metrics.jsonl. Torch-free, so the fuzz harnesses (tests/fuzz) build them alone.

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <istream>
#include <string>
#include <string_view>
#include <vector>

namespace tensorscope::model_core {

inline constexpr const char* kTrainerStateFormat = "tensorscope.trainer_state";

/// trainer_state.json: where a checkpoint stands. status and message are for people and tools.
struct TrainerState {
  std::int64_t step = 0;
  std::int64_t optimizer_step = 0;  ///< in [0, step]
  std::uint64_t data_rng = 0;       ///< written as a decimal string (JSON numbers lose 64-bit precision)
  std::string status;
  std::string message;

  bool operator==(const TrainerState&) const = default;
};

/// Largest step a run may reach (2^40): a bound on what a trainer state may claim.
inline constexpr std::int64_t kMaxRunStep = std::int64_t(1) << 40;

/// Parses trainer_state.json. Throws std::invalid_argument("<path>: <reason>") for damaged JSON,
/// a wrong envelope, or a missing, mistyped or out-of-range field.
TrainerState parseTrainerState(std::string_view text, const std::string& path);
std::string trainerStateToJson(const TrainerState& state);

/// init.json: what a warm start (a fork) took over from another run's checkpoint. One owner for
/// its writer (the trainer) and every reader (the explorer's fork records).
inline constexpr const char* kWarmStartFormat = "tensorscope.warm_start";
inline constexpr const char* kWarmStartFileName = "init.json";
struct WarmStartRecord {
  std::string source;                    ///< the run or snapshot it started from (absolute path)
  std::int64_t source_step = -1;         ///< that checkpoint's step; -1 when unknown
  std::vector<std::string> loaded;       ///< weight tensors taken over
  std::vector<std::string> from_config;  ///< core tensors from the new design instead (an edited C)
  std::vector<std::string> fresh;        ///< freshly initialised: not in the checkpoint or of another shape

  bool operator==(const WarmStartRecord&) const = default;
};
std::string warmStartRecordToJson(const WarmStartRecord& record);
/// Parses init.json. Throws std::invalid_argument("<path>: <reason>") for damaged JSON, a wrong
/// envelope, or a missing, mistyped or out-of-range field.
WarmStartRecord parseWarmStartRecord(std::string_view text, const std::string& path);

/// One line of metrics.jsonl: an object with an integer "step" (and "kind", "loss", … as written).
/// Throws spec::JsonError for a damaged line or one that is not a metrics record.
nlohmann::json parseMetricsRecord(std::string_view line);

/// Longest line of metrics.jsonl read (64 KiB; the trainer writes records of ~200 bytes).
inline constexpr std::size_t kMaxMetricsLineBytes = std::size_t(64) << 10;

/// Reads a metrics log line by line in bounded memory: each parseable record goes to `onRecord`
/// (line number from 1, record); each damaged line, including one longer than
/// `maxLineBytes` (default kMaxMetricsLineBytes), which is skipped without being held whole, goes
/// to `onDamaged` (line number, reason). Empty lines are ignored. Returns the number of lines read.
std::int64_t readMetricsLog(std::istream& in,
                            const std::function<void(std::int64_t, const nlohmann::json&)>& onRecord,
                            const std::function<void(std::int64_t, const std::string&)>& onDamaged,
                            std::size_t maxLineBytes = kMaxMetricsLineBytes);

/// The name of a run's metrics log (the trainer writes it; readMetrics reads it).
inline constexpr const char* kMetricsLogName = "metrics.jsonl";
/// Reads RUN_DIR/metrics.jsonl with readMetricsLog. Returns false (calling nothing) when the run
/// has no metrics log yet.
bool readMetrics(const std::string& runDir,
                 const std::function<void(std::int64_t, const nlohmann::json&)>& onRecord,
                 const std::function<void(std::int64_t, const std::string&)>& onDamaged);

}  // namespace tensorscope::model_core
