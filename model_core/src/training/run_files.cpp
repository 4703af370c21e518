#include <algorithm>
#include "model_core/run_files.h"

#include <charconv>
#include <fstream>
#include <stdexcept>

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

bool readMetrics(const std::string& runDir, const std::function<void(std::int64_t, const json&)>& onRecord,
                 const std::function<void(std::int64_t, const std::string&)>& onDamaged) {
  std::ifstream in(runDir + "/" + kMetricsLogName, std::ios::binary);
  if (!in) return false;
  readMetricsLog(in, onRecord, onDamaged);
  return true;
}

}  // namespace tensorscope::model_core
