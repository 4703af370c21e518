#pragma once
/// The small files of a run directory that the trainer reads back (issue 19): trainer_state.json,
/// init.json and the lines of metrics.jsonl. Torch-free, so the fuzz harnesses (tests/fuzz) build them alone.

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <istream>
#include <optional>
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

/// run_status.json: how a run's last training ended, beside its checkpoints. One owner for its
/// writer (the trainer) and every reader (the explorer's run list).
inline constexpr const char* kRunStatusFormat = "tensorscope.run_status";
inline constexpr const char* kRunStatusFileName = "run_status.json";
struct RunEnding {
  std::string status;               ///< finished, stopped, diverged or failed
  std::string message;              ///< the trainer's words (may be empty)
  std::int64_t checkpoint_step = -1;  ///< the step of the checkpoint it left; -1 when none

  bool operator==(const RunEnding&) const = default;
};
std::string runEndingToJson(const RunEnding& ending);
/// Parses run_status.json. Throws std::invalid_argument("<path>: <reason>") for damaged JSON, a
/// wrong envelope, or a missing, mistyped or out-of-range field.
RunEnding parseRunEnding(std::string_view text, const std::string& path);
/// RUN/run_status.json read and parsed; nothing when the run has none (it never ended, or is older).
std::optional<RunEnding> readRunEnding(const std::string& runDir);

/// One line of a JSON-lines log (metrics.jsonl, inspections.jsonl): an object with an integer
/// "step". Throws spec::JsonError for a damaged line or one that is not such a record.
nlohmann::json parseMetricsRecord(std::string_view line);

/// One record of metrics.jsonl: a training step or an evaluation on one split. One owner for the
/// writer (the trainer) and every reader (run summaries, sweeps, the explorer's curves).
struct MetricsRecord {
  enum class Kind { Train, Eval, Other };
  Kind kind = Kind::Other;
  std::string kind_name;  ///< as written: "train", "eval", or a kind this version does not know
  std::int64_t step = 0;
  std::string split;      ///< eval: the split's name
  /// A value written as null (a NaN, e.g. the loss of a diverged step) reads back as NaN; an absent
  /// one as nothing.
  std::optional<double> loss, lr, grad_norm, tokens_per_second, elapsed_seconds;  ///< train (loss: also eval)
  std::optional<double> accuracy, exact_match;                                      ///< eval
  nlohmann::json unknown = nlohmann::json::object();  ///< fields of a newer writer, kept as they were

  static MetricsRecord train(std::int64_t step, double loss, double lr, double grad_norm, double tokens_per_second,
                             double elapsed_seconds);
  /// exact_match < 0: the task has none.
  static MetricsRecord eval(std::int64_t step, const std::string& split, double loss, double accuracy, double exact_match);
  /// A value by its name in the log ("loss", "lr", "grad_norm", "tokens_per_second",
  /// "elapsed_seconds", "accuracy", "exact_match"); nothing when absent or for another name.
  std::optional<double> value(std::string_view name) const;
  /// The value when it is present and finite.
  std::optional<double> finite(std::string_view name) const;
  bool operator==(const MetricsRecord& other) const;
};
nlohmann::json metricsRecordToJson(const MetricsRecord& record);
/// Throws spec::JsonError naming the field: a missing or non-integer step, a kind or split that is
/// not a string, a value that is neither a number nor null.
MetricsRecord metricsRecordFromJson(const nlohmann::json& record);

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
/// Reads RUN_DIR/metrics.jsonl with readMetricsLog into typed records (a line that is no metrics
/// record goes to `onDamaged`). Returns false (calling nothing) when the run has no metrics log yet.
bool readMetrics(const std::string& runDir,
                 const std::function<void(std::int64_t, const MetricsRecord&)>& onRecord,
                 const std::function<void(std::int64_t, const std::string&)>& onDamaged);

}  // namespace tensorscope::model_core
