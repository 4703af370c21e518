#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include "model_core/run_files.h"

#include <charconv>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "files/read_file.h"
#include "spec/json_reader.h"

namespace tensorscope::model_core {

using nlohmann::json;

namespace {

/// The JSON of a small run file, or std::invalid_argument("PATH is damaged: reason").
json parseRunFile(std::string_view text, const std::string& path) {
  try {
    return spec::parseUntrustedJson(text);
  } catch (const spec::JsonError& e) {
    throw std::invalid_argument(path + " is damaged: " + e.what());
  }
}

/// Throws std::invalid_argument("PATH: problem; problem") when the reader found any.
void refuseProblems(const spec::FieldReader& r, const std::string& path) {
  if (r.empty()) return;
  std::string m;
  for (const auto& line : r.lines()) m += (m.empty() ? "" : "; ") + line;
  throw std::invalid_argument(path + ": " + m);
}

}  // namespace

std::string warmStartRecordToJson(const WarmStartRecord& r) {
  const json j = {{"format", kWarmStartFormat}, {"version", 1},           {"source", r.source},
                  {"source_step", r.source_step}, {"loaded", r.loaded},   {"from_config", r.from_config},
                  {"fresh", r.fresh}};
  return j.dump(2) + "\n";
}

WarmStartRecord parseWarmStartRecord(std::string_view text, const std::string& path) {
  const json j = parseRunFile(text, path);
  if (!spec::hasEnvelope(j, kWarmStartFormat, 1))
    throw std::invalid_argument(path + ": not a " + std::string(kWarmStartFormat) + " record of version 1");
  spec::FieldReader r;
  r.rejectUnknown(j, "", {"format", "version", "source", "source_step", "loaded", "from_config", "fresh"});
  WarmStartRecord out;
  if (!j.contains("source")) r.fail("source", "is missing");
  r.read(j, "source", "", out.source);
  if (r.read(j, "source_step", "", out.source_step) && (out.source_step < -1 || out.source_step > kMaxRunStep))
    r.fail("source_step", "is " + std::to_string(out.source_step) + ", outside [-1, " + std::to_string(kMaxRunStep) + "]");
  for (auto [key, list] : {std::pair{"loaded", &out.loaded}, std::pair{"from_config", &out.from_config},
                           std::pair{"fresh", &out.fresh}}) {
    if (!j.contains(key)) continue;
    const json& a = j[key];
    if (!a.is_array() || !std::all_of(a.begin(), a.end(), [](const json& x) { return x.is_string(); })) {
      r.fail(key, "must be an array of tensor names; got " + spec::kindName(a));
      continue;
    }
    for (const auto& x : a) list->push_back(x.get<std::string>());
  }
  refuseProblems(r, path);
  return out;
}

TrainerState parseTrainerState(std::string_view text, const std::string& path) {
  const json state = parseRunFile(text, path);
  const auto bad = [&](const std::string& why) { return std::invalid_argument(path + ": " + why); };
  if (!state.is_object()) throw bad("not a JSON object");
  if (!state.contains("format") || !state["format"].is_string() || state["format"].get<std::string>() != kTrainerStateFormat)
    throw bad(std::string("\"format\" must be \"") + kTrainerStateFormat + "\"");
  if (!spec::hasEnvelope(state, kTrainerStateFormat, 1)) throw bad("\"version\" must be 1 (this Tensorscope reads version 1)");
  // The fields through the shared field reader (kinds, unknown keys); then the ranges.
  spec::FieldReader r;
  r.rejectUnknown(state, "", {"format", "version", "step", "optimizer_step", "data_rng", "status", "message"});
  TrainerState s;
  std::string rngText;
  for (const char* key : {"step", "optimizer_step", "data_rng"})
    if (!state.contains(key)) r.fail(key, "is missing");
  const bool haveStep = r.read(state, "step", "", s.step);
  const bool haveOptimizerStep = r.read(state, "optimizer_step", "", s.optimizer_step);
  const bool haveRng = r.read(state, "data_rng", "", rngText);
  r.read(state, "status", "", s.status);
  r.read(state, "message", "", s.message);
  const auto range = [&](const char* key, std::int64_t v, std::int64_t lo, std::int64_t hi) {
    if (v < lo || v > hi)
      r.fail(key, "is " + std::to_string(v) + ", outside [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  };
  if (haveStep) range("step", s.step, 0, kMaxRunStep);
  if (haveStep && haveOptimizerStep) range("optimizer_step", s.optimizer_step, 0, s.step);
  if (haveRng) {
    const auto [end, ec] = std::from_chars(rngText.data(), rngText.data() + rngText.size(), s.data_rng);
    if (rngText.empty() || ec != std::errc() || end != rngText.data() + rngText.size())
      r.fail("data_rng", "must be a decimal unsigned 64-bit integer, not " + spec::jsonPreview(json(rngText)));
  }
  refuseProblems(r, path);
  return s;
}

std::string trainerStateToJson(const TrainerState& s) {
  const json state = {{"format", kTrainerStateFormat},
                      {"version", 1},
                      {"step", s.step},
                      {"optimizer_step", s.optimizer_step},
                      {"data_rng", std::to_string(s.data_rng)},
                      {"status", s.status},
                      {"message", s.message}};
  // replace: a message quoting a damaged file may hold invalid UTF-8; the state must still be written.
  return state.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

std::string runEndingToJson(const RunEnding& e) {
  const json j = {{"format", kRunStatusFormat}, {"version", 1},     {"status", e.status},
                  {"message", e.message},       {"checkpoint_step", e.checkpoint_step}};
  // replace: a message quoting a damaged file may hold invalid UTF-8; the status must still be written.
  return j.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

RunEnding parseRunEnding(std::string_view text, const std::string& path) {
  const json j = parseRunFile(text, path);
  if (!j.is_object() || !spec::hasEnvelope(j, kRunStatusFormat, 1))
    throw std::invalid_argument(path + ": not a run status (\"format\": \"" + kRunStatusFormat + "\", \"version\": 1)");
  spec::FieldReader r;
  r.rejectUnknown(j, "", {"format", "version", "status", "message", "checkpoint_step"});
  RunEnding e;
  if (!j.contains("status")) r.fail("status", "is missing");
  if (r.read(j, "status", "", e.status) && e.status != "finished" && e.status != "stopped" && e.status != "diverged" &&
      e.status != "failed")
    r.fail("status", "must be finished, stopped, diverged or failed; got " + spec::jsonPreview(json(e.status)));
  r.read(j, "message", "", e.message);
  if (r.read(j, "checkpoint_step", "", e.checkpoint_step) && (e.checkpoint_step < -1 || e.checkpoint_step > kMaxRunStep))
    r.fail("checkpoint_step", "is " + std::to_string(e.checkpoint_step) + ", outside [-1, 2^40]");
  refuseProblems(r, path);
  return e;
}

std::optional<RunEnding> readRunEnding(const std::string& runDir) {
  const std::string path = runDir + "/" + kRunStatusFileName;
  if (!std::filesystem::exists(path)) return std::nullopt;
  return parseRunEnding(files::readBoundedFile(path), path);
}

json parseMetricsRecord(std::string_view line) {
  json j = spec::parseUntrustedJson(line);
  if (!j.is_object() || !j.contains("step") || !j["step"].is_number_integer())
    throw spec::JsonError("not a metrics record (an object with an integer \"step\")");
  return j;
}

std::int64_t readMetricsLog(std::istream& in, const std::function<void(std::int64_t, const json&)>& onRecord,
                            const std::function<void(std::int64_t, const std::string&)>& onDamaged,
                            std::size_t maxLineBytes) {
  std::int64_t lineNo = 0;
  std::string line;
  bool tooLong = false;  // the current line passed the bound: drop its bytes up to the next newline
  auto finish = [&] {
    ++lineNo;
    if (tooLong) {
      onDamaged(lineNo, "longer than " + std::to_string(maxLineBytes) + " bytes");
    } else if (!line.empty()) {
      try {
        onRecord(lineNo, parseMetricsRecord(line));
      } catch (const spec::JsonError& e) {
        onDamaged(lineNo, e.what());
      }
    }
    line.clear();
    tooLong = false;
  };
  char buffer[1 << 14];
  bool pending = false;  // bytes of an unfinished last line
  while (in) {
    in.read(buffer, sizeof buffer);
    const std::string_view chunk(buffer, size_t(in.gcount()));
    for (size_t pos = 0; pos < chunk.size();) {
      const size_t eol = chunk.find('\n', pos);
      const std::string_view piece = chunk.substr(pos, eol == std::string_view::npos ? std::string_view::npos : eol - pos);
      if (!tooLong) {
        if (line.size() + piece.size() > maxLineBytes) {
          tooLong = true;
          line.clear();
          line.shrink_to_fit();
        } else {
          line.append(piece);
        }
      }
      pending = true;
      if (eol == std::string_view::npos) break;
      finish();
      pending = false;
      pos = eol + 1;
    }
  }
  if (pending) finish();
  return lineNo;
}

namespace {

/// The numeric fields of a metrics record, by their names in the log.
constexpr std::array<std::pair<const char*, std::optional<double> MetricsRecord::*>, 7> kValues = {{
    {"loss", &MetricsRecord::loss},
    {"lr", &MetricsRecord::lr},
    {"grad_norm", &MetricsRecord::grad_norm},
    {"tokens_per_second", &MetricsRecord::tokens_per_second},
    {"elapsed_seconds", &MetricsRecord::elapsed_seconds},
    {"accuracy", &MetricsRecord::accuracy},
    {"exact_match", &MetricsRecord::exact_match},
}};

MetricsRecord::Kind kindOf(const std::string& name) {
  return name == "train" ? MetricsRecord::Kind::Train : name == "eval" ? MetricsRecord::Kind::Eval : MetricsRecord::Kind::Other;
}

bool sameValue(const std::optional<double>& a, const std::optional<double>& b) {
  if (a.has_value() != b.has_value()) return false;
  return !a || *a == *b || (std::isnan(*a) && std::isnan(*b));
}

}  // namespace

MetricsRecord MetricsRecord::train(std::int64_t step, double loss, double lr, double grad_norm, double tokens_per_second,
                                   double elapsed_seconds) {
  MetricsRecord r;
  r.kind = Kind::Train;
  r.kind_name = "train";
  r.step = step;
  r.loss = loss;
  r.lr = lr;
  r.grad_norm = grad_norm;
  r.tokens_per_second = tokens_per_second;
  r.elapsed_seconds = elapsed_seconds;
  return r;
}

MetricsRecord MetricsRecord::eval(std::int64_t step, const std::string& split, double loss, double accuracy,
                                  double exact_match) {
  MetricsRecord r;
  r.kind = Kind::Eval;
  r.kind_name = "eval";
  r.step = step;
  r.split = split;
  r.loss = loss;
  r.accuracy = accuracy;
  if (exact_match >= 0) r.exact_match = exact_match;
  return r;
}

std::optional<double> MetricsRecord::value(std::string_view name) const {
  for (const auto& [key, member] : kValues)
    if (name == key) return this->*member;
  return std::nullopt;
}

std::optional<double> MetricsRecord::finite(std::string_view name) const {
  const auto v = value(name);
  return v && std::isfinite(*v) ? v : std::nullopt;
}

bool MetricsRecord::operator==(const MetricsRecord& other) const {
  for (const auto& [key, member] : kValues)
    if (!sameValue(this->*member, other.*member)) return false;
  return kind == other.kind && kind_name == other.kind_name && step == other.step && split == other.split &&
         unknown == other.unknown;
}

json metricsRecordToJson(const MetricsRecord& r) {
  json j = r.unknown.is_object() ? r.unknown : json::object();
  if (!r.kind_name.empty()) j["kind"] = r.kind_name;
  j["step"] = r.step;
  if (!r.split.empty() || r.kind == MetricsRecord::Kind::Eval) j["split"] = r.split;
  for (const auto& [key, member] : kValues)
    if (const auto& v = r.*member) j[key] = std::isfinite(*v) ? json(*v) : json(nullptr);  // JSON has no NaN: null
  return j;
}

MetricsRecord metricsRecordFromJson(const json& j) {
  if (!j.is_object() || !j.contains("step") || !j["step"].is_number_integer())
    throw spec::JsonError("not a metrics record (an object with an integer \"step\")");
  MetricsRecord r;
  r.step = j["step"].get<std::int64_t>();
  for (const auto& [key, value] : j.items()) {
    if (key == "step") continue;
    if (key == "kind" || key == "split") {
      if (!value.is_string()) throw spec::JsonError("metrics record of step " + std::to_string(r.step) + ": " + key + " must be a string");
      (key == "kind" ? r.kind_name : r.split) = value.get<std::string>();
      continue;
    }
    bool known = false;
    for (const auto& [name, member] : kValues) {
      if (key != name) continue;
      known = true;
      if (value.is_null()) r.*member = std::numeric_limits<double>::quiet_NaN();
      else if (value.is_number()) r.*member = value.get<double>();
      else throw spec::JsonError("metrics record of step " + std::to_string(r.step) + ": " + key + " must be a number or null");
    }
    if (!known) r.unknown[key] = value;
  }
  r.kind = kindOf(r.kind_name);
  return r;
}

bool readMetrics(const std::string& runDir, const std::function<void(std::int64_t, const MetricsRecord&)>& onRecord,
                 const std::function<void(std::int64_t, const std::string&)>& onDamaged) {
  std::ifstream in(runDir + "/" + kMetricsLogName, std::ios::binary);
  if (!in) return false;
  readMetricsLog(
      in,
      [&](std::int64_t line, const json& j) {
        MetricsRecord r;
        try {
          r = metricsRecordFromJson(j);
        } catch (const spec::JsonError& e) {
          return onDamaged(line, e.what());
        }
        onRecord(line, r);
      },
      onDamaged);
  return true;
}

}  // namespace tensorscope::model_core
