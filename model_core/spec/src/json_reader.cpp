#include "spec/json_reader.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <vector>

namespace tensorscope::spec {

using nlohmann::json;

std::string plainMessage(const std::exception& e) {
  std::string m = e.what();
  if (m.rfind("[json.exception.", 0) == 0) {
    const auto close = m.find("] ");
    if (close != std::string::npos) m = m.substr(close + 2);
  }
  return m;
}

json parseUntrustedJson(std::string_view text) {
  // nlohmann's parser is iterative; the callback sees every event with its depth, so a deep
  // document is refused at depth kMaxJsonDepth + 1 before any recursive code (dump, destructors
  // of older versions, our readers) can meet it. One key set per open object catches repeats.
  std::vector<std::set<std::string>> keys;
  const json::parser_callback_t check = [&keys](int depth, json::parse_event_t event, json& parsed) {
    switch (event) {
      case json::parse_event_t::object_start:
      case json::parse_event_t::array_start:
        if (depth >= kMaxJsonDepth)
          throw JsonError("nested deeper than " + std::to_string(kMaxJsonDepth) + " levels");
        if (event == json::parse_event_t::object_start) keys.emplace_back();
        break;
      case json::parse_event_t::object_end:
        if (!keys.empty()) keys.pop_back();
        break;
      case json::parse_event_t::key: {
        const auto& k = parsed.get_ref<const std::string&>();
        if (!keys.empty() && !keys.back().insert(k).second)
          throw JsonError("the key " + jsonPreview(parsed) + " appears twice in one object (the last would silently win)");
        break;
      }
      default:
        break;
    }
    return true;
  };
  try {
    return json::parse(text.begin(), text.end(), check);
  } catch (const JsonError&) {
    throw;
  } catch (const json::exception& e) {
    throw JsonError(plainMessage(e));
  }
}

bool hasEnvelope(const json& j, std::string_view format, std::int64_t version) {
  if (!j.is_object()) return false;
  const auto f = j.find("format");
  const auto v = j.find("version");
  return f != j.end() && f->is_string() && f->get_ref<const std::string&>() == format && v != j.end() &&
         v->is_number_integer() && v->get<std::int64_t>() == version;
}

std::string jsonPreview(const json& value, std::size_t max) {
  // Values reaching here were parsed with a bounded depth, so dump() cannot recurse deeply; a
  // huge array or string is still cut before it reaches a message.
  std::string text;
  if (value.is_string()) {
    const auto& s = value.get_ref<const std::string&>();
    text = json(s.size() > max ? s.substr(0, max) : s).dump();
  } else if (value.is_array() && value.size() > 8) {
    text = "[";  // built step by step: GCC 12 warns (-Wrestrict, falsely) on "literal" + string
    text += value.front().dump();
    text += ", … ";
    text += std::to_string(value.size());
    text += " elements]";
  } else if (value.is_object() && value.size() > 8) {
    text = "{… ";
    text += std::to_string(value.size());
    text += " fields}";
  } else {
    text = value.dump();
  }
  if (text.size() > max) {
    // Cut on a UTF-8 character boundary.
    std::size_t cut = max;
    while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
    text = text.substr(0, cut) + "…";
  }
  return text;
}

std::string readBoundedFile(const std::string& path, std::uintmax_t maxBytes) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) throw std::runtime_error("cannot open " + path + ": " + std::strerror(errno));
  if (S_ISDIR(st.st_mode)) throw std::runtime_error(path + " is a directory, not a file");
  if (!S_ISREG(st.st_mode))
    throw std::runtime_error(path + " is not a regular file (a device, FIFO or socket); give a file");
  if (std::uintmax_t(st.st_size) > maxBytes)
    throw std::runtime_error(path + " is " + std::to_string(st.st_size) + " bytes; files of this kind may hold at most " +
                             std::to_string(maxBytes) + " bytes");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + path + ": " + std::strerror(errno));
  std::string text;
  text.resize(std::size_t(st.st_size));
  in.read(text.data(), std::streamsize(text.size()));
  if (in.gcount() != std::streamsize(text.size()) || in.bad())
    throw std::runtime_error("cannot read " + path + ": it changed while being read, or " + std::strerror(errno));
  return text;
}

}  // namespace tensorscope::spec
