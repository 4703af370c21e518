#include "spec/json_reader.h"

#include <algorithm>
#include <set>
#include <vector>

namespace tensorscope::spec {

using nlohmann::json;

std::string kindName(const json& v) {
  switch (v.type()) {
    case json::value_t::null: return "null";
    case json::value_t::boolean: return v.get<bool>() ? "true" : "false";
    case json::value_t::string: return "a string";
    case json::value_t::array: return "an array";
    case json::value_t::object: return "an object";
    default: return "the number " + jsonPreview(v);
  }
}

void FieldReader::fail(std::string field, std::string message) {
  problems_.push_back({std::move(field), std::move(message)});
}

void FieldReader::rejectUnknown(const json& obj, const std::string& prefix, const std::vector<std::string>& known) {
  if (!obj.is_object()) return;
  for (auto it = obj.begin(); it != obj.end(); ++it)
    if (std::find(known.begin(), known.end(), it.key()) == known.end()) {
      std::string list;
      for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
      // A key is echoed as a short JSON preview (a hostile key may be megabytes long).
      const std::string shown = jsonPreview(json(it.key()));
      fail(prefix + (it.key().size() <= 48 ? it.key() : shown), "unknown field " + shown + " (known here: " + list + ")");
    }
}

bool FieldReader::read(const json& obj, const char* key, const std::string& prefix, bool& out) {
  if (!obj.contains(key)) return false;
  const json& v = obj[key];
  if (!v.is_boolean()) {
    fail(prefix + key, "must be true or false; got " + kindName(v));
    return false;
  }
  out = v.get<bool>();
  return true;
}

bool FieldReader::readWhole(const json& v, const std::string& field, long double lo, long double hi, long double& out) {
  if (!v.is_number_integer() && !v.is_number_unsigned()) {
    fail(field, "must be a whole number; got " + kindName(v));
    return false;
  }
  const long double x = v.is_number_unsigned() ? static_cast<long double>(v.get<std::uint64_t>())
                                               : static_cast<long double>(v.get<std::int64_t>());
  if (x < lo || x > hi) {
    fail(field, "is out of range: " + jsonPreview(v));
    return false;
  }
  out = x;
  return true;
}

bool FieldReader::read(const json& obj, const char* key, const std::string& prefix, int& out) {
  long double x = 0;
  if (!obj.contains(key) || !readWhole(obj[key], prefix + key, -2147483647.0L, 2147483647.0L, x)) return false;
  out = static_cast<int>(x);
  return true;
}

bool FieldReader::read(const json& obj, const char* key, const std::string& prefix, std::int64_t& out) {
  if (!obj.contains(key)) return false;
  const json& v = obj[key];
  long double x = 0;
  if (!readWhole(v, prefix + key, -9223372036854775807.0L, 9223372036854775807.0L, x)) return false;
  out = v.is_number_unsigned() ? static_cast<std::int64_t>(v.get<std::uint64_t>()) : v.get<std::int64_t>();
  return true;
}

bool FieldReader::read(const json& obj, const char* key, const std::string& prefix, std::uint64_t& out) {
  if (!obj.contains(key)) return false;
  const json& v = obj[key];
  if (v.is_number_integer() && !v.is_number_unsigned()) {
    fail(prefix + key, "must be in [0, 2^64-1]; got " + jsonPreview(v));
    return false;
  }
  long double x = 0;
  if (!readWhole(v, prefix + key, 0.0L, 18446744073709551615.0L, x)) return false;
  out = v.get<std::uint64_t>();
  return true;
}

bool FieldReader::read(const json& obj, const char* key, const std::string& prefix, double& out) {
  if (!obj.contains(key)) return false;
  const json& v = obj[key];
  if (!v.is_number()) {
    fail(prefix + key, "must be a number; got " + kindName(v));
    return false;
  }
  out = v.get<double>();
  return true;
}

bool FieldReader::read(const json& obj, const char* key, const std::string& prefix, std::string& out) {
  if (!obj.contains(key)) return false;
  const json& v = obj[key];
  if (!v.is_string()) {
    fail(prefix + key, "must be a string; got " + kindName(v));
    return false;
  }
  out = v.get<std::string>();
  return true;
}

std::vector<std::string> FieldReader::lines() const {
  std::vector<std::string> out;
  for (const auto& p : problems_) out.push_back(p.field + ": " + p.message);
  return out;
}

std::string plainMessage(const std::exception& e) {
  std::string m = e.what();
  if (m.rfind("[json.exception.", 0) == 0) {
    const auto close = m.find("] ");
    if (close != std::string::npos) m = m.substr(close + 2);
  }
  return m;
}

namespace {

// Builds the value with nlohmann's own DOM builder and checks depth and keys on the way. SAX, not
// nlohmann's parser callback: after every closed object or array the callback parser scans its
// parent for discarded members, which made a header of n tensors cost O(n²) (200,000 safetensors
// entries took over a minute; issue 19, item 7).
class BoundedBuilder {
 public:
  using Dom = nlohmann::detail::json_sax_dom_parser<json>;
  BoundedBuilder(json& out, int maxDepth, std::size_t maxMembers)
      : dom_(out), maxDepth_(maxDepth), maxMembers_(maxMembers) {}

  bool null() { return dom_.null(); }
  bool boolean(bool v) { return dom_.boolean(v); }
  bool number_integer(json::number_integer_t v) { return dom_.number_integer(v); }
  bool number_unsigned(json::number_unsigned_t v) { return dom_.number_unsigned(v); }
  bool number_float(json::number_float_t v, const json::string_t& s) { return dom_.number_float(v, s); }
  bool string(json::string_t& v) { return dom_.string(v); }
  bool binary(json::binary_t& v) { return dom_.binary(v); }
  bool start_object(std::size_t n) {
    enter();
    keys_.emplace_back();
    return dom_.start_object(n);
  }
  bool key(json::string_t& k) {
    if (keys_.back().size() >= maxMembers_)
      throw JsonError("an object has more than " + std::to_string(maxMembers_) + " members");
    if (!keys_.back().insert(k).second) throw DuplicateKeyError(k, int(keys_.size()));
    return dom_.key(k);
  }
  bool end_object() {
    keys_.pop_back();
    --depth_;
    return dom_.end_object();
  }
  bool start_array(std::size_t n) {
    enter();
    return dom_.start_array(n);
  }
  bool end_array() {
    --depth_;
    return dom_.end_array();
  }
  template <class Exception>
  bool parse_error(std::size_t position, const std::string& token, const Exception& e) {
    return dom_.parse_error(position, token, e);  // throws e
  }

 private:
  void enter() {
    if (++depth_ > maxDepth_) throw JsonError("nested deeper than " + std::to_string(maxDepth_) + " levels");
  }

  Dom dom_;
  int maxDepth_;
  std::size_t maxMembers_;
  int depth_ = 0;
  std::vector<std::set<std::string>> keys_;  // one per open object
};

}  // namespace

DuplicateKeyError::DuplicateKeyError(const std::string& key, int depth)
    : JsonError("the key " + jsonPreview(json(key)) + " appears twice in one object (the last would silently win)"),
      key_(key),
      depth_(depth) {}

json parseUntrustedJson(std::string_view text, int maxDepth, std::size_t maxMembers) {
  // nlohmann's lexer takes a NUL byte for the end of the input and ignores whatever follows it;
  // JSON text cannot contain one, so it is refused with its place.
  if (const auto nul = text.find('\0'); nul != std::string_view::npos) {
    const auto before = text.substr(0, nul);
    const auto line = 1 + std::count(before.begin(), before.end(), '\n');
    const auto lineStart = before.rfind('\n');
    const auto column = nul - (lineStart == std::string_view::npos ? 0 : lineStart + 1) + 1;
    throw JsonError("line " + std::to_string(line) + ", column " + std::to_string(column) +
                    ": a NUL byte, which JSON text cannot contain");
  }
  json out;
  BoundedBuilder builder(out, maxDepth, maxMembers);
  try {
    json::sax_parse(text.begin(), text.end(), &builder);
  } catch (const JsonError&) {
    throw;
  } catch (const json::exception& e) {
    throw JsonError(plainMessage(e));
  }
  return out;
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
    // Cut on a UTF-8 character boundary: half a character makes dump() throw (found by fuzz_json).
    std::size_t cut = std::min(max, s.size());
    while (cut > 0 && cut < s.size() && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;
    text = json(s.substr(0, cut)).dump(-1, ' ', false, json::error_handler_t::replace);
  } else if (value.is_array() && value.size() > 8) {
    text = "[";  // built step by step: GCC 12 warns (-Wrestrict, falsely) on "literal" + string
    text += value.front().dump(-1, ' ', false, json::error_handler_t::replace);
    text += ", … ";
    text += std::to_string(value.size());
    text += " elements]";
  } else if (value.is_object() && value.size() > 8) {
    text = "{… ";
    text += std::to_string(value.size());
    text += " fields}";
  } else {
    text = value.dump(-1, ' ', false, json::error_handler_t::replace);
  }
  if (text.size() > max) {
    // Cut on a UTF-8 character boundary.
    std::size_t cut = max;
    while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
    text = text.substr(0, cut) + "…";
  }
  return text;
}

}  // namespace tensorscope::spec
