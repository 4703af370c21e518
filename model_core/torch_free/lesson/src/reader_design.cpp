// A lesson step's design: a full attention spec, or {"preset": NAME, "sizes": {...}} (a preset with
// a core then gets R = H·D unless "R" is given, and its core preset re-expanded at the new H, D);
// sizes bounded before anything expands a core, and the result validated.
#include "lesson_reader.h"
#include "spec/core_spec.h"
#include "spec/spec_json.h"
#include "spec/validation.h"

namespace tensorscope::spec::lesson_detail {

std::optional<AttentionSpec> LessonReader::design(const json& j, const std::string& prefix, LessonStep& step) {
  const std::string field = prefix + "design";
  if (!j.is_object()) {
    fail(field, "must be an attention spec object or {\"preset\": NAME}; got " + kindName(j));
    return std::nullopt;
  }
  if (designTooLarge(j, field)) return std::nullopt;
  const std::optional<AttentionSpec> s = j.contains("preset") ? presetDesign(j, field, step) : fullDesign(j, field);
  if (!s) return std::nullopt;
  const auto issues = validate(*s);
  for (const auto& i : issues) fail(field + "." + i.field, i.message);
  if (!issues.empty()) return std::nullopt;
  return s;
}

/// Bounds the sizes before anything expands a core (a preset at R = 4096 is 128 MiB of doubles).
bool LessonReader::designTooLarge(const json& j, const std::string& field) {
  bool tooLarge = false;
  if (!j.contains("sizes") || !j["sizes"].is_object()) return tooLarge;
  const json& z = j["sizes"];
  const auto get = [&](const char* k, std::int64_t fallback) {
    return z.contains(k) && z[k].is_number_integer() ? z[k].get<std::int64_t>() : fallback;
  };
  const std::int64_t F = get("F", 1), H = get("H", 1), D = get("D", 1), R = get("R", 1), N = get("seq_len", 1);
  const std::int64_t W = kMaxLessonDesignWidth;
  const auto big = [&](const std::string& k, const std::string& what) {
    fail(field + ".sizes" + (k.empty() ? "" : "." + k), what);
    tooLarge = true;
  };
  if (F > W) big("F", "is " + std::to_string(F) + "; a lesson's design has F ≤ " + std::to_string(W));
  if (R > W) big("R", "is " + std::to_string(R) + "; a lesson's design has R ≤ " + std::to_string(W));
  if (H > W) big("H", "is " + std::to_string(H) + "; a lesson's design has H·D ≤ " + std::to_string(W));
  else if (D > W) big("D", "is " + std::to_string(D) + "; a lesson's design has H·D ≤ " + std::to_string(W));
  else if (H > 0 && D > 0 && H * D > W)
    big("", "H·D = " + std::to_string(H * D) + "; a lesson's design has H·D ≤ " + std::to_string(W));
  if (N > kMaxLessonSeq) big("seq_len", "is " + std::to_string(N) + "; a lesson's design has seq_len ≤ " + std::to_string(kMaxLessonSeq));
  return tooLarge;
}

std::optional<AttentionSpec> LessonReader::presetDesign(const json& j, const std::string& field, LessonStep& step) {
  AttentionSpec s;
  r_.rejectUnknown(j, field + ".", {"preset", "sizes"});
  std::string name;
  if (!r_.read(j, "preset", field + ".", name)) return std::nullopt;
  try {
    s = makeSpecPreset(name);
  } catch (const std::invalid_argument& e) {
    fail(field + ".preset", e.what());
    return std::nullopt;
  }
  step.design_preset = name;
  bool givenR = false, givenD = false;
  if (j.contains("sizes")) {
    const json& z = j["sizes"];
    if (!z.is_object()) {
      fail(field + ".sizes", "must be an object like {\"F\": 32, \"H\": 4}; got " + kindName(z));
      return std::nullopt;
    }
    r_.rejectUnknown(z, field + ".sizes.", {"F", "H", "D", "R", "P", "c", "seq_len"});
    for (auto it = z.begin(); it != z.end(); ++it) {
      int* target = nullptr;
      const std::string& k = it.key();
      if (k == "F") target = &s.sizes.F;
      else if (k == "H") target = &s.sizes.H;
      else if (k == "D") target = &s.sizes.D;
      else if (k == "R") target = &s.sizes.R;
      else if (k == "P") target = &s.sizes.P;
      else if (k == "c") target = &s.sizes.c;
      else if (k == "seq_len") target = &s.sizes.seq_len;
      if (!target) continue;
      if (r_.read(z, k.c_str(), field + ".sizes.", *target)) {
        step.design_sizes.emplace_back(k, *target);
        givenR = givenR || k == "R";
        givenD = givenD || k == "D";
      }
    }
  }
  if (s.core) {
    const std::string core = s.core->preset;
    if (!givenD && (core == "heads_only" || core == "trainable_heads_only")) s.sizes.D = 1;
    if (!givenR) s.sizes.R = s.sizes.H * s.sizes.D;
    const auto issues = corePresetIssues(core, s.sizes);
    for (const auto& i : issues) fail(field + "." + i.field, i.message);
    if (!issues.empty()) return std::nullopt;
    s.core = makeCorePreset(core, s.sizes.H, s.sizes.D);
  }
  return s;
}

std::optional<AttentionSpec> LessonReader::fullDesign(const json& j, const std::string& field) {
  if (!j.contains("format")) {
    fail(field, "must be an attention spec (\"format\": \"" + std::string(kSpecFormat) +
                    "\", \"version\": 1, …) or {\"preset\": NAME, \"sizes\": {…}}");
    return std::nullopt;
  }
  try {
    return fromJson(j.dump());
  } catch (const SpecError& e) {
    for (const auto& i : e.issues()) fail(field + "." + i.field, i.message);
    return std::nullopt;
  }
}

}  // namespace tensorscope::spec::lesson_detail
