// The names of the kinds in a lesson file, LessonError, and the text helpers the reader shares.
#include <algorithm>

#include "lesson/types.h"
#include "lesson_detail.h"
#include "spec/json_reader.h"

namespace tensorscope::spec {
namespace lesson_detail {

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

std::int64_t clampedWhole(const json& x) {
  if (x.is_number_unsigned()) return static_cast<std::int64_t>(std::min<std::uint64_t>(x.get<std::uint64_t>(), 1u << 30));
  return std::clamp<std::int64_t>(x.get<std::int64_t>(), -1, 1 << 30);
}

}  // namespace lesson_detail

namespace {

std::string errorText(const std::vector<LessonProblem>& problems) {
  std::string m = "invalid lesson:";
  for (const auto& p : problems) m += "\n  " + p.source + ": " + p.field + ": " + p.message;
  return m;
}

}  // namespace

using lesson_detail::kActionNames;
using lesson_detail::kCheckNames;
using lesson_detail::kLabNames;
using lesson_detail::parseName;

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

const std::vector<std::string>& lessonSlotNames() {
  static const std::vector<std::string> names{"slots.kv_groups",      "slots.pre_mix",        "slots.post_mix",
                                              "slots.gate",           "slots.differential",   "slots.latent.kv_rank",
                                              "slots.latent.q_rank",  "slots.latent.rope_dim", "slots.latent.order"};
  return names;
}
const std::vector<std::string>& lessonCostNames() {
  static const std::vector<std::string> names{"parameters", "kv_cache", "decode_flops", "training_flops"};
  return names;
}
const std::vector<std::string>& lessonMixNames() {
  static const std::vector<std::string> names{"mix_pre", "mix_post"};
  return names;
}

const std::vector<std::string>& lessonTaskNames() {
  static const std::vector<std::string> names{"arithmetic", "char_lm", "copy", "reverse", "sort"};
  return names;
}

}  // namespace tensorscope::spec
