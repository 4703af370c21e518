// A lesson step's action: its prompt and kind, and the fields of that kind (edit_core's paint
// rectangles, a variant or core preset, training steps, an element, a plan step, a lab).
#include <algorithm>

#include "lesson/checks.h"
#include "lesson_reader.h"
#include "spec/core_spec.h"
#include "spec/validation.h"

namespace tensorscope::spec::lesson_detail {

void LessonReader::action(const json& j, const std::string& field, LessonAction& a, const Elements& e,
                          bool hasDesign) {
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
    case LessonActionKind::EditCore:
      known.push_back("paint");
      needsCore(field, "edit_core", e, hasDesign);
      if (j.contains("paint")) paint(j["paint"], prefix, a, e);
      break;
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
    case LessonActionKind::SetSlot:
      known.insert(known.end(), {"slot", "value"});
      if (slotAndValue(j, prefix, a.slot, a.value)) {
        if (!hasDesign) fail(field, "set_slot needs a design in this or an earlier step");
        else if (e.usable) {
          try {
            applyLessonSlot(e.design, a.slot, a.value);
          } catch (const std::invalid_argument& ex) {
            fail(prefix + "value", std::string(ex.what()) + " (the step's design)");
          }
        }
      }
      break;
    case LessonActionKind::ZeroRow:
      known.insert(known.end(), {"parameter", "row"});
      mixRow(j, field, e, hasDesign, a.parameter, a.row, "zero_row");
      break;
  }
  r_.rejectUnknown(j, prefix, known);
}

/// set_slot's and slot_is's "slot" (a lessonSlotNames() field) and "value" (a string, a whole
/// number or true/false, kept as text); false when either is missing or wrong.
bool LessonReader::slotAndValue(const json& j, const std::string& prefix, std::string& slot, std::string& value) {
  const auto& names = lessonSlotNames();
  bool ok = requireString(j, "slot", prefix, slot, "one of " + joined(names));
  if (ok && std::find(names.begin(), names.end(), slot) == names.end()) {
    fail(prefix + "slot", "unknown slot " + preview(slot) + "; one of " + joined(names));
    ok = false;
  }
  if (!j.contains("value")) {
    fail(prefix + "value", "missing; the slot's value (a whole number, true/false, or a name such as \"absorbed\")");
    return false;
  }
  const json& v = j["value"];
  if (v.is_string()) value = v.get<std::string>();
  else if (v.is_boolean()) value = v.get<bool>() ? "true" : "false";
  else if (v.is_number_integer() && clampedWhole(v) >= 0 && clampedWhole(v) <= (1 << 20)) value = std::to_string(clampedWhole(v));
  else {
    fail(prefix + "value", "must be a whole number 0..1048576, true/false or a name; got " + jsonPreview(v));
    return false;
  }
  if (ok && value.size() > 32) {
    fail(prefix + "value", "must be at most 32 characters; got " + preview(value.substr(0, 32)) + "…");
    return false;
  }
  return ok;
}

/// zero_row's and row_zeroed's "parameter" (mix_pre or mix_post) and "row" (0 ≤ row < H); the
/// step's design must have that mixing.
void LessonReader::mixRow(const json& j, const std::string& field, const Elements& e, bool hasDesign,
                          std::string& parameter, int& row, const char* what) {
  const std::string prefix = field + ".";
  const auto& names = lessonMixNames();
  const bool named = requireString(j, "parameter", prefix, parameter, "one of " + joined(names));
  if (named && std::find(names.begin(), names.end(), parameter) == names.end())
    fail(prefix + "parameter", "unknown parameter " + preview(parameter) + "; one of " + joined(names));
  std::int64_t r = 0;
  const bool hasRow = wholeIn(j, "row", prefix, 0, kMaxHeads - 1, r, true);
  row = static_cast<int>(r);
  if (!hasDesign) {
    fail(field, std::string(what) + " needs a design in this or an earlier step");
    return;
  }
  if (!e.usable || !named) return;
  const bool on = parameter == "mix_pre" ? e.design.slots.pre_mix : parameter == "mix_post" ? e.design.slots.post_mix : true;
  if (!on)
    fail(prefix + "parameter", "the step's design has no " + parameter + " (turn on slots." +
                                   (parameter == "mix_pre" ? "pre_mix" : "post_mix") + ")");
  else if (hasRow && row >= e.design.sizes.H)
    fail(prefix + "row", "must be < H = " + std::to_string(e.design.sizes.H) + " (one row per head); got " + std::to_string(row));
}

/// edit_core's optional "paint": at most kMaxPaintRects rectangles inside the core's R x R.
void LessonReader::paint(const json& list, const std::string& prefix, LessonAction& a, const Elements& e) {
  if (!list.is_array() || list.size() > static_cast<size_t>(kMaxPaintRects)) {
    fail(prefix + "paint", "must be a list of at most " + std::to_string(kMaxPaintRects) +
                               " rectangles {\"rows\": [first, last], \"cols\": [first, last], \"value\": v}");
    return;
  }
  for (size_t i = 0; i < list.size(); ++i) paintRectangle(list[i], prefix + "paint[" + std::to_string(i) + "]", a, e);
}

/// One rectangle {"rows": [first, last], "cols": [first, last], "value": v}, kept when valid.
void LessonReader::paintRectangle(const json& p, const std::string& pf, LessonAction& a, const Elements& e) {
  if (!p.is_object()) {
    fail(pf, "must be an object {\"rows\": [first, last], \"cols\": [first, last], \"value\": v}; got " + kindName(p));
    return;
  }
  r_.rejectUnknown(p, pf + ".", {"rows", "cols", "value"});
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

}  // namespace tensorscope::spec::lesson_detail
