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
  /// Rows of layer 0's head mixings that are exactly 0 in the weights the lesson run starts from (a
  /// fork's starting checkpoint, read from its file), as "mix_post[1]".
  std::vector<std::string> zeroed_rows;
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
///  slot_is: design && lessonSlotValue(*design, slot) == slot_value;
///  cost_ratio_in: lessonCostRatio(*design, cost, context) is in [min, max];
///  row_zeroed: "parameter[row]" ∈ zeroed_rows;
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

/// `design` with slot `slot` (a lessonSlotNames() field) set to `value` as text: a whole number for
/// kv_groups and the latent sizes, true/false for pre_mix, post_mix and differential, none/headwise/
/// elementwise for the gate, naive/absorbed for the latent order. Throws std::invalid_argument for
/// an unknown slot, a malformed value, or a result spec::validate refuses (its issues).
AttentionSpec applyLessonSlot(const AttentionSpec& design, const std::string& slot, const std::string& value);
/// The value of `slot` in `design`, written as applyLessonSlot reads it ("2", "true", "absorbed").
std::string lessonSlotValue(const AttentionSpec& design, const std::string& slot);

/// cost_ratio_in's number: a cost of `design` per token at context length `context`, divided by the
/// same cost of MHSA at the design's F, H and D (the Cost dock's "MHSA here", spec/cost_model.h):
/// "parameters" (parameterCount), "training_flops" (estimateCost at B = 1, N = context, per token),
/// "kv_cache" (cache elements per token) and "decode_flops" (a new token after `context` cached;
/// both from estimateDecodeCost, a non-causal layer decoded as the same layer made causal). nullopt
/// when the design is invalid or has no such cost (no KV cache: a fixed state, or no decoding).
std::optional<double> lessonCostRatio(const AttentionSpec& design, const std::string& cost, std::int64_t context);

}  // namespace tensorscope::spec
