#pragma once
/// The types of a lesson ("tensorscope.lesson" version 1, docs/lessons.md): its limits, steps,
/// actions and checks, the problems a reader reports, and the names of the kinds in the file. What
/// the fields mean for the reader and the runner: lesson/lesson.h. Plain C++: no Qt, no torch.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "spec/attention_spec.h"

namespace tensorscope::spec {

inline constexpr const char* kLessonFormat = "tensorscope.lesson";
inline constexpr int kLessonVersion = 1;

// Limits (each refused with the field's path when exceeded).
inline constexpr std::uintmax_t kMaxLessonFileBytes = 256 * 1024;  ///< readLessonFile
inline constexpr int kMaxLessonSteps = 64;                          ///< steps: 1..64
inline constexpr std::size_t kMaxLessonIdChars = 64;                ///< id: snake_case
inline constexpr std::size_t kMaxLessonTitleChars = 100;            ///< lesson and step titles
inline constexpr std::size_t kMaxLessonSummaryChars = 300;          ///< summary: one sentence
inline constexpr std::size_t kMaxLessonTextBytes = 4096;            ///< a step's rich text (UTF-8 bytes)
inline constexpr int kMaxLessonTextNesting = 8;                     ///< open tags at once in a text
inline constexpr std::size_t kMaxPromptChars = 300;                 ///< action prompt (code points)
inline constexpr std::size_t kMaxHintChars = 200;                   ///< check hint (code points)
inline constexpr int kMaxLessonOrder = 10000;                       ///< order: 0..10000
inline constexpr int kDefaultLessonSeq = 8;                         ///< seq when no step sets one
inline constexpr int kMaxLessonSeq = 1024;                          ///< seq: 1..1024
inline constexpr int kMaxHighlights = 32;                           ///< highlight ids per step
inline constexpr std::int64_t kMaxLessonTrainSteps = 100000;        ///< train action: 1..100000
inline constexpr std::int64_t kMaxLessonCheckSteps = 10000000;      ///< trained_steps_at_least: 1..1e7
inline constexpr double kMaxParameterTolerance = 0.5;               ///< parameters_match: 0 < t ≤ 0.5
inline constexpr int kMaxCheckDepth = 2;      ///< most "all" checks on any path from the step's check
inline constexpr int kMaxAllChecks = 16;      ///< checks in one "all": 1..16
inline constexpr int kMaxPaintRects = 16;     ///< edit_core paint rectangles: 0..16
inline constexpr int kMaxLessonFiles = 256;   ///< *.json files readLessonDirectory reads
/// Designs stay small enough to train in seconds and to draw: F, R, H·D ≤ 512 and sizes.seq_len ≤
/// kMaxLessonSeq (checked before a preset's core is expanded).
inline constexpr int kMaxLessonDesignWidth = 512;
/// cost_ratio_in's context length L (tokens cached, or the training context) when none is given, and
/// the largest it may name.
inline constexpr std::int64_t kDefaultLessonContext = 4096;  ///< the Cost dock's L at start
inline constexpr std::int64_t kMaxLessonContext = 1 << 20;
/// A plan step index meaning "the last step of the plan" ("end" in the file).
inline constexpr int kPlanEnd = -1;

/// The labs an action opens or runs and lab_done names (model_core/labs.h).
enum class LessonLab { Bottleneck, StableRank };

enum class LessonActionKind {
  Read,              ///< "read": nothing to do
  EditCore,          ///< "edit_core": edit C in the core editor (optional machine-readable `paint`)
  ChooseVariant,     ///< "choose_variant": switch the design to `variant`
  ChooseCorePreset,  ///< "choose_core_preset": choose core preset `preset` in the core editor
  Train,             ///< "train": train the current run `steps` steps
  Inspect,           ///< "inspect": click element `node` on the diagram (the inspector shows it)
  StepPlan,          ///< "step_plan": step the contraction plan (to `to` when given)
  OpenLab,           ///< "open_lab": open lab `lab`
  RunLab,            ///< "run_lab": run lab `lab` (its result shown)
  SetSlot,           ///< "set_slot": set slot `slot` of the design to `value` (the Design dock's slots)
  ZeroRow,           ///< "zero_row": fork the trained run with row `row` of head mixing `parameter` zeroed
};

enum class LessonCheckKind {
  VariantIs,            ///< "variant_is" {variant}: the current design's variant
  CorePresetIs,         ///< "core_preset_is" {preset}: the current design's CoreSpec::preset
  StableRankIn,         ///< "stable_rank_in" {min, max}: stable rank of the C the core editor shows
  HeadsIn,              ///< "heads_in" {min, max}: sizes.H of the current design
  TrainedStepsAtLeast,  ///< "trained_steps_at_least" {steps}: the current run's step counter
  Inspected,            ///< "inspected" {node}: the inspector shows that element
  PlanStepReached,      ///< "plan_step_reached" {step}: the stepping view is at or past that step
  ParametersMatch,      ///< "parameters_match" {reference, tolerance}: see lessonReferenceDesign
  LabDone,              ///< "lab_done" {lab}: the lab was run and its result is shown
  LossBelow,            ///< "loss_below" {value}: the current run's last evaluation loss < value
  SlotIs,               ///< "slot_is" {slot, value}: the current design's slot has that value
  CostRatioIn,          ///< "cost_ratio_in" {cost, min, max, context}: cost / MHSA's at the same F, H, D
  RowZeroed,            ///< "row_zeroed" {parameter, row}: that row is 0 in the weights the run starts from
  All,                  ///< "all" {checks}: every one of `checks`
};

/// One rectangle of an edit_core action's optional "paint": C[r, c] = value for every
/// row_first ≤ r ≤ row_last, col_first ≤ c ≤ col_last (0-based, inclusive), applied in order. In
/// the file: {"rows": [first, last], "cols": [first, last], "value": v}.
struct CorePaint {
  int row_first = 0, row_last = 0;
  int col_first = 0, col_last = 0;
  double value = 0.0;

  bool operator==(const CorePaint&) const = default;
};

struct LessonAction {
  LessonActionKind kind = LessonActionKind::Read;
  std::string prompt;  ///< plain text (shown as plain text, never as HTML), 1..300 code points
  std::string variant;  ///< ChooseVariant: a variantNames() entry
  std::string preset;   ///< ChooseCorePreset: a corePresetNames() entry
  std::int64_t steps = 0;  ///< Train: 1..kMaxLessonTrainSteps
  std::string node;     ///< Inspect: an element id of the step's network
  /// StepPlan: the plan step to reach (0-based, or kPlanEnd); nullopt: step freely.
  std::optional<int> to;
  LessonLab lab = LessonLab::Bottleneck;  ///< OpenLab, RunLab
  /// EditCore: what to paint, for a scripted learner and the "Show me" button (may be empty: the
  /// prompt says what to do). applyCorePaint applies it.
  std::vector<CorePaint> paint;
  /// SetSlot: a lessonSlotNames() field ("slots.kv_groups", "slots.latent.order", …) and its value as
  /// text ("2", "absorbed", "true"); applyLessonSlot sets it.
  std::string slot, value;
  /// ZeroRow: "mix_pre" or "mix_post" (talking heads' H x H mixings, [to, from]) and the row (the
  /// head it mixes into), 0 ≤ row < H; layer 0 of the run.
  std::string parameter;
  int row = 0;

  bool operator==(const LessonAction&) const = default;
};

/// A check; "all" makes it a tree (at most kMaxCheckDepth "all"s deep). Only the fields of its kind
/// are meaningful (the others keep their defaults and are not written).
struct LessonCheck {
  LessonCheckKind kind = LessonCheckKind::All;
  std::string hint;       ///< shown while the check is not met; optional, ≤ 200 code points
  std::string variant;    ///< VariantIs: a variantNames() entry
  std::string preset;     ///< CorePresetIs: a corePresetNames() entry
  std::string reference;  ///< ParametersMatch: a name makeSpecPreset accepts (specPresetNames())
  double min = 0.0, max = 0.0;        ///< StableRankIn: 1 ≤ min ≤ max, finite
  int min_heads = 0, max_heads = 0;   ///< HeadsIn ("min", "max" in the file): 1 ≤ min ≤ max ≤ kMaxHeads
  std::int64_t steps = 0;             ///< TrainedStepsAtLeast: 1..kMaxLessonCheckSteps
  std::string node;                   ///< Inspected: an element id of the step's network
  int plan_step = 0;                  ///< PlanStepReached ("step"): 0-based index or kPlanEnd
  double tolerance = 0.0;             ///< ParametersMatch: 0 < t ≤ 0.5 (relative)
  LessonLab lab = LessonLab::Bottleneck;  ///< LabDone
  double value = 0.0;                 ///< LossBelow: finite, > 0
  std::string slot, slot_value;       ///< SlotIs ("slot", "value" in the file): as set_slot's
  /// CostRatioIn: "parameters", "kv_cache", "decode_flops" or "training_flops" (lessonCostNames()),
  /// its ratio to MHSA's at the same F, H, D in [min, max] (0 < min ≤ max, finite), at context length
  /// `context` (1..kMaxLessonContext; default kDefaultLessonContext).
  std::string cost;
  std::int64_t context = 0;
  std::string parameter;              ///< RowZeroed: "mix_pre" or "mix_post"
  int row = 0;                        ///< RowZeroed: 0 ≤ row < H
  std::vector<LessonCheck> checks;    ///< All: 1..kMaxAllChecks

  bool operator==(const LessonCheck&) const = default;
};

struct LessonStep {
  std::string title;  ///< plain text, 1..100 code points
  /// Rich text: the HTML subset p, b, i, em, strong, sub, sup, code, br, ul, ol, li (no attributes;
  /// entities &amp; &lt; &gt; &quot; &apos; &nbsp; &#N; &#xH;), properly nested, ≤ 4096 bytes.
  /// Math is written in Unicode: "softmax(Q·Kᵀ/√D)".
  std::string text;

  /// The design this step loads, as given (nullopt: none). Either a full attention spec
  /// ("tensorscope.attention_spec" object, read by fromJson) or {"preset": NAME, "sizes": {...}}:
  /// makeSpecPreset(NAME) with the given sizes; a preset with a core then gets R = H·D (unless "R"
  /// is given) and its core preset re-expanded at the new H, D. Valid (spec::validate) after parsing.
  std::optional<AttentionSpec> design;
  /// The preset form as written, so that lessonToJson writes it back: NAME ("" when the design was
  /// a full spec or absent) and the size overrides sorted by name (("D", 4), ("F", 32), …).
  std::string design_preset;
  std::vector<std::pair<std::string, int>> design_sizes;

  std::optional<int> seq;  ///< tokens the diagram shows, as given (1..kMaxLessonSeq)

  /// Set by the parser: this step's design, or the last earlier step's; has_design false (and
  /// effective_design a default AttentionSpec) before the first step with a design.
  AttentionSpec effective_design;
  bool has_design = false;
  /// Set by the parser: this step's seq, or the last earlier step's, or kDefaultLessonSeq.
  int effective_seq = kDefaultLessonSeq;

  std::vector<std::string> highlight;  ///< element ids of the effective network, ≤ kMaxHighlights
  LessonAction action;                  ///< required
  std::optional<LessonCheck> check;     ///< nullopt: Next is always allowed

  bool operator==(const LessonStep&) const = default;
};

struct Lesson {
  std::string id;       ///< snake_case ([a-z][a-z0-9]*(_[a-z0-9]+)*), ≤ 64; = the file's stem
  std::string title;    ///< plain text, 1..100 code points
  std::string summary;  ///< one sentence (ends with . ? or !; no line break), ≤ 300 code points
  int order = 0;        ///< position in the lesson list, 0..kMaxLessonOrder, unique in a directory
  /// The task the lesson's runs train ("task" in the file; optional): one of lessonTaskNames(); ""
  /// (absent) means the explorer's default lesson task (reversing digits). A lesson whose text
  /// speaks of a task's structure (the TP lesson: numerator and denominator roles) names it.
  std::string task;
  std::vector<LessonStep> steps;  ///< 1..kMaxLessonSteps
  std::string source;   ///< where it was read from (the `source` argument); not written

  bool operator==(const Lesson&) const = default;
};

/// One problem of a lesson: the file (or directory) it is in, the JSON path ("steps[2].check.min",
/// "(document)" for the whole document, "(file)" for I/O) and a sentence saying what to change.
struct LessonProblem {
  std::string source;
  std::string field;
  std::string message;

  bool operator==(const LessonProblem&) const = default;
};

/// Thrown by every reader of lesson/reader.h; what() is "invalid lesson:" then one
/// "  SOURCE: FIELD: MESSAGE" line per problem.
class LessonError : public std::invalid_argument {
 public:
  explicit LessonError(std::vector<LessonProblem> problems);
  const std::vector<LessonProblem>& problems() const { return problems_; }

 private:
  std::vector<LessonProblem> problems_;
};

// --- names ----------------------------------------------------------------------------------------

std::string_view toString(LessonActionKind k);  ///< "read", "edit_core", …
std::string_view toString(LessonCheckKind k);   ///< "variant_is", …
std::string_view toString(LessonLab lab);       ///< "bottleneck", "stable_rank"
bool parseLessonActionKind(std::string_view text, LessonActionKind& out);
bool parseLessonCheckKind(std::string_view text, LessonCheckKind& out);
bool parseLessonLab(std::string_view text, LessonLab& out);
const std::vector<std::string>& lessonActionKindNames();
const std::vector<std::string>& lessonCheckKindNames();
const std::vector<std::string>& lessonLabNames();
/// The slots set_slot and slot_is name: "slots.kv_groups", "slots.pre_mix", "slots.post_mix",
/// "slots.gate", "slots.latent.kv_rank", "slots.latent.q_rank", "slots.latent.rope_dim",
/// "slots.latent.order" (the Design dock's field names).
const std::vector<std::string>& lessonSlotNames();
/// The costs cost_ratio_in compares: "parameters", "kv_cache", "decode_flops", "training_flops".
const std::vector<std::string>& lessonCostNames();
/// The parameters zero_row and row_zeroed name: "mix_pre", "mix_post".
const std::vector<std::string>& lessonMixNames();
/// The tasks a lesson may name in "task": the token tasks of the trainer ("arithmetic", "char_lm",
/// "copy", "reverse", "sort"; model_core::taskNames() less the image task).
const std::vector<std::string>& lessonTaskNames();

}  // namespace tensorscope::spec
