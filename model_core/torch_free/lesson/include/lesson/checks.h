#pragma once
/// The torch-free half of the lesson runner: what the explorer shows as far as checks are concerned,
/// whether a check holds, what to say while it does not, and the designs that checks and edit_core
/// paint produce.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lesson/types.h"
#include "spec/attention_spec.h"

namespace tensorscope::spec {

/// What the explorer shows, as far as checks are concerned; the GUI fills it from its document.
struct LessonState {
  std::optional<AttentionSpec> design;  ///< the lesson run's design (its current layer's spec)
  std::optional<double> stable_rank;    ///< of the C the core editor shows; nullopt: no C shown
  std::int64_t trained_steps = 0;       ///< the lesson run's step counter
  std::string inspected;                ///< element id the inspector shows ("" none)
  int plan_step = -1;                   ///< plan step the stepping view shows (-1: not stepping)
  int plan_length = 0;                  ///< steps in the plan the stepping view steps through
  std::vector<LessonLab> labs_done;     ///< labs run whose result is shown
  std::optional<double> last_eval_loss; ///< the lesson run's last evaluation loss
};

/// Whether `check` holds in `state`:
///  variant_is: design && toString(design->variant) == variant;
///  core_preset_is: design && design->core && design->core->preset == preset;
///  stable_rank_in: stable_rank && min ≤ *stable_rank ≤ max;
///  heads_in: design && min_heads ≤ design->sizes.H ≤ max_heads;
///  trained_steps_at_least: trained_steps ≥ steps;
///  inspected: inspected == node;
///  plan_step_reached: plan_step ≥ 0 and (kPlanEnd: plan_step == plan_length - 1; else plan_step ≥ step);
///  parameters_match: design valid and |P(design) − P(ref)| ≤ tolerance · P(ref), P = parameterCount,
///    ref = lessonReferenceDesign(reference, *design) (false when ref is invalid or P(ref) = 0);
///  lab_done: lab ∈ labs_done;  loss_below: last_eval_loss && *last_eval_loss < value;
///  all: every check in `checks`.
bool checkMet(const LessonCheck& check, const LessonState& state);

/// The text to show while `check` is not met: the hint of the first unmet leaf that has one, else
/// the hint of its nearest "all" with one, else describeCheck of that leaf; "" when met.
std::string unmetHint(const LessonCheck& check, const LessonState& state);

/// Plain-text description of a check: "stable rank of C in [1.9, 2.1]", "every one of: …".
std::string describeCheck(const LessonCheck& check);

/// The reference design of parameters_match: makeSpecPreset(reference) with F, H, D, R, P, c and
/// seq_len of `current`; a reference with a core then gets D = 1 when the preset is heads_only or
/// trainable_heads_only, R = H·D, and its core preset re-expanded at (H, D). Throws
/// std::invalid_argument for an unknown reference or impossible sizes (corePresetIssues).
AttentionSpec lessonReferenceDesign(std::string_view reference, const AttentionSpec& current);

/// `design` after an edit_core paint: a Kronecker or low-rank core is first made dense as the core
/// editor's "Make dense" does (materializeCore values, coreTrainableEntries mask), then each
/// rectangle sets its cells; the core's preset becomes "custom". Throws std::invalid_argument when
/// the design has no core or a rectangle leaves the R x R matrix.
AttentionSpec applyCorePaint(const AttentionSpec& design, const std::vector<CorePaint>& paint);

}  // namespace tensorscope::spec
