// The lesson reader's typed fields: required strings, plain text, finite numbers, whole numbers in
// a range, lab names, element ids and plan steps of the step's network, and the need for a core C.
#include <cmath>

#include "lesson_reader.h"

namespace tensorscope::spec::lesson_detail {

bool LessonReader::requireString(const json& obj, const char* key, const std::string& prefix, std::string& out,
                                 const std::string& what) {
  if (!obj.contains(key)) {
    fail(prefix + key, "missing; " + what);
    return false;
  }
  return r_.read(obj, key, prefix, out);
}

void LessonReader::plainText(const std::string& field, const std::string& s, size_t maxChars, bool required) {
  if (required && s.find_first_not_of(' ') == std::string::npos) fail(field, "is empty");
  const size_t n = codePoints(s);
  if (n > maxChars) fail(field, "is " + std::to_string(n) + " characters; at most " + std::to_string(maxChars));
  for (unsigned char c : s)
    if (c < 0x20 || c == 0x7F) {
      fail(field, "holds a control character or line break; plain text on one line");
      break;
    }
}

bool LessonReader::finiteNumber(const json& obj, const char* key, const std::string& prefix, double& out,
                                bool required) {
  if (!obj.contains(key)) {
    if (required) fail(prefix + key, "missing; a number");
    return false;
  }
  if (!r_.read(obj, key, prefix, out)) return false;
  if (!std::isfinite(out)) {
    fail(prefix + key, "must be finite");
    return false;
  }
  return true;
}

bool LessonReader::wholeIn(const json& obj, const char* key, const std::string& prefix, std::int64_t lo,
                           std::int64_t hi, std::int64_t& out, bool required) {
  if (!obj.contains(key)) {
    if (required) fail(prefix + key, "missing; a whole number in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
    return false;
  }
  std::int64_t v = 0;
  if (!r_.read(obj, key, prefix, v)) return false;
  if (v < lo || v > hi) {
    fail(prefix + key, "must be in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]; got " + std::to_string(v));
    return false;
  }
  out = v;
  return true;
}

std::optional<LessonLab> LessonReader::lab(const json& obj, const std::string& prefix) {
  std::string name;
  if (!requireString(obj, "lab", prefix, name, "one of " + joined(kLabNames))) return std::nullopt;
  int k = 0;
  if (!parseName(kLabNames, name, k)) {
    fail(prefix + "lab", "unknown lab " + preview(name) + "; one of " + joined(kLabNames));
    return std::nullopt;
  }
  return static_cast<LessonLab>(k);
}

void LessonReader::element(const std::string& field, const std::string& id, const Elements& e, bool hasDesign) {
  if (!hasDesign) return fail(field, "names a diagram element, but no design is set in this or an earlier step");
  if (!e.usable) return;  // the design's own problems are reported
  if (const auto p = elementProblem(id, e); !p.empty()) fail(field, p);
}

std::optional<int> LessonReader::planStep(const json& obj, const char* key, const std::string& prefix,
                                          const Elements& e, bool hasDesign) {
  const json& v = obj[key];
  const std::string field = prefix + key;
  if (!hasDesign) {
    fail(field, "names a plan step, but no design is set in this or an earlier step");
    return std::nullopt;
  }
  if (v.is_string() && v.get<std::string>() == "end") return kPlanEnd;
  if (!v.is_number_integer()) {
    fail(field, "must be a plan step index or \"end\"; got " + kindName(v));
    return std::nullopt;
  }
  const std::int64_t k = clampedWhole(v);
  if (k < 0 || (e.usable && k >= e.plan_length) || k >= (1 << 30)) {
    fail(field, "must be in [0, " + (e.usable ? std::to_string(e.plan_length - 1) : std::string("plan length - 1")) +
                    "] or \"end\"; got " + jsonPreview(v));
    return std::nullopt;
  }
  return static_cast<int>(k);
}

void LessonReader::needsCore(const std::string& field, const std::string& what, const Elements& e, bool hasDesign) {
  if (!hasDesign) return fail(field, what + " needs a design with a core C (thsa, thsa_linear); no design is set yet");
  if (e.usable && !e.has_core)
    fail(field, what + " needs a design with a core C (thsa, thsa_linear); this step's design has none");
}

}  // namespace tensorscope::spec::lesson_detail
