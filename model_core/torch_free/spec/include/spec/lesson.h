#pragma once
/// Lessons of the teaching feature (issue 15): the file format "tensorscope.lesson" version 1
/// (docs/lessons.md), its reader and writer, and the torch-free half of the lesson runner (what a
/// check means against the explorer's state). Plain C++: no Qt, no torch.
///
/// A lesson is one JSON file in resources/lessons/ (installed as DATADIR/tensorscope/lessons):
/// ordered steps, each with rich text, an optional design to load, diagram elements to highlight,
/// one action for the learner and an optional check that recognises when the action is done.
///
/// Reading follows every other reader of the product: bounded parse (parseUntrustedJson), the shared
/// FieldReader wording, unknown fields refused naming the known ones, every problem reported at once
/// with its JSON path ("steps[2].check.min: must be ≥ 1; got 0.5"). Semantic checks that need a
/// design are made against the step's effective design and its tensor network
/// (buildTensorNetwork(effective_design, effective_seq)):
///  * highlight ids, the "inspect" action's node, the "inspected" check's node: an id of a drawn node
///    (TensorNetwork::nodes[].id, e.g. "Wq", "C", "x_q"), of a box (TensorNetwork::boxes[].id, e.g.
///    "attn", "phi_q"), or "leg:<node id>:<leg position>" (0-based position in that node's legs);
///  * plan step indices (step_plan's "to", plan_step_reached's "step"): 0-based positions in
///    TensorNetwork::plan, or "end" (the last step);
///  * edit_core, choose_core_preset and stable_rank_in need an effective design with a core C
///    (thsa, thsa_linear); edit_core's paint rectangles must lie inside its R x R.
/// Steps before the first design may only read and check things that need no design
/// (variant_is, trained_steps_at_least, lab_done, loss_below, …): no highlights, no inspect.
///
/// What the runner does (contract for the GUI): entering step k loads `steps[k].design` into the
/// lesson's run when the step has one (the learner's own design otherwise stays, edits included);
/// jumping into a lesson at step k loads `steps[k].effective_design` when `has_design`. Actions of
/// earlier steps (choose_variant, edits) are NOT replayed into effective_design: a step that needs
/// the diagram of a design the learner chose earlier sets that design itself. The diagram shows
/// effective_seq tokens (multilinear: sizes.seq_len). Next is allowed when the step has no check or
/// checkMet(check, state) holds for the explorer's LessonState.

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

/// Thrown by every reader below; what() is "invalid lesson:" then one "  SOURCE: FIELD: MESSAGE"
/// line per problem.
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

// --- reading and writing --------------------------------------------------------------------------

/// Parses and validates a lesson document; `source` names it in problems (a path or "<memory>").
/// Throws LessonError with every problem. Does not compare the id with a file name.
Lesson parseLesson(std::string_view text, const std::string& source);

/// Reads a lesson file (bounded: at most kMaxLessonFileBytes, via files::readBoundedFile) and
/// parses it; also requires id == the file's stem. Throws LessonError (source = path).
Lesson readLessonFile(const std::string& path);

/// Every regular *.json file directly in `dir` (at most kMaxLessonFiles), sorted by order then id.
/// Throws LessonError with the problems of every bad file, and duplicate ids or orders (naming both
/// files); a missing or unreadable directory is a "(file)" problem. An empty directory gives {}.
std::vector<Lesson> readLessonDirectory(const std::string& dir);

/// The lesson as a "tensorscope.lesson" v1 document: parseLesson(lessonToJson(l), s) == l for
/// every parsed lesson l (source aside). Designs in preset form are written in preset form.
std::string lessonToJson(const Lesson& lesson, int indent = 2);

/// Problems of a step's rich text (empty when valid): unknown or unclosed tags, attributes,
/// bad nesting (li only in ul/ol; ul/ol hold only li; p, ul and ol not inside p, li-less
/// inline tags or code), bad entities, control characters, over kMaxLessonTextBytes.
std::vector<std::string> richTextProblems(std::string_view text);

/// Every element id of a network a lesson may name: node ids, box ids, then "leg:<node>:<i>" for
/// every leg of every node, in that order (buildTensorNetwork(design, seq); throws
/// std::invalid_argument for an invalid design).
std::vector<std::string> lessonElementIds(const AttentionSpec& design, int seq);

// --- the runner's checks (torch-free) ------------------------------------------------------------

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
