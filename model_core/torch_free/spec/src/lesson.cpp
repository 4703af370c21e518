// Lessons: "tensorscope.lesson" version 1 (docs/lessons.md), read with the bounded JSON parser and
// the shared FieldReader, every problem at once with its JSON path.
#include "spec/lesson.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>

#include "files/read_file.h"
#include "spec/core_spec.h"
#include "spec/cost_model.h"
#include "spec/json_reader.h"
#include "json_pretty.h"
#include "spec/spec_json.h"
#include "spec/tensor_network.h"
#include "spec/validation.h"

namespace tensorscope::spec {
namespace {

using nlohmann::json;
using ojson = nlohmann::ordered_json;

constexpr std::array<std::string_view, 9> kActionNames = {
    "read", "edit_core", "choose_variant", "choose_core_preset", "train", "inspect", "step_plan", "open_lab", "run_lab"};
constexpr std::array<std::string_view, 11> kCheckNames = {
    "variant_is", "core_preset_is", "stable_rank_in", "heads_in", "trained_steps_at_least", "inspected",
    "plan_step_reached", "parameters_match", "lab_done", "loss_below", "all"};
constexpr std::array<std::string_view, 2> kLabNames = {"bottleneck", "stable_rank"};

template <size_t N>
bool parseName(const std::array<std::string_view, N>& names, std::string_view text, int& out) {
  for (size_t i = 0; i < N; ++i)
    if (names[i] == text) {
      out = static_cast<int>(i);
      return true;
    }
  return false;
}

template <typename Names>
std::string joined(const Names& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + std::string(n);
  return out;
}

/// Code points of valid UTF-8 (the JSON parser has checked the encoding).
std::size_t codePoints(std::string_view s) {
  std::size_t n = 0;
  for (unsigned char c : s)
    if ((c & 0xC0) != 0x80) ++n;
  return n;
}

bool isSnakeCase(std::string_view s) {
  if (s.empty() || s.front() < 'a' || s.front() > 'z' || s.back() == '_') return false;
  char prev = 0;
  for (char c : s) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
    if (!ok || (c == '_' && prev == '_')) return false;
    prev = c;
  }
  return true;
}

std::string preview(std::string_view s) { return jsonPreview(json(std::string(s))); }

/// A JSON whole number as int64, clamped to [-1, 2^30] (range checks follow; no overflow).
std::int64_t clampedWhole(const json& x) {
  if (x.is_number_unsigned()) return static_cast<std::int64_t>(std::min<std::uint64_t>(x.get<std::uint64_t>(), 1u << 30));
  return std::clamp<std::int64_t>(x.get<std::int64_t>(), -1, 1 << 30);
}

// ---- rich text ------------------------------------------------------------------------------------

bool isInlineTag(std::string_view t) {
  return t == "b" || t == "i" || t == "em" || t == "strong" || t == "sub" || t == "sup" || t == "code";
}
bool isKnownTag(std::string_view t) {
  return isInlineTag(t) || t == "p" || t == "br" || t == "ul" || t == "ol" || t == "li";
}
constexpr const char* kTagList = "p, b, i, em, strong, sub, sup, code, br, ul, ol, li";

/// Why `tag` may not open inside `parent` ("" = top level), or "" when it may.
std::string nestingProblem(std::string_view tag, std::string_view parent) {
  const auto where = parent.empty() ? std::string("at the top level") : "inside <" + std::string(parent) + ">";
  if (tag == "li") return parent == "ul" || parent == "ol" ? "" : "<li> " + where + "; a list item belongs in <ul> or <ol>";
  if (parent == "ul" || parent == "ol")
    return "<" + std::string(tag) + "> directly inside <" + std::string(parent) + ">; a list holds only <li> items";
  if (tag == "p" || tag == "ul" || tag == "ol") {
    if (parent.empty() || parent == "li") return "";
    return "<" + std::string(tag) + "> " + where + "; paragraphs and lists go at the top level or in <li>";
  }
  return "";  // inline tags and br: anywhere but directly in a list
}

void richText(std::string_view t, std::vector<std::string>& out) {
  constexpr size_t kMaxProblems = 16;
  const auto add = [&](std::string m) {
    if (out.size() < kMaxProblems) out.push_back(std::move(m));
  };
  if (t.size() > kMaxLessonTextBytes) {
    add("is " + std::to_string(t.size()) + " bytes; at most " + std::to_string(kMaxLessonTextBytes));
    return;
  }
  if (t.find_first_not_of(" \t\n") == std::string_view::npos) {
    add("is empty; write what the learner should read");
    return;
  }
  std::vector<std::string> open;
  bool reportedListText = false;
  size_t i = 0;
  while (i < t.size()) {
    const unsigned char c = static_cast<unsigned char>(t[i]);
    const std::string at = " at byte " + std::to_string(i);
    if (c == '<') {
      // Tags are short: look for the '>' within kMaxTagBytes (keeps a text of many '<' linear).
      constexpr size_t kMaxTagBytes = 64;
      const std::string_view window = t.substr(i, kMaxTagBytes);
      const size_t closeAt = window.find('>');
      const size_t nextAt = window.find('<', 1);
      const size_t close = closeAt == std::string_view::npos ? std::string_view::npos : i + closeAt;
      if (close == std::string_view::npos || (nextAt != std::string_view::npos && nextAt < closeAt)) {
        add("'<'" + at + " starts no tag; write &lt; for a less-than sign");
        ++i;
        continue;
      }
      std::string_view body = t.substr(i + 1, close - i - 1);
      const std::string shown = preview(t.substr(i, std::min<size_t>(close - i + 1, 40)));
      const bool closing = !body.empty() && body.front() == '/';
      if (closing) body.remove_prefix(1);
      bool selfClosing = false;
      if (!body.empty() && body.back() == '/') {
        selfClosing = true;
        body.remove_suffix(1);
      }
      while (!body.empty() && body.back() == ' ') body.remove_suffix(1);
      const size_t nameEnd = body.find_first_of(" \t\n");
      const std::string name(body.substr(0, nameEnd));
      i = close + 1;
      if (!isKnownTag(name)) {
        add("unknown tag " + shown + at + " (allowed: " + kTagList + ", lower case, no attributes)");
        continue;
      }
      if (nameEnd != std::string_view::npos) {
        add("tag " + shown + at + " has attributes; tags take none");
        continue;
      }
      const std::string parent = open.empty() ? "" : open.back();
      if (name == "br") {
        if (closing) add("</br>" + at + " is not a tag; write <br>");
        else if (const auto p = nestingProblem(name, parent); !p.empty()) add(p + at);
        continue;
      }
      if (selfClosing) {
        add(shown + at + ": only <br/> closes itself; write <" + name + ">…</" + name + ">");
        continue;
      }
      if (closing) {
        const auto it = std::find(open.rbegin(), open.rend(), name);
        if (it == open.rend()) {
          add("</" + name + ">" + at + " closes nothing open");
        } else {
          if (it != open.rbegin())
            add("</" + name + ">" + at + " while <" + open.back() + "> is still open; close tags in reverse order");
          open.erase(std::prev(it.base()), open.end());
        }
        continue;
      }
      if (const auto p = nestingProblem(name, parent); !p.empty()) add(p + at);
      if (isInlineTag(parent) && !isInlineTag(name))
        add("<" + name + ">" + at + " inside <" + parent + ">; inline tags hold only text and inline tags");
      open.push_back(name);
      if (static_cast<int>(open.size()) > kMaxLessonTextNesting) {
        add("tags nest deeper than " + std::to_string(kMaxLessonTextNesting) + at);
        open.pop_back();
      }
      continue;
    }
    if (c == '&') {
      const size_t semiAt = t.substr(i, 12).find(';');
      const size_t semi = semiAt == std::string_view::npos ? std::string_view::npos : i + semiAt;
      const std::string_view ent = semi == std::string_view::npos ? std::string_view{} : t.substr(i + 1, semi - i - 1);
      bool ok = ent == "amp" || ent == "lt" || ent == "gt" || ent == "quot" || ent == "apos" || ent == "nbsp";
      if (!ok && ent.size() >= 2 && ent.front() == '#') {
        const bool hex = ent[1] == 'x' || ent[1] == 'X';
        const std::string_view digits = ent.substr(hex ? 2 : 1);
        long cp = 0;
        ok = !digits.empty() && digits.size() <= 6;
        for (char d : digits) {
          int v = -1;
          if (d >= '0' && d <= '9') v = d - '0';
          else if (hex && d >= 'a' && d <= 'f') v = d - 'a' + 10;
          else if (hex && d >= 'A' && d <= 'F') v = d - 'A' + 10;
          if (v < 0) ok = false;
          else cp = cp * (hex ? 16 : 10) + v;
        }
        ok = ok && cp >= 0x20 && cp != 0x7F && cp <= 0x10FFFF && !(cp >= 0xD800 && cp <= 0xDFFF);
      }
      if (!ok) {
        add("'&'" + at + " starts no entity (&amp; &lt; &gt; &quot; &apos; &nbsp; &#N; &#xH;); write &amp; for an ampersand");
        ++i;
      } else {
        i = semi + 1;
      }
      if (!open.empty() && (open.back() == "ul" || open.back() == "ol") && !reportedListText) {
        add("text" + at + " directly inside <" + open.back() + ">; put it in an <li>");
        reportedListText = true;
      }
      continue;
    }
    if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7F) {
      add("control character " + std::to_string(c) + at + "; only line breaks and tabs");
      ++i;
      continue;
    }
    if (c != ' ' && c != '\n' && c != '\t' && !open.empty() && (open.back() == "ul" || open.back() == "ol") &&
        !reportedListText) {
      add("text" + at + " directly inside <" + open.back() + ">; put it in an <li>");
      reportedListText = true;
    }
    ++i;
  }
  for (const auto& o : open) add("<" + o + "> is never closed");
}

// ---- the element ids of a design's network ---------------------------------------------------------

struct Elements {
  bool usable = false;  ///< a valid design whose network was built
  bool has_core = false;
  int R = 0;
  int plan_length = 0;
  std::vector<std::string> ids;  ///< node ids then box ids
  std::map<std::string, int> legs;  ///< node id -> leg count
};

Elements elementsOf(const TensorNetwork& net, const AttentionSpec& design) {
  Elements e;
  e.usable = true;
  e.has_core = hasCore(design.variant) && design.core.has_value();
  e.R = design.sizes.R;
  e.plan_length = static_cast<int>(net.plan.size());
  for (const auto& n : net.nodes) {
    e.ids.push_back(n.id);
    e.legs[n.id] = static_cast<int>(n.legs.size());
  }
  for (const auto& b : net.boxes)
    if (std::find(e.ids.begin(), e.ids.end(), b.id) == e.ids.end()) e.ids.push_back(b.id);
  return e;
}

/// Why `id` names no element of `e` ("" when it does).
std::string elementProblem(const std::string& id, const Elements& e) {
  if (std::find(e.ids.begin(), e.ids.end(), id) != e.ids.end()) return "";
  if (id.rfind("leg:", 0) == 0) {
    const auto colon = id.rfind(':');
    const std::string node = colon > 3 ? id.substr(4, colon - 4) : "";
    const std::string pos = id.substr(colon + 1);
    const auto it = e.legs.find(node);
    if (colon <= 3 || it == e.legs.end())
      return "leg " + preview(id) + " names no node (write leg:<node>:<position>; nodes here: " +
             joined(std::vector<std::string>(e.ids.begin(), e.ids.begin() + static_cast<std::ptrdiff_t>(e.legs.size()))) +
             ")";
    const bool digits = !pos.empty() && pos.size() <= 3 && pos.find_first_not_of("0123456789") == std::string::npos;
    if (!digits || std::stoi(pos) >= it->second)
      return "leg " + preview(id) + ": node " + node + " has legs 0.." + std::to_string(it->second - 1);
    return "";
  }
  return "unknown element " + preview(id) + " (known here: " + joined(e.ids) + "; a leg: leg:<node>:<position>)";
}

// ---- the reader -----------------------------------------------------------------------------------

class LessonReader {
 public:
  void fail(const std::string& field, const std::string& message) { r_.fail(field, message); }
  FieldReader& fields() { return r_; }

  bool requireString(const json& obj, const char* key, const std::string& prefix, std::string& out,
                     const std::string& what) {
    if (!obj.contains(key)) {
      fail(prefix + key, "missing; " + what);
      return false;
    }
    return r_.read(obj, key, prefix, out);
  }

  /// A plain-text field: no control characters (no line breaks), 1..maxChars code points.
  void plainText(const std::string& field, const std::string& s, size_t maxChars, bool required = true) {
    if (required && s.find_first_not_of(' ') == std::string::npos) fail(field, "is empty");
    const size_t n = codePoints(s);
    if (n > maxChars) fail(field, "is " + std::to_string(n) + " characters; at most " + std::to_string(maxChars));
    for (unsigned char c : s)
      if (c < 0x20 || c == 0x7F) {
        fail(field, "holds a control character or line break; plain text on one line");
        break;
      }
  }

  bool finiteNumber(const json& obj, const char* key, const std::string& prefix, double& out, bool required) {
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

  bool wholeIn(const json& obj, const char* key, const std::string& prefix, std::int64_t lo, std::int64_t hi,
               std::int64_t& out, bool required) {
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

  std::optional<LessonLab> lab(const json& obj, const std::string& prefix) {
    std::string name;
    if (!requireString(obj, "lab", prefix, name, "one of " + joined(kLabNames))) return std::nullopt;
    int k = 0;
    if (!parseName(kLabNames, name, k)) {
      fail(prefix + "lab", "unknown lab " + preview(name) + "; one of " + joined(kLabNames));
      return std::nullopt;
    }
    return static_cast<LessonLab>(k);
  }

  /// An element id of the step's network (highlight, inspect, inspected).
  void element(const std::string& field, const std::string& id, const Elements& e, bool hasDesign) {
    if (!hasDesign) return fail(field, "names a diagram element, but no design is set in this or an earlier step");
    if (!e.usable) return;  // the design's own problems are reported
    if (const auto p = elementProblem(id, e); !p.empty()) fail(field, p);
  }

  /// A plan step: a whole number < the plan's length or "end".
  std::optional<int> planStep(const json& obj, const char* key, const std::string& prefix, const Elements& e,
                              bool hasDesign) {
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

  void needsCore(const std::string& field, const std::string& what, const Elements& e, bool hasDesign) {
    if (!hasDesign) return fail(field, what + " needs a design with a core C (thsa, thsa_linear); no design is set yet");
    if (e.usable && !e.has_core)
      fail(field, what + " needs a design with a core C (thsa, thsa_linear); this step's design has none");
  }

  std::optional<AttentionSpec> design(const json& j, const std::string& prefix, LessonStep& step) {
    const std::string field = prefix + "design";
    if (!j.is_object()) {
      fail(field, "must be an attention spec object or {\"preset\": NAME}; got " + kindName(j));
      return std::nullopt;
    }
    // Bound the sizes before anything expands a core (a preset at R = 4096 is 128 MiB of doubles).
    bool tooLarge = false;
    if (j.contains("sizes") && j["sizes"].is_object()) {
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
    }
    if (tooLarge) return std::nullopt;
    AttentionSpec s;
    if (j.contains("preset")) {
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
    } else {
      if (!j.contains("format")) {
        fail(field, "must be an attention spec (\"format\": \"" + std::string(kSpecFormat) +
                        "\", \"version\": 1, …) or {\"preset\": NAME, \"sizes\": {…}}");
        return std::nullopt;
      }
      try {
        s = fromJson(j.dump());
      } catch (const SpecError& e) {
        for (const auto& i : e.issues()) fail(field + "." + i.field, i.message);
        return std::nullopt;
      }
    }
    const auto issues = validate(s);
    for (const auto& i : issues) fail(field + "." + i.field, i.message);
    if (!issues.empty()) return std::nullopt;
    return s;
  }

  std::optional<LessonCheck> check(const json& j, const std::string& field, int level, const Elements& e,
                                   bool hasDesign) {
    if (!j.is_object()) {
      fail(field, "must be an object like {\"kind\": \"variant_is\", \"variant\": \"thsa\"}; got " + kindName(j));
      return std::nullopt;
    }
    const std::string prefix = field + ".";
    std::string kindName_;
    if (!requireString(j, "kind", prefix, kindName_, "one of " + joined(kCheckNames))) return std::nullopt;
    int k = 0;
    if (!parseName(kCheckNames, kindName_, k)) {
      fail(prefix + "kind", "unknown check " + preview(kindName_) + "; one of " + joined(kCheckNames));
      return std::nullopt;
    }
    LessonCheck c;
    c.kind = static_cast<LessonCheckKind>(k);
    std::vector<std::string> known = {"kind", "hint"};
    bool ok = true;
    switch (c.kind) {
      case LessonCheckKind::VariantIs:
        known.push_back("variant");
        if (Variant v; requireString(j, "variant", prefix, c.variant, "one of " + joined(variantNames())) &&
                       !parseVariant(c.variant, v)) {
          fail(prefix + "variant", "unknown variant " + preview(c.variant) + "; one of " + joined(variantNames()));
          ok = false;
        }
        break;
      case LessonCheckKind::CorePresetIs:
        known.push_back("preset");
        if (requireString(j, "preset", prefix, c.preset, "one of " + joined(corePresetNames()) + ", custom") &&
            !isCorePreset(c.preset) && c.preset != "custom") {
          fail(prefix + "preset", "unknown core preset " + preview(c.preset) + "; one of " + joined(corePresetNames()) +
                                      ", custom");
          ok = false;
        }
        break;
      case LessonCheckKind::StableRankIn: {
        known.insert(known.end(), {"min", "max"});
        const bool a = finiteNumber(j, "min", prefix, c.min, true);
        const bool b = finiteNumber(j, "max", prefix, c.max, true);
        if (a && c.min < 1.0) fail(prefix + "min", "must be ≥ 1 (a stable rank is at least 1); got " + jsonPreview(j["min"]));
        if (a && b && c.max < c.min)
          fail(prefix + "max", "must be ≥ min (" + jsonPreview(j["min"]) + "); got " + jsonPreview(j["max"]));
        if (a && e.usable && e.has_core && c.min > e.R)
          fail(prefix + "min", "can never be met: the stable rank of an R×R core is at most R = " + std::to_string(e.R));
        needsCore(field, "stable_rank_in", e, hasDesign);
        break;
      }
      case LessonCheckKind::HeadsIn: {
        known.insert(known.end(), {"min", "max"});
        std::int64_t lo = 0, hi = 0;
        const bool a = wholeIn(j, "min", prefix, 1, kMaxHeads, lo, true);
        const bool b = wholeIn(j, "max", prefix, 1, kMaxHeads, hi, true);
        c.min_heads = static_cast<int>(lo);
        c.max_heads = static_cast<int>(hi);
        if (a && b && hi < lo) fail(prefix + "max", "must be ≥ min (" + std::to_string(lo) + "); got " + std::to_string(hi));
        break;
      }
      case LessonCheckKind::TrainedStepsAtLeast:
        known.push_back("steps");
        wholeIn(j, "steps", prefix, 1, kMaxLessonCheckSteps, c.steps, true);
        break;
      case LessonCheckKind::Inspected:
        known.push_back("node");
        if (requireString(j, "node", prefix, c.node, "a diagram element id")) element(prefix + "node", c.node, e, hasDesign);
        break;
      case LessonCheckKind::PlanStepReached:
        known.push_back("step");
        if (!j.contains("step")) fail(prefix + "step", "missing; a plan step index or \"end\"");
        else if (const auto s = planStep(j, "step", prefix, e, hasDesign)) c.plan_step = *s;
        break;
      case LessonCheckKind::ParametersMatch: {
        known.insert(known.end(), {"reference", "tolerance"});
        if (requireString(j, "reference", prefix, c.reference, "a preset name (" + joined(specPresetNames()) + ")")) {
          const auto names = specPresetNames();
          if (std::find(names.begin(), names.end(), c.reference) == names.end())
            fail(prefix + "reference", "unknown preset " + preview(c.reference) + "; one of " + joined(names));
        }
        if (finiteNumber(j, "tolerance", prefix, c.tolerance, true) &&
            (c.tolerance <= 0.0 || c.tolerance > kMaxParameterTolerance))
          fail(prefix + "tolerance", "must be in (0, 0.5]; got " + jsonPreview(j["tolerance"]));
        break;
      }
      case LessonCheckKind::LabDone:
        known.push_back("lab");
        if (const auto l = lab(j, prefix)) c.lab = *l;
        break;
      case LessonCheckKind::LossBelow:
        known.push_back("value");
        if (finiteNumber(j, "value", prefix, c.value, true) && c.value <= 0.0)
          fail(prefix + "value", "must be > 0; got " + jsonPreview(j["value"]));
        break;
      case LessonCheckKind::All: {
        known.push_back("checks");
        if (level > kMaxCheckDepth) {
          fail(prefix + "kind", "\"all\" nests deeper than " + std::to_string(kMaxCheckDepth) + " levels");
          ok = false;
          break;
        }
        if (!j.contains("checks")) {
          fail(prefix + "checks", "missing; a list of 1 to " + std::to_string(kMaxAllChecks) + " checks");
          break;
        }
        const json& list = j["checks"];
        if (!list.is_array() || list.empty() || list.size() > static_cast<size_t>(kMaxAllChecks)) {
          fail(prefix + "checks", "must be a list of 1 to " + std::to_string(kMaxAllChecks) + " checks; got " +
                                      (list.is_array() ? std::to_string(list.size()) + " checks" : kindName(list)));
          break;
        }
        for (size_t i = 0; i < list.size(); ++i)
          if (auto sub = check(list[i], prefix + "checks[" + std::to_string(i) + "]", level + 1, e, hasDesign))
            c.checks.push_back(std::move(*sub));
        break;
      }
    }
    r_.rejectUnknown(j, prefix, known);
    if (r_.read(j, "hint", prefix, c.hint)) plainText(prefix + "hint", c.hint, kMaxHintChars);
    if (!ok) return std::nullopt;
    return c;
  }

  void action(const json& j, const std::string& field, LessonAction& a, const Elements& e, bool hasDesign) {
    if (!j.is_object()) return fail(field, "must be an object like {\"kind\": \"read\", \"prompt\": \"…\"}; got " + kindName(j));
    const std::string prefix = field + ".";
    if (requireString(j, "prompt", prefix, a.prompt, "plain text saying what to do")) plainText(prefix + "prompt", a.prompt, kMaxPromptChars);
    std::string name;
    if (!requireString(j, "kind", prefix, name, "one of " + joined(kActionNames))) return;
    int k = 0;
    if (!parseName(kActionNames, name, k))
      return fail(prefix + "kind", "unknown action " + preview(name) + "; one of " + joined(kActionNames));
    a.kind = static_cast<LessonActionKind>(k);
    std::vector<std::string> known = {"kind", "prompt"};
    switch (a.kind) {
      case LessonActionKind::Read: break;
      case LessonActionKind::EditCore: {
        known.push_back("paint");
        needsCore(field, "edit_core", e, hasDesign);
        if (!j.contains("paint")) break;
        const json& list = j["paint"];
        if (!list.is_array() || list.size() > static_cast<size_t>(kMaxPaintRects)) {
          fail(prefix + "paint", "must be a list of at most " + std::to_string(kMaxPaintRects) +
                                     " rectangles {\"rows\": [first, last], \"cols\": [first, last], \"value\": v}");
          break;
        }
        for (size_t i = 0; i < list.size(); ++i) {
          const std::string pf = prefix + "paint[" + std::to_string(i) + "]";
          const json& p = list[i];
          if (!p.is_object()) {
            fail(pf, "must be an object {\"rows\": [first, last], \"cols\": [first, last], \"value\": v}; got " + kindName(p));
            continue;
          }
          fields().rejectUnknown(p, pf + ".", {"rows", "cols", "value"});
          CorePaint rect;
          bool good = finiteNumber(p, "value", pf + ".", rect.value, true);
          for (const char* key : {"rows", "cols"}) {
            const std::string kf = pf + "." + key;
            const bool rows = key[0] == 'r';
            if (!p.contains(key)) {
              fail(kf, "missing; [first, last] (0-based, inclusive)");
              good = false;
              continue;
            }
            const json& v = p[key];
            if (!v.is_array() || v.size() != 2 || !v[0].is_number_integer() || !v[1].is_number_integer()) {
              fail(kf, "must be [first, last], two whole numbers; got " + jsonPreview(v));
              good = false;
              continue;
            }
            const std::int64_t first = clampedWhole(v[0]), last = clampedWhole(v[1]);
            const std::int64_t limit = e.usable && e.has_core ? e.R : (1 << 30);
            if (first < 0 || last < first || last >= limit) {
              fail(kf, "must be 0 ≤ first ≤ last" + (e.usable && e.has_core ? " ≤ R-1 = " + std::to_string(e.R - 1) : std::string()) +
                           "; got " + jsonPreview(v));
              good = false;
              continue;
            }
            (rows ? rect.row_first : rect.col_first) = static_cast<int>(first);
            (rows ? rect.row_last : rect.col_last) = static_cast<int>(last);
          }
          if (good) a.paint.push_back(rect);
        }
        break;
      }
      case LessonActionKind::ChooseVariant:
        known.push_back("variant");
        if (requireString(j, "variant", prefix, a.variant, "one of " + joined(variantNames()))) {
          Variant v;
          if (!parseVariant(a.variant, v))
            fail(prefix + "variant", "unknown variant " + preview(a.variant) + "; one of " + joined(variantNames()));
        }
        break;
      case LessonActionKind::ChooseCorePreset:
        known.push_back("preset");
        if (requireString(j, "preset", prefix, a.preset, "one of " + joined(corePresetNames())) && !isCorePreset(a.preset))
          fail(prefix + "preset", "unknown core preset " + preview(a.preset) + "; one of " + joined(corePresetNames()));
        needsCore(field, "choose_core_preset", e, hasDesign);
        break;
      case LessonActionKind::Train:
        known.push_back("steps");
        wholeIn(j, "steps", prefix, 1, kMaxLessonTrainSteps, a.steps, true);
        break;
      case LessonActionKind::Inspect:
        known.push_back("node");
        if (requireString(j, "node", prefix, a.node, "a diagram element id")) element(prefix + "node", a.node, e, hasDesign);
        break;
      case LessonActionKind::StepPlan:
        known.push_back("to");
        if (j.contains("to")) a.to = planStep(j, "to", prefix, e, hasDesign);
        else if (!hasDesign) fail(field, "step_plan needs a design in this or an earlier step");
        break;
      case LessonActionKind::OpenLab:
      case LessonActionKind::RunLab:
        known.push_back("lab");
        if (const auto l = lab(j, prefix)) a.lab = *l;
        break;
    }
    r_.rejectUnknown(j, prefix, known);
  }

  void step(const json& j, const std::string& field, LessonStep& s, const LessonStep* previous,
            bool& previousUsable, Elements& elements) {
    const std::string prefix = field + ".";
    if (previous) {
      s.effective_design = previous->effective_design;
      s.has_design = previous->has_design;
      s.effective_seq = previous->effective_seq;
    }
    if (!j.is_object()) {
      fail(field, "must be an object with title, text and action; got " + kindName(j));
      return;
    }
    r_.rejectUnknown(j, prefix, {"title", "text", "design", "seq", "highlight", "action", "check"});
    if (requireString(j, "title", prefix, s.title, "plain text")) plainText(prefix + "title", s.title, kMaxLessonTitleChars);
    if (requireString(j, "text", prefix, s.text, "rich text (" + std::string(kTagList) + ")"))
      for (const auto& p : richTextProblems(s.text)) fail(prefix + "text", p);

    bool usable = previousUsable;
    bool changed = false;
    if (j.contains("design")) {
      s.design = design(j["design"], prefix, s);
      s.has_design = true;
      usable = s.design.has_value();
      if (usable) s.effective_design = *s.design;
      changed = true;
    }
    std::int64_t seq = 0;
    if (wholeIn(j, "seq", prefix, 1, kMaxLessonSeq, seq, false)) {
      s.seq = static_cast<int>(seq);
      s.effective_seq = s.seq.value();
      changed = true;
    }
    if (changed || !previous) {
      elements = Elements{};
      if (s.has_design && usable) {
        try {
          elements = elementsOf(buildTensorNetwork(s.effective_design, s.effective_seq), s.effective_design);
        } catch (const std::exception& e) {
          fail(prefix + "design", std::string("cannot build its tensor network: ") + e.what());
        }
      }
    }
    previousUsable = usable;

    if (j.contains("highlight")) {
      const json& h = j["highlight"];
      if (!h.is_array() || h.size() > static_cast<size_t>(kMaxHighlights)) {
        fail(prefix + "highlight", "must be a list of at most " + std::to_string(kMaxHighlights) + " element ids; got " +
                                       (h.is_array() ? std::to_string(h.size()) + " ids" : kindName(h)));
      } else if (!h.empty() && !s.has_design) {
        fail(prefix + "highlight", "a step before any design cannot highlight; set \"design\" here or in an earlier step");
      } else {
        for (size_t i = 0; i < h.size(); ++i) {
          const std::string hf = prefix + "highlight[" + std::to_string(i) + "]";
          if (!h[i].is_string()) {
            fail(hf, "must be an element id (a string); got " + kindName(h[i]));
            continue;
          }
          const std::string id = h[i].get<std::string>();
          if (std::find(s.highlight.begin(), s.highlight.end(), id) != s.highlight.end()) {
            fail(hf, preview(id) + " is listed twice");
            continue;
          }
          element(hf, id, elements, s.has_design);
          s.highlight.push_back(id);
        }
      }
    }
    if (!j.contains("action")) fail(prefix + "action", "missing; {\"kind\": \"read\", \"prompt\": \"…\"} at least");
    else action(j["action"], prefix + "action", s.action, elements, s.has_design);
    if (j.contains("check")) s.check = check(j["check"], prefix + "check", 1, elements, s.has_design);
  }

  Lesson lesson(std::string_view text, const std::string& source, const std::string* stem) {
    Lesson l;
    l.source = source;
    json j;
    try {
      j = parseUntrustedJson(text);
    } catch (const JsonError& e) {
      throw LessonError({{source, "(document)", std::string("malformed JSON: ") + e.what()}});
    }
    if (!j.is_object()) throw LessonError({{source, "(document)", "a lesson must be a JSON object; got " + kindName(j)}});
    std::string format;
    if (!j.contains("format")) fail("format", std::string("missing; expected \"") + kLessonFormat + "\"");
    else if (r_.read(j, "format", "", format) && format != kLessonFormat)
      fail("format", "is " + preview(format) + "; expected \"" + kLessonFormat + "\"");
    int version = -1;
    if (!j.contains("version")) fail("version", "missing; this Tensorscope reads version " + std::to_string(kLessonVersion));
    else if (r_.read(j, "version", "", version) && version != kLessonVersion)
      fail("version", "unsupported version " + std::to_string(version) + "; this Tensorscope reads version " +
                          std::to_string(kLessonVersion));
    if (!r_.empty()) raise(source);

    r_.rejectUnknown(j, "", {"format", "version", "id", "title", "summary", "order", "steps"});
    if (requireString(j, "id", "", l.id, "snake_case, the file name without .json")) {
      if (!isSnakeCase(l.id) || l.id.size() > kMaxLessonIdChars)
        fail("id", "must be snake_case ([a-z][a-z0-9_]*, no double or trailing '_'), at most " +
                       std::to_string(kMaxLessonIdChars) + " characters; got " + preview(l.id));
      else if (stem && *stem != l.id)
        fail("id", "is " + preview(l.id) + " but the file is named " + preview(*stem + ".json") +
                       "; a lesson's id is its file name without .json");
    }
    if (requireString(j, "title", "", l.title, "plain text")) plainText("title", l.title, kMaxLessonTitleChars);
    if (requireString(j, "summary", "", l.summary, "one sentence")) {
      plainText("summary", l.summary, kMaxLessonSummaryChars);
      const char last = l.summary.empty() ? 0 : l.summary.back();
      if (last != '.' && last != '?' && last != '!') fail("summary", "must be one sentence ending with '.', '?' or '!'");
    }
    std::int64_t order = 0;
    if (wholeIn(j, "order", "", 0, kMaxLessonOrder, order, true)) l.order = static_cast<int>(order);
    if (!j.contains("steps")) {
      fail("steps", "missing; a list of 1 to " + std::to_string(kMaxLessonSteps) + " steps");
    } else if (const json& steps = j["steps"];
               !steps.is_array() || steps.empty() || steps.size() > static_cast<size_t>(kMaxLessonSteps)) {
      fail("steps", "must be a list of 1 to " + std::to_string(kMaxLessonSteps) + " steps; got " +
                        (steps.is_array() ? std::to_string(steps.size()) + " steps" : kindName(steps)));
    } else {
      bool usable = true;
      Elements elements;
      l.steps.resize(steps.size());
      for (size_t i = 0; i < steps.size(); ++i)
        step(steps[i], "steps[" + std::to_string(i) + "]", l.steps[i], i ? &l.steps[i - 1] : nullptr, usable, elements);
    }
    if (!r_.empty()) raise(source);
    return l;
  }

  [[noreturn]] void raise(const std::string& source) const {
    std::vector<LessonProblem> problems;
    for (const auto& p : r_.problems()) problems.push_back({source, p.field, p.message});
    throw LessonError(std::move(problems));
  }

 private:
  FieldReader r_;
};

std::string errorText(const std::vector<LessonProblem>& problems) {
  std::string m = "invalid lesson:";
  for (const auto& p : problems) m += "\n  " + p.source + ": " + p.field + ": " + p.message;
  return m;
}

// ---- the writer -----------------------------------------------------------------------------------

ojson checkToJson(const LessonCheck& c) {
  ojson j;
  j["kind"] = std::string(toString(c.kind));
  switch (c.kind) {
    case LessonCheckKind::VariantIs: j["variant"] = c.variant; break;
    case LessonCheckKind::CorePresetIs: j["preset"] = c.preset; break;
    case LessonCheckKind::StableRankIn: j["min"] = c.min; j["max"] = c.max; break;
    case LessonCheckKind::HeadsIn: j["min"] = c.min_heads; j["max"] = c.max_heads; break;
    case LessonCheckKind::TrainedStepsAtLeast: j["steps"] = c.steps; break;
    case LessonCheckKind::Inspected: j["node"] = c.node; break;
    case LessonCheckKind::PlanStepReached:
      if (c.plan_step == kPlanEnd) j["step"] = "end";
      else j["step"] = c.plan_step;
      break;
    case LessonCheckKind::ParametersMatch: j["reference"] = c.reference; j["tolerance"] = c.tolerance; break;
    case LessonCheckKind::LabDone: j["lab"] = std::string(toString(c.lab)); break;
    case LessonCheckKind::LossBelow: j["value"] = c.value; break;
    case LessonCheckKind::All: {
      ojson list = ojson::array();
      for (const auto& sub : c.checks) list.push_back(checkToJson(sub));
      j["checks"] = std::move(list);
      break;
    }
  }
  if (!c.hint.empty()) j["hint"] = c.hint;
  return j;
}

ojson actionToJson(const LessonAction& a) {
  ojson j;
  j["kind"] = std::string(toString(a.kind));
  j["prompt"] = a.prompt;
  switch (a.kind) {
    case LessonActionKind::Read: break;
    case LessonActionKind::EditCore:
      if (!a.paint.empty()) {
        ojson list = ojson::array();
        for (const auto& p : a.paint)
          list.push_back(ojson{{"rows", {p.row_first, p.row_last}}, {"cols", {p.col_first, p.col_last}}, {"value", p.value}});
        j["paint"] = std::move(list);
      }
      break;
    case LessonActionKind::ChooseVariant: j["variant"] = a.variant; break;
    case LessonActionKind::ChooseCorePreset: j["preset"] = a.preset; break;
    case LessonActionKind::Train: j["steps"] = a.steps; break;
    case LessonActionKind::Inspect: j["node"] = a.node; break;
    case LessonActionKind::StepPlan:
      if (a.to) {
        if (*a.to == kPlanEnd) j["to"] = "end";
        else j["to"] = *a.to;
      }
      break;
    case LessonActionKind::OpenLab:
    case LessonActionKind::RunLab: j["lab"] = std::string(toString(a.lab)); break;
  }
  return j;
}

bool labIn(LessonLab lab, const std::vector<LessonLab>& labs) {
  return std::find(labs.begin(), labs.end(), lab) != labs.end();
}

std::string number(double x) {
  std::ostringstream o;
  o << x;
  return o.str();
}

/// The first unmet leaf of `c` and the nearest hint on its path (the leaf's own first).
bool firstUnmet(const LessonCheck& c, const LessonState& s, const std::string& inherited, std::string& out) {
  if (checkMet(c, s)) return false;
  const std::string hint = c.hint.empty() ? inherited : c.hint;
  if (c.kind == LessonCheckKind::All) {
    for (const auto& sub : c.checks)
      if (firstUnmet(sub, s, hint, out)) {
        return true;
      }
    out = hint.empty() ? describeCheck(c) : hint;
    return true;
  }
  out = c.hint.empty() ? (inherited.empty() ? describeCheck(c) : inherited) : c.hint;
  return true;
}

}  // namespace

LessonError::LessonError(std::vector<LessonProblem> problems)
    : std::invalid_argument(errorText(problems)), problems_(std::move(problems)) {}

std::string_view toString(LessonActionKind k) { return kActionNames[static_cast<size_t>(k)]; }
std::string_view toString(LessonCheckKind k) { return kCheckNames[static_cast<size_t>(k)]; }
std::string_view toString(LessonLab lab) { return kLabNames[static_cast<size_t>(lab)]; }

bool parseLessonActionKind(std::string_view text, LessonActionKind& out) {
  int k = 0;
  if (!parseName(kActionNames, text, k)) return false;
  out = static_cast<LessonActionKind>(k);
  return true;
}
bool parseLessonCheckKind(std::string_view text, LessonCheckKind& out) {
  int k = 0;
  if (!parseName(kCheckNames, text, k)) return false;
  out = static_cast<LessonCheckKind>(k);
  return true;
}
bool parseLessonLab(std::string_view text, LessonLab& out) {
  int k = 0;
  if (!parseName(kLabNames, text, k)) return false;
  out = static_cast<LessonLab>(k);
  return true;
}

const std::vector<std::string>& lessonActionKindNames() {
  static const std::vector<std::string> names(kActionNames.begin(), kActionNames.end());
  return names;
}
const std::vector<std::string>& lessonCheckKindNames() {
  static const std::vector<std::string> names(kCheckNames.begin(), kCheckNames.end());
  return names;
}
const std::vector<std::string>& lessonLabNames() {
  static const std::vector<std::string> names(kLabNames.begin(), kLabNames.end());
  return names;
}

std::vector<std::string> richTextProblems(std::string_view text) {
  std::vector<std::string> out;
  richText(text, out);
  return out;
}

std::vector<std::string> lessonElementIds(const AttentionSpec& design, int seq) {
  const TensorNetwork net = buildTensorNetwork(design, seq);
  const Elements e = elementsOf(net, design);
  std::vector<std::string> out = e.ids;
  for (const auto& n : net.nodes)
    for (size_t i = 0; i < n.legs.size(); ++i) out.push_back("leg:" + n.id + ":" + std::to_string(i));
  return out;
}

Lesson parseLesson(std::string_view text, const std::string& source) {
  LessonReader reader;
  return reader.lesson(text, source, nullptr);
}

Lesson readLessonFile(const std::string& path) {
  std::string text;
  try {
    text = files::readBoundedFile(path, kMaxLessonFileBytes);
  } catch (const std::runtime_error& e) {
    throw LessonError({{path, "(file)", e.what()}});
  }
  const std::string stem = std::filesystem::path(path).stem().string();
  LessonReader reader;
  return reader.lesson(text, path, &stem);
}

std::vector<Lesson> readLessonDirectory(const std::string& dir) {
  namespace fs = std::filesystem;
  std::vector<LessonProblem> problems;
  std::vector<std::string> paths;
  std::error_code ec;
  fs::directory_iterator it(dir, ec);
  if (ec) throw LessonError({{dir, "(file)", "cannot read the lesson directory: " + ec.message()}});
  for (; it != fs::directory_iterator(); it.increment(ec)) {
    if (ec) throw LessonError({{dir, "(file)", "cannot read the lesson directory: " + ec.message()}});
    const fs::path p = it->path();
    if (p.extension() != ".json") continue;
    std::error_code typeError;
    if (!fs::is_regular_file(p, typeError)) continue;
    paths.push_back(p.string());
    if (paths.size() > static_cast<size_t>(kMaxLessonFiles))
      throw LessonError({{dir, "(file)", "holds more than " + std::to_string(kMaxLessonFiles) + " lesson files"}});
  }
  std::sort(paths.begin(), paths.end());
  std::vector<Lesson> lessons;
  for (const auto& p : paths) {
    try {
      lessons.push_back(readLessonFile(p));
    } catch (const LessonError& e) {
      problems.insert(problems.end(), e.problems().begin(), e.problems().end());
    }
  }
  std::map<std::string, std::string> ids;
  std::map<int, std::string> orders;
  for (const auto& l : lessons) {
    if (const auto [at, fresh] = ids.emplace(l.id, l.source); !fresh)
      problems.push_back({l.source, "id", "lesson id " + preview(l.id) + " is also the id of " + at->second});
    if (const auto [at, fresh] = orders.emplace(l.order, l.source); !fresh)
      problems.push_back({l.source, "order", "order " + std::to_string(l.order) + " is also the order of " + at->second});
  }
  if (!problems.empty()) throw LessonError(std::move(problems));
  std::stable_sort(lessons.begin(), lessons.end(), [](const Lesson& a, const Lesson& b) {
    return a.order != b.order ? a.order < b.order : a.id < b.id;
  });
  return lessons;
}

std::string lessonToJson(const Lesson& l, int indent) {
  ojson j;
  j["format"] = kLessonFormat;
  j["version"] = kLessonVersion;
  j["id"] = l.id;
  j["title"] = l.title;
  j["summary"] = l.summary;
  j["order"] = l.order;
  ojson steps = ojson::array();
  for (const auto& s : l.steps) {
    ojson sj;
    sj["title"] = s.title;
    sj["text"] = s.text;
    if (s.design) {
      if (!s.design_preset.empty()) {
        ojson d;
        d["preset"] = s.design_preset;
        if (!s.design_sizes.empty()) {
          ojson z;
          for (const auto& [k, v] : s.design_sizes) z[k] = v;
          d["sizes"] = std::move(z);
        }
        sj["design"] = std::move(d);
      } else {
        sj["design"] = ojson::parse(toJson(*s.design, -1));
      }
    }
    if (s.seq) sj["seq"] = *s.seq;
    if (!s.highlight.empty()) sj["highlight"] = s.highlight;
    sj["action"] = actionToJson(s.action);
    if (s.check) sj["check"] = checkToJson(*s.check);
    steps.push_back(std::move(sj));
  }
  j["steps"] = std::move(steps);
  if (indent < 0) return j.dump();
  std::string out;
  detail::prettyPrint(j, indent, 0, out);
  return out + "\n";
}

AttentionSpec lessonReferenceDesign(std::string_view reference, const AttentionSpec& current) {
  AttentionSpec ref = makeSpecPreset(reference);
  const std::string core = ref.core ? ref.core->preset : "";
  ref.sizes = current.sizes;
  if (ref.core) {
    if (core == "heads_only" || core == "trainable_heads_only") ref.sizes.D = 1;
    ref.sizes.R = ref.sizes.H * ref.sizes.D;
    const auto issues = corePresetIssues(core, ref.sizes);
    if (!issues.empty()) throw std::invalid_argument("reference " + std::string(reference) + ": " + formatIssues(issues));
    ref.core = makeCorePreset(core, ref.sizes.H, ref.sizes.D);
  }
  return ref;
}

AttentionSpec applyCorePaint(const AttentionSpec& design, const std::vector<CorePaint>& paint) {
  if (!design.core || !hasCore(design.variant)) throw std::invalid_argument("applyCorePaint: the design has no core C");
  AttentionSpec s = design;
  CoreSpec& c = *s.core;
  const int H = s.sizes.H, D = s.sizes.D, R = s.sizes.R;
  if (R < 1 || static_cast<long long>(R) * R > kMaxCoreValues) throw std::invalid_argument("applyCorePaint: R out of range");
  if (c.structure != CoreStructure::Dense) {
    if (!validate(s).empty()) throw std::invalid_argument("applyCorePaint: the design is invalid: " + formatIssues(validate(s)));
    c.dense_values = materializeCore(c, H, D, R);
    c.trainable_mask = coreTrainableEntries(c, H, D, R);
    c.structure = CoreStructure::Dense;
    c.scale = 1.0;
    c.a = {};
    c.b = {};
    c.rank = 0;
    c.u_values.clear();
    c.v_values.clear();
    c.factors_trainable = true;
  }
  const size_t n = static_cast<size_t>(R) * static_cast<size_t>(R);
  if (c.dense_values.size() != n) throw std::invalid_argument("applyCorePaint: the dense core does not hold R×R values");
  for (const auto& p : paint) {
    if (p.row_first < 0 || p.col_first < 0 || p.row_first > p.row_last || p.col_first > p.col_last || p.row_last >= R ||
        p.col_last >= R)
      throw std::invalid_argument("applyCorePaint: a rectangle leaves the " + std::to_string(R) + "×" + std::to_string(R) + " core");
    for (int r = p.row_first; r <= p.row_last; ++r)
      for (int col = p.col_first; col <= p.col_last; ++col) c.dense_values[static_cast<size_t>(r) * R + col] = p.value;
  }
  c.preset = "custom";
  return s;
}

bool checkMet(const LessonCheck& c, const LessonState& s) {
  switch (c.kind) {
    case LessonCheckKind::VariantIs: return s.design && toString(s.design->variant) == c.variant;
    case LessonCheckKind::CorePresetIs: return s.design && s.design->core && s.design->core->preset == c.preset;
    case LessonCheckKind::StableRankIn: return s.stable_rank && *s.stable_rank >= c.min && *s.stable_rank <= c.max;
    case LessonCheckKind::HeadsIn: return s.design && s.design->sizes.H >= c.min_heads && s.design->sizes.H <= c.max_heads;
    case LessonCheckKind::TrainedStepsAtLeast: return s.trained_steps >= c.steps;
    case LessonCheckKind::Inspected: return !c.node.empty() && s.inspected == c.node;
    case LessonCheckKind::PlanStepReached:
      if (s.plan_step < 0) return false;
      return c.plan_step == kPlanEnd ? s.plan_step == s.plan_length - 1 : s.plan_step >= c.plan_step;
    case LessonCheckKind::ParametersMatch: {
      if (!s.design || !validate(*s.design).empty()) return false;
      try {
        const AttentionSpec ref = lessonReferenceDesign(c.reference, *s.design);
        if (!validate(ref).empty()) return false;
        const double pr = static_cast<double>(parameterCount(ref));
        const double pd = static_cast<double>(parameterCount(*s.design));
        return pr > 0 && std::abs(pd - pr) <= c.tolerance * pr;
      } catch (const std::invalid_argument&) {
        return false;
      }
    }
    case LessonCheckKind::LabDone: return labIn(c.lab, s.labs_done);
    case LessonCheckKind::LossBelow: return s.last_eval_loss && *s.last_eval_loss < c.value;
    case LessonCheckKind::All:
      for (const auto& sub : c.checks)
        if (!checkMet(sub, s)) return false;
      return true;
  }
  return false;
}

std::string unmetHint(const LessonCheck& check, const LessonState& state) {
  std::string out;
  firstUnmet(check, state, "", out);
  return out;
}

std::string describeCheck(const LessonCheck& c) {
  switch (c.kind) {
    case LessonCheckKind::VariantIs: return "the design's variant is " + c.variant;
    case LessonCheckKind::CorePresetIs: return "the core preset is " + c.preset;
    case LessonCheckKind::StableRankIn: return "stable rank of C in [" + number(c.min) + ", " + number(c.max) + "]";
    case LessonCheckKind::HeadsIn:
      return c.min_heads == c.max_heads ? "H = " + std::to_string(c.min_heads)
                                        : "H in [" + std::to_string(c.min_heads) + ", " + std::to_string(c.max_heads) + "]";
    case LessonCheckKind::TrainedStepsAtLeast: return "the run has trained at least " + std::to_string(c.steps) + " steps";
    case LessonCheckKind::Inspected: return "the inspector shows " + c.node;
    case LessonCheckKind::PlanStepReached:
      return c.plan_step == kPlanEnd ? "the contraction plan is stepped to its end"
                                     : "the contraction plan is stepped to step " + std::to_string(c.plan_step);
    case LessonCheckKind::ParametersMatch:
      return "attention parameters within " + number(c.tolerance * 100) + "% of " + c.reference + " at the same F, H, D";
    case LessonCheckKind::LabDone: return "the " + std::string(toString(c.lab)) + " lab has been run";
    case LessonCheckKind::LossBelow: return "the last evaluation loss is below " + number(c.value);
    case LessonCheckKind::All: {
      std::string out = "every one of: ";
      for (size_t i = 0; i < c.checks.size(); ++i) out += (i ? "; " : "") + describeCheck(c.checks[i]);
      return out;
    }
  }
  return {};
}

}  // namespace tensorscope::spec
