// Writing lessons: a Lesson as a "tensorscope.lesson" v1 document (ordered keys, pretty-printed
// like spec files), designs in preset form written back in preset form.
#include <nlohmann/json.hpp>

#include "lesson/writer.h"
#include "spec/json_pretty.h"
#include "spec/spec_json.h"

namespace tensorscope::spec {
namespace {

using ojson = nlohmann::ordered_json;

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
    case LessonCheckKind::SlotIs: j["slot"] = c.slot; j["value"] = c.slot_value; break;
    case LessonCheckKind::CostRatioIn:
      j["cost"] = c.cost;
      j["min"] = c.min;
      j["max"] = c.max;
      if (c.context > 0) j["context"] = c.context;
      break;
    case LessonCheckKind::RowZeroed: j["parameter"] = c.parameter; j["row"] = c.row; break;
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
    case LessonActionKind::SetSlot: j["slot"] = a.slot; j["value"] = a.value; break;
    case LessonActionKind::ZeroRow: j["parameter"] = a.parameter; j["row"] = a.row; break;
  }
  return j;
}

}  // namespace

std::string lessonToJson(const Lesson& l, int indent) {
  ojson j;
  j["format"] = kLessonFormat;
  j["version"] = kLessonVersion;
  j["id"] = l.id;
  j["title"] = l.title;
  j["summary"] = l.summary;
  j["order"] = l.order;
  if (!l.task.empty()) j["task"] = l.task;
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

}  // namespace tensorscope::spec
