// The torch-free half of the lesson runner: whether a check holds in what the explorer shows, the
// hint to show while it does not, a check in words, the reference design of parameters_match and
// the design after an edit_core paint.
#include <algorithm>
#include <cmath>
#include <sstream>

#include "lesson/checks.h"
#include "spec/core_spec.h"
#include "spec/cost_model.h"
#include "spec/validation.h"

namespace tensorscope::spec {
namespace {

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
    case LessonCheckKind::SlotIs:
      try {
        return s.design && lessonSlotValue(*s.design, c.slot) == c.slot_value;
      } catch (const std::invalid_argument&) {
        return false;
      }
    case LessonCheckKind::CostRatioIn: {
      if (!s.design) return false;
      try {
        const auto r = lessonCostRatio(*s.design, c.cost, c.context > 0 ? c.context : kDefaultLessonContext);
        return r && *r >= c.min && *r <= c.max;
      } catch (const std::invalid_argument&) {
        return false;
      }
    }
    case LessonCheckKind::RowZeroed: {
      const std::string name = c.parameter + "[" + std::to_string(c.row) + "]";
      return std::find(s.zeroed_rows.begin(), s.zeroed_rows.end(), name) != s.zeroed_rows.end();
    }
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
                                     // the Inspector counts from 1 ("Step 7 of 8"); the file from 0
                                     : "the contraction plan is stepped to Step " + std::to_string(c.plan_step + 1);
    case LessonCheckKind::ParametersMatch:
      return "attention parameters within " + number(c.tolerance * 100) + "% of " + c.reference + " at the same F, H, D";
    case LessonCheckKind::LabDone: return "the " + std::string(toString(c.lab)) + " lab has been run";
    case LessonCheckKind::LossBelow: return "the last evaluation loss is below " + number(c.value);
    case LessonCheckKind::SlotIs: return c.slot + " is " + c.slot_value;
    case LessonCheckKind::CostRatioIn: {
      const std::string what = c.cost == "kv_cache"         ? "KV cache per token"
                               : c.cost == "decode_flops"   ? "decoding FLOPs per new token"
                               : c.cost == "training_flops" ? "training FLOPs per token"
                                                            : "parameters";
      return what + " in [" + number(c.min) + ", " + number(c.max) + "] × MHSA's at the same F, H, D (L = " +
             std::to_string(c.context > 0 ? c.context : kDefaultLessonContext) + ")";
    }
    case LessonCheckKind::RowZeroed:
      return "row " + std::to_string(c.row) + " of " + c.parameter + " is 0 in the weights the run starts from";
    case LessonCheckKind::All: {
      std::string out = "every one of: ";
      for (size_t i = 0; i < c.checks.size(); ++i) out += (i ? "; " : "") + describeCheck(c.checks[i]);
      return out;
    }
  }
  return {};
}

}  // namespace tensorscope::spec
