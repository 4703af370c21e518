#include "model_core/run_files.h"

#include <charconv>
#include <fstream>
#include <stdexcept>

#include "spec/json_reader.h"

namespace tensorscope::model_core {

using nlohmann::json;

TrainerState parseTrainerState(std::string_view text, const std::string& path) {
  json state;
  try {
    state = spec::parseUntrustedJson(text);
  } catch (const spec::JsonError& e) {
    throw std::invalid_argument(path + " is damaged: " + e.what());
  }
  const auto bad = [&](const std::string& why) { return std::invalid_argument(path + ": " + why); };
  if (!state.is_object()) throw bad("not a JSON object");
  if (!state.contains("format") || !state["format"].is_string() || state["format"].get<std::string>() != kTrainerStateFormat)
    throw bad(std::string("\"format\" must be \"") + kTrainerStateFormat + "\"");
  if (!spec::hasEnvelope(state, kTrainerStateFormat, 1)) throw bad("\"version\" must be 1 (this Tensorscope reads version 1)");
  for (const auto& [key, value] : state.items())
    if (key != "format" && key != "version" && key != "step" && key != "optimizer_step" && key != "data_rng" &&
        key != "status" && key != "message")
      throw bad("unknown field " + spec::jsonPreview(json(key)));
  const auto integer = [&](const char* key, std::int64_t lo, std::int64_t hi) {
    if (!state.contains(key) || !state[key].is_number_integer()) throw bad(std::string("\"") + key + "\" must be an integer");
    if (state[key].is_number_unsigned() && state[key].get<std::uint64_t>() > std::uint64_t(hi))
      throw bad(std::string("\"") + key + "\" is " + spec::jsonPreview(state[key]) + ", outside [" + std::to_string(lo) +
                ", " + std::to_string(hi) + "]");
    const auto v = state[key].get<std::int64_t>();
    if (v < lo || v > hi)
      throw bad(std::string("\"") + key + "\" is " + std::to_string(v) + ", outside [" + std::to_string(lo) + ", " +
                std::to_string(hi) + "]");
    return v;
  };
  TrainerState s;
  s.step = integer("step", 0, kMaxRunStep);
  s.optimizer_step = integer("optimizer_step", 0, s.step);
  if (!state.contains("data_rng") || !state["data_rng"].is_string()) throw bad("\"data_rng\" must be a string");
  const auto& rngText = state["data_rng"].get_ref<const std::string&>();
  const auto [end, ec] = std::from_chars(rngText.data(), rngText.data() + rngText.size(), s.data_rng);
  if (rngText.empty() || ec != std::errc() || end != rngText.data() + rngText.size())
    throw bad("\"data_rng\" must be a decimal unsigned 64-bit integer, not " + spec::jsonPreview(state["data_rng"]));
  for (const auto& [key, out] : {std::pair{"status", &s.status}, std::pair{"message", &s.message}}) {
    if (!state.contains(key)) continue;
    if (!state[key].is_string()) throw bad(std::string("\"") + key + "\" must be a string");
    *out = state[key].get<std::string>();
  }
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
