// A lesson step's check: its kind, the fields of that kind, an optional hint; "all" makes a tree at
// most kMaxCheckDepth deep.
#include <algorithm>

#include "lesson/checks.h"
#include "lesson_reader.h"
#include "spec/core_spec.h"
#include "spec/validation.h"

namespace tensorscope::spec::lesson_detail {

std::optional<LessonCheck> LessonReader::check(const json& j, const std::string& field, int level, const Elements& e,
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
  const bool ok = checkFields(j, field, level, e, hasDesign, c, known);
  r_.rejectUnknown(j, prefix, known);
  if (r_.read(j, "hint", prefix, c.hint)) plainText(prefix + "hint", c.hint, kMaxHintChars);
  if (!ok) return std::nullopt;
  return c;
}

/// The fields of c.kind, added to `known`; false when the check cannot be kept.
bool LessonReader::checkFields(const json& j, const std::string& field, int level, const Elements& e, bool hasDesign,
                               LessonCheck& c, std::vector<std::string>& known) {
  const std::string prefix = field + ".";
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
    case LessonCheckKind::StableRankIn:
      known.insert(known.end(), {"min", "max"});
      stableRankIn(j, field, e, hasDesign, c);
      break;
    case LessonCheckKind::HeadsIn:
      known.insert(known.end(), {"min", "max"});
      headsIn(j, prefix, c);
      break;
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
    case LessonCheckKind::ParametersMatch:
      known.insert(known.end(), {"reference", "tolerance"});
      parametersMatch(j, prefix, c);
      break;
    case LessonCheckKind::LabDone:
      known.push_back("lab");
      if (const auto l = lab(j, prefix)) c.lab = *l;
      break;
    case LessonCheckKind::LossBelow:
      known.push_back("value");
      if (finiteNumber(j, "value", prefix, c.value, true) && c.value <= 0.0)
        fail(prefix + "value", "must be > 0; got " + jsonPreview(j["value"]));
      break;
    case LessonCheckKind::SlotIs:
      known.insert(known.end(), {"slot", "value"});
      if (slotAndValue(j, prefix, c.slot, c.slot_value) && e.usable) {
        try {  // the value must be one the slot can take
          applyLessonSlot(e.design, c.slot, c.slot_value);
        } catch (const std::invalid_argument& ex) {
          if (std::string(ex.what()).find("gives an invalid design") == std::string::npos) fail(prefix + "value", ex.what());
        }
      }
      break;
    case LessonCheckKind::CostRatioIn:
      known.insert(known.end(), {"cost", "min", "max", "context"});
      costRatioIn(j, prefix, c);
      break;
    case LessonCheckKind::RowZeroed:
      known.insert(known.end(), {"parameter", "row"});
      mixRow(j, field, e, hasDesign, c.parameter, c.row, "row_zeroed");
      break;
    case LessonCheckKind::All:
      known.push_back("checks");
      ok = allOf(j, prefix, level, e, hasDesign, c);
      break;
  }
  return ok;
}

void LessonReader::stableRankIn(const json& j, const std::string& field, const Elements& e, bool hasDesign,
                                LessonCheck& c) {
  const std::string prefix = field + ".";
  const bool a = finiteNumber(j, "min", prefix, c.min, true);
  const bool b = finiteNumber(j, "max", prefix, c.max, true);
  if (a && c.min < 1.0) fail(prefix + "min", "must be ≥ 1 (a stable rank is at least 1); got " + jsonPreview(j["min"]));
  if (a && b && c.max < c.min)
    fail(prefix + "max", "must be ≥ min (" + jsonPreview(j["min"]) + "); got " + jsonPreview(j["max"]));
  if (a && e.usable && e.has_core && c.min > e.R)
    fail(prefix + "min", "can never be met: the stable rank of an R×R core is at most R = " + std::to_string(e.R));
  needsCore(field, "stable_rank_in", e, hasDesign);
}

void LessonReader::headsIn(const json& j, const std::string& prefix, LessonCheck& c) {
  std::int64_t lo = 0, hi = 0;
  const bool a = wholeIn(j, "min", prefix, 1, kMaxHeads, lo, true);
  const bool b = wholeIn(j, "max", prefix, 1, kMaxHeads, hi, true);
  c.min_heads = static_cast<int>(lo);
  c.max_heads = static_cast<int>(hi);
  if (a && b && hi < lo) fail(prefix + "max", "must be ≥ min (" + std::to_string(lo) + "); got " + std::to_string(hi));
}

void LessonReader::parametersMatch(const json& j, const std::string& prefix, LessonCheck& c) {
  if (requireString(j, "reference", prefix, c.reference, "a preset name (" + joined(specPresetNames()) + ")")) {
    const auto names = specPresetNames();
    if (std::find(names.begin(), names.end(), c.reference) == names.end())
      fail(prefix + "reference", "unknown preset " + preview(c.reference) + "; one of " + joined(names));
  }
  if (finiteNumber(j, "tolerance", prefix, c.tolerance, true) &&
      (c.tolerance <= 0.0 || c.tolerance > kMaxParameterTolerance))
    fail(prefix + "tolerance", "must be in (0, 0.5]; got " + jsonPreview(j["tolerance"]));
}

void LessonReader::costRatioIn(const json& j, const std::string& prefix, LessonCheck& c) {
  const auto& names = lessonCostNames();
  if (requireString(j, "cost", prefix, c.cost, "one of " + joined(names)) &&
      std::find(names.begin(), names.end(), c.cost) == names.end())
    fail(prefix + "cost", "unknown cost " + preview(c.cost) + "; one of " + joined(names));
  const bool a = finiteNumber(j, "min", prefix, c.min, true);
  const bool b = finiteNumber(j, "max", prefix, c.max, true);
  if (a && c.min <= 0.0) fail(prefix + "min", "must be > 0 (a ratio of two costs); got " + jsonPreview(j["min"]));
  if (a && b && c.max < c.min)
    fail(prefix + "max", "must be ≥ min (" + jsonPreview(j["min"]) + "); got " + jsonPreview(j["max"]));
  if (j.contains("context")) wholeIn(j, "context", prefix, 1, kMaxLessonContext, c.context, true);
}

/// "all": 1..kMaxAllChecks checks, each read one level deeper; false when it nests too deep.
bool LessonReader::allOf(const json& j, const std::string& prefix, int level, const Elements& e, bool hasDesign,
                         LessonCheck& c) {
  if (level > kMaxCheckDepth) {
    fail(prefix + "kind", "\"all\" nests deeper than " + std::to_string(kMaxCheckDepth) + " levels");
    return false;
  }
  if (!j.contains("checks")) {
    fail(prefix + "checks", "missing; a list of 1 to " + std::to_string(kMaxAllChecks) + " checks");
    return true;
  }
  const json& list = j["checks"];
  if (!list.is_array() || list.empty() || list.size() > static_cast<size_t>(kMaxAllChecks)) {
    fail(prefix + "checks", "must be a list of 1 to " + std::to_string(kMaxAllChecks) + " checks; got " +
                                (list.is_array() ? std::to_string(list.size()) + " checks" : kindName(list)));
    return true;
  }
  for (size_t i = 0; i < list.size(); ++i)
    if (auto sub = check(list[i], prefix + "checks[" + std::to_string(i) + "]", level + 1, e, hasDesign))
      c.checks.push_back(std::move(*sub));
  return true;
}

}  // namespace tensorscope::spec::lesson_detail
