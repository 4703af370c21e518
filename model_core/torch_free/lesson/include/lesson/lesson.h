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
///
/// The library by topic: lesson/types.h (limits, steps, actions, checks, problems, names),
/// lesson/reader.h (parseLesson, readLessonFile, readLessonDirectory, lessonElementIds),
/// lesson/rich_text.h (richTextProblems), lesson/writer.h (lessonToJson), lesson/checks.h
/// (LessonState, checkMet, unmetHint, describeCheck, lessonReferenceDesign, applyCorePaint).
/// Everything is in namespace tensorscope::spec, like the rest of the spec layer it builds on.

#include "lesson/checks.h"
#include "lesson/reader.h"
#include "lesson/rich_text.h"
#include "lesson/types.h"
#include "lesson/writer.h"
