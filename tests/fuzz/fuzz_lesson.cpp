// Lessons (tensorscope.lesson v1): a lesson or LessonError (never another exception); a lesson's JSON
// is a fixed point of parse ∘ serialise; every step's effective design builds its network, names only
// elements of it, and its checks, hints and edit_core paint evaluate without throwing.
#include "fuzz_util.h"
#include "lesson/lesson.h"
#include "spec/tensor_network.h"
#include "spec/validation.h"

#include <algorithm>

namespace {

void walk(const tensorscope::spec::LessonCheck& c, const tensorscope::spec::LessonState& s, int depth) {
  using namespace tensorscope::spec;
  FUZZ_CHECK(depth <= kMaxCheckDepth + 1);
  (void)checkMet(c, s);
  (void)describeCheck(c);
  FUZZ_CHECK(checkMet(c, s) == unmetHint(c, s).empty());
  for (const auto& sub : c.checks) walk(sub, s, depth + 1);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tensorscope::spec;
  const std::string text(fuzz::text(data, size));
  (void)richTextProblems(text.substr(0, kMaxLessonTextBytes + 1));
  Lesson l;
  try {
    l = parseLesson(text, "fuzz.json");
  } catch (const LessonError& e) {
    FUZZ_CHECK(!e.problems().empty());
    return 0;
  }
  FUZZ_CHECK(!l.steps.empty() && l.steps.size() <= static_cast<size_t>(kMaxLessonSteps));
  const std::string once = lessonToJson(l);
  const Lesson back = parseLesson(once, "fuzz.json");
  FUZZ_CHECK(back == l);
  FUZZ_CHECK(lessonToJson(back) == once);
  for (const auto& st : l.steps) {
    FUZZ_CHECK(richTextProblems(st.text).empty());
    LessonState state;
    if (st.has_design) {
      FUZZ_CHECK(validate(st.effective_design).empty());
      state.design = st.effective_design;
      const auto ids = lessonElementIds(st.effective_design, st.effective_seq);
      for (const auto& h : st.highlight) FUZZ_CHECK(std::find(ids.begin(), ids.end(), h) != ids.end());
      if (st.action.kind == LessonActionKind::EditCore) {
        const AttentionSpec painted = applyCorePaint(st.effective_design, st.action.paint);
        FUZZ_CHECK(painted.core && painted.core->structure == CoreStructure::Dense);
      }
      state.inspected = st.action.node;
      state.plan_step = st.action.to.value_or(0);
    } else {
      FUZZ_CHECK(st.highlight.empty());
    }
    state.stable_rank = 2.0;
    state.trained_steps = st.action.steps;
    state.last_eval_loss = 1.0;
    if (st.check) walk(*st.check, state, 1);
  }
  return 0;
}
