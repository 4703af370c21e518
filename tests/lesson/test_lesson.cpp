// Lessons ("tensorscope.lesson" v1): reader, writer, directory, checks, and every shipped lesson.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>

#include <unistd.h>

#include "lesson/lesson.h"
#include "spec/core_spec.h"
#include "spec/cost_model.h"
#include "spec/tensor_network.h"

using namespace tensorscope::spec;
namespace fs = std::filesystem;

namespace {

/// The source tree's resources/lessons. lesson_tests has no source-dir definition, so it comes from
/// __FILE__ (tests/lesson/test_lesson.cpp), which the build may give relative to the build directory:
/// then it is looked up from the working directory and from the test binary's ancestors.
fs::path lessonsDir() {
  const fs::path self(__FILE__);
  const auto fromSource = [](const fs::path& source) { return source.parent_path().parent_path().parent_path() / "resources" / "lessons"; };
  if (self.is_absolute()) return fromSource(self);
  std::vector<fs::path> bases = {fs::current_path()};
  std::error_code ec;
  for (fs::path p = fs::read_symlink("/proc/self/exe", ec).parent_path(); !ec && !p.empty() && bases.size() < 8;
       p = p.parent_path()) {
    bases.push_back(p);
    if (p == p.parent_path()) break;
  }
  for (const auto& b : bases)
    if (fs::exists(b / self)) return fromSource(fs::weakly_canonical(b / self));
  return fromSource(self);
}

std::string head(const std::string& id = "demo", int order = 1) {
  return R"({"format": "tensorscope.lesson", "version": 1, "id": ")" + id +
         R"(", "title": "Demo", "summary": "A demo lesson.", "order": )" + std::to_string(order) + R"(, "steps": )";
}

const char* kSteps = R"([
  {"title": "Start", "text": "<p>MHSA as a <b>network</b>: softmax(Q·Kᵀ/√D).</p>",
   "design": {"preset": "mhsa", "sizes": {"F": 32, "H": 4, "D": 8}}, "seq": 8,
   "highlight": ["Wq", "attn", "leg:Wq:2"],
   "action": {"kind": "inspect", "node": "Wq", "prompt": "Click W^Q."},
   "check": {"kind": "inspected", "node": "Wq", "hint": "The node W^Q."}},
  {"title": "Carry", "text": "Plain text<br/>with a break.",
   "highlight": ["Wo"],
   "action": {"kind": "step_plan", "to": "end", "prompt": "Step to the end."},
   "check": {"kind": "all", "checks": [{"kind": "plan_step_reached", "step": "end"},
                                       {"kind": "all", "checks": [{"kind": "loss_below", "value": 3.5}]}]}},
  {"title": "Core", "text": "<ul><li>one</li><li><i>two</i></li></ul>",
   "design": {"preset": "thsa", "sizes": {"F": 16, "H": 2, "D": 2}},
   "highlight": ["C"],
   "action": {"kind": "edit_core", "prompt": "Paint.", "paint": [{"rows": [0, 1], "cols": [2, 3], "value": 0.5}]},
   "check": {"kind": "stable_rank_in", "min": 1.5, "max": 2.5}},
  {"title": "Full spec", "text": "<p>x</p>",
   "design": {"format": "tensorscope.attention_spec", "version": 1, "variant": "tp", "sizes": {"F": 16, "H": 2, "D": 4}},
   "highlight": ["Wr"],
   "action": {"kind": "train", "steps": 50, "prompt": "Train."},
   "check": {"kind": "parameters_match", "reference": "mhsa", "tolerance": 0.3}},
  {"title": "Labs", "text": "<p>x</p>", "seq": 12,
   "action": {"kind": "run_lab", "lab": "stable_rank", "prompt": "Run the lab."},
   "check": {"kind": "all", "hint": "Do it all.", "checks": [
     {"kind": "lab_done", "lab": "stable_rank"}, {"kind": "heads_in", "min": 1, "max": 4},
     {"kind": "trained_steps_at_least", "steps": 10}, {"kind": "variant_is", "variant": "tp"},
     {"kind": "core_preset_is", "preset": "custom"}]}},
  {"title": "More", "text": "<p>x</p>",
   "action": {"kind": "choose_variant", "variant": "thsa", "prompt": "Switch."}},
  {"title": "Open", "text": "<p>x</p>", "action": {"kind": "open_lab", "lab": "bottleneck", "prompt": "Open."}},
  {"title": "Plan", "text": "<p>x</p>", "action": {"kind": "step_plan", "prompt": "Step freely."}}
]})";

std::vector<LessonProblem> problemsOf(const std::string& text) {
  try {
    parseLesson(text, "mem.json");
  } catch (const LessonError& e) {
    return e.problems();
  }
  return {};
}

bool has(const std::vector<LessonProblem>& ps, const std::string& field, const std::string& text) {
  for (const auto& p : ps)
    if (p.field == field && p.message.find(text) != std::string::npos) return true;
  return false;
}

std::string dump(const std::vector<LessonProblem>& ps) {
  std::string out;
  for (const auto& p : ps) out += p.field + ": " + p.message + "\n";
  return out;
}

/// ‖C‖_F² / ‖C‖_2² by power iteration on CᵀC (float64).
double stableRank(const std::vector<double>& c, int R) {
  double fro = 0;
  for (double x : c) fro += x * x;
  std::vector<double> v(R, 1.0), w(R);
  for (int i = 0; i < R; ++i) v[i] += 0.01 * i;
  double lambda = 0;
  for (int it = 0; it < 2000; ++it) {
    std::vector<double> u(R, 0.0);
    for (int r = 0; r < R; ++r)
      for (int s = 0; s < R; ++s) u[r] += c[r * R + s] * v[s];
    std::fill(w.begin(), w.end(), 0.0);
    for (int r = 0; r < R; ++r)
      for (int s = 0; s < R; ++s) w[s] += c[r * R + s] * u[r];
    double n = 0;
    for (double x : w) n += x * x;
    n = std::sqrt(n);
    if (n == 0) return 0;
    lambda = n;
    for (int i = 0; i < R; ++i) v[i] = w[i] / n;
  }
  return fro / lambda;
}

/// `c` without its loss_below leaves (an "all" keeps the rest; a bare loss_below becomes an empty
/// "all", which holds).
LessonCheck withoutLoss(const LessonCheck& c) {
  LessonCheck out = c;
  if (c.kind == LessonCheckKind::LossBelow) {
    out = LessonCheck{};
    out.kind = LessonCheckKind::All;
    return out;
  }
  out.checks.clear();
  for (const auto& sub : c.checks)
    if (sub.kind != LessonCheckKind::LossBelow) out.checks.push_back(withoutLoss(sub));
  return out;
}

fs::path scratch(const std::string& name) {
  const fs::path d = fs::temp_directory_path() / ("ts_lesson_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

void write(const fs::path& p, const std::string& text) {
  std::ofstream(p) << text;
}

}  // namespace

TEST(LessonFormat, ParsesEveryKindAndRoundTrips) {
  const Lesson l = parseLesson(head() + kSteps, "mem.json");
  ASSERT_EQ(l.steps.size(), 8u);
  EXPECT_EQ(l.steps[0].action.kind, LessonActionKind::Inspect);
  EXPECT_EQ(l.steps[0].highlight, (std::vector<std::string>{"Wq", "attn", "leg:Wq:2"}));
  EXPECT_EQ(l.steps[1].action.to, kPlanEnd);
  ASSERT_TRUE(l.steps[1].check);
  EXPECT_EQ(l.steps[1].check->checks.at(1).checks.at(0).kind, LessonCheckKind::LossBelow);
  EXPECT_EQ(l.steps[2].action.paint, (std::vector<CorePaint>{{0, 1, 2, 3, 0.5}}));
  EXPECT_EQ(l.steps[3].effective_design.variant, Variant::Tp);
  EXPECT_EQ(l.steps[4].check->checks.at(1).min_heads, 1);
  EXPECT_EQ(l.steps[4].check->checks.at(1).max_heads, 4);
  EXPECT_FALSE(l.steps[7].action.to.has_value());

  const std::string once = lessonToJson(l);
  const Lesson back = parseLesson(once, "mem.json");
  EXPECT_EQ(back, l);
  EXPECT_EQ(lessonToJson(back), once);
  EXPECT_NE(once.find("\"preset\": \"mhsa\""), std::string::npos) << "preset form written back";
  EXPECT_EQ(parseLesson(lessonToJson(l, -1), "mem.json"), l);
}

// Finding N7: the TP lesson spoke of numerator and denominator roles but trained reversal. A lesson
// names the task its runs train; an unknown one is refused with the known ones.
TEST(LessonFormat, ALessonNamesTheTaskItsRunsTrain) {
  const std::string withTask = R"({"format": "tensorscope.lesson", "version": 1, "id": "demo", "title": "Demo",
    "summary": "A demo lesson.", "order": 1, "task": "arithmetic",
    "steps": [{"title": "x", "text": "<p>x</p>", "action": {"kind": "read", "prompt": "r"}}]})";
  const Lesson l = parseLesson(withTask, "mem.json");
  EXPECT_EQ(l.task, "arithmetic");
  EXPECT_EQ(parseLesson(lessonToJson(l), "mem.json"), l) << "written back";
  EXPECT_NE(lessonToJson(l).find("\"task\": \"arithmetic\""), std::string::npos);
  Lesson none = l;
  none.task.clear();
  EXPECT_EQ(lessonToJson(none).find("\"task\""), std::string::npos) << "absent when not given";
  std::string unknown = withTask;
  unknown.replace(unknown.find("arithmetic"), 10, "fractions");
  const auto ps = problemsOf(unknown);
  EXPECT_TRUE(has(ps, "task", "unknown task \"fractions\"; known: arithmetic, char_lm, copy, reverse, sort")) << dump(ps);
}

TEST(LessonFormat, NamesRoundTrip) {
  for (const auto& n : lessonActionKindNames()) {
    LessonActionKind k;
    ASSERT_TRUE(parseLessonActionKind(n, k));
    EXPECT_EQ(toString(k), n);
  }
  for (const auto& n : lessonCheckKindNames()) {
    LessonCheckKind k;
    ASSERT_TRUE(parseLessonCheckKind(n, k));
    EXPECT_EQ(toString(k), n);
  }
  for (const auto& n : lessonLabNames()) {
    LessonLab k;
    ASSERT_TRUE(parseLessonLab(n, k));
    EXPECT_EQ(toString(k), n);
  }
  LessonCheckKind k;
  EXPECT_FALSE(parseLessonCheckKind("everything", k));
}

TEST(LessonFormat, EffectiveDesignCarriesForward) {
  const Lesson l = parseLesson(head() + kSteps, "mem.json");
  EXPECT_TRUE(l.steps[0].design.has_value());
  EXPECT_EQ(l.steps[0].design_preset, "mhsa");
  EXPECT_EQ(l.steps[0].design_sizes, (std::vector<std::pair<std::string, int>>{{"D", 8}, {"F", 32}, {"H", 4}}));
  EXPECT_EQ(l.steps[0].effective_design.sizes.F, 32);
  EXPECT_TRUE(l.steps[0].has_design);
  EXPECT_EQ(l.steps[0].effective_seq, 8);
  // Step 1 sets nothing: it inherits step 0's design and seq.
  EXPECT_FALSE(l.steps[1].design.has_value());
  EXPECT_TRUE(l.steps[1].has_design);
  EXPECT_EQ(l.steps[1].effective_design, *l.steps[0].design);
  // A thsa preset with sizes: R = H·D and its core re-expanded at (H, D).
  const auto& thsa = l.steps[2].effective_design;
  EXPECT_EQ(thsa.sizes.R, 4);
  ASSERT_TRUE(thsa.core);
  EXPECT_EQ(thsa.core->dense_values.size(), 16u);
  EXPECT_EQ(thsa.core->dense_values, makeCorePreset("thsa", 2, 2).dense_values);
  // Full spec form: no preset recorded.
  EXPECT_EQ(l.steps[3].design_preset, "");
  // Seq carries forward too; steps after the last design keep it.
  EXPECT_EQ(l.steps[4].effective_seq, 12);
  EXPECT_EQ(l.steps[5].effective_seq, 12);
  EXPECT_FALSE(l.steps[4].seq.has_value() && l.steps[5].seq.has_value());
  EXPECT_EQ(l.steps[7].effective_design.variant, Variant::Tp);

  // Before any design: has_design false, default spec.
  const Lesson early = parseLesson(head() + R"([{"title": "a", "text": "<p>x</p>", "action": {"kind": "read", "prompt": "Read."}},
    {"title": "b", "text": "<p>y</p>", "design": {"preset": "heads_only"}, "action": {"kind": "read", "prompt": "Read."}}]})",
                                   "mem.json");
  EXPECT_FALSE(early.steps[0].has_design);
  EXPECT_TRUE(early.steps[1].has_design);
  EXPECT_EQ(early.steps[1].effective_design.sizes.D, 1);
  EXPECT_EQ(early.steps[1].effective_design.sizes.R, 4);
}

TEST(LessonProblems, EveryProblemAtOnceWithPaths) {
  const std::string text = head("Bad-Id", 1) + R"([
    {"title": "a", "text": "<p>bad <div>tag</div></p>", "colour": "red",
     "design": {"preset": "mhsa"},
     "highlight": ["wq", "leg:Wq:9"],
     "action": {"kind": "inspect", "node": "nope", "prompt": "Click.", "steps": 3},
     "check": {"kind": "stable_rank_in", "min": 0.5, "max": 0.2, "hint": "h"}},
    {"title": "b", "text": "<p>x</p>",
     "design": {"preset": "thsa", "sizes": {"F": 16, "H": 2, "D": 3, "R": 5}},
     "action": {"kind": "train", "steps": 0, "prompt": "Train."},
     "check": {"kind": "all", "checks": [{"kind": "all", "checks": [{"kind": "all", "checks": [{"kind": "lab_done", "lab": "bottleneck"}]}]}]}},
    {"title": "c", "text": "<p>x</p>",
     "action": {"kind": "choose_variant", "variant": "transformer", "prompt": "Switch."},
     "check": {"kind": "parameters_match", "reference": "mhsa", "tolerance": 0.9}}
  ]})";
  const auto ps = problemsOf(text);
  ASSERT_FALSE(ps.empty());
  for (const auto& p : ps) EXPECT_EQ(p.source, "mem.json");
  EXPECT_TRUE(has(ps, "id", "snake_case")) << dump(ps);
  EXPECT_TRUE(has(ps, "steps[0].colour", "known here: title, text, design, seq, highlight, action, check")) << dump(ps);
  EXPECT_TRUE(has(ps, "steps[0].text", "unknown tag \"<div>\"")) << dump(ps);
  EXPECT_TRUE(has(ps, "steps[0].highlight[0]", "unknown element \"wq\" (known here: x_q, Wq, x_k, Wk, x_v, Wv, Wo, attn")) << dump(ps);
  EXPECT_TRUE(has(ps, "steps[0].highlight[1]", "node Wq has legs 0..2")) << dump(ps);
  EXPECT_TRUE(has(ps, "steps[0].action.node", "unknown element \"nope\"")) << dump(ps);
  EXPECT_TRUE(has(ps, "steps[0].action.steps", "unknown field \"steps\" (known here: kind, prompt, node)")) << dump(ps);
  EXPECT_TRUE(has(ps, "steps[0].check.min", "must be ≥ 1")) << dump(ps);
  EXPECT_TRUE(has(ps, "steps[0].check.max", "must be ≥ min")) << dump(ps);
  EXPECT_TRUE(has(ps, "steps[0].check", "needs a design with a core C")) << dump(ps);
  // The design's own validation issue, under the step's path.
  bool designIssue = false;
  for (const auto& p : ps) designIssue = designIssue || p.field.rfind("steps[1].design.", 0) == 0;
  EXPECT_TRUE(designIssue) << dump(ps);
  EXPECT_TRUE(has(ps, "steps[1].action.steps", "must be in [1, 100000]")) << dump(ps);
  EXPECT_TRUE(has(ps, "steps[1].check.checks[0].checks[0].kind", "nests deeper than 2")) << dump(ps);
  EXPECT_TRUE(has(ps, "steps[2].action.variant", "unknown variant \"transformer\"; one of mhsa")) << dump(ps);
  EXPECT_TRUE(has(ps, "steps[2].check.tolerance", "must be in (0, 0.5]")) << dump(ps);
  // The message names the source and every problem.
  try {
    parseLesson(text, "mem.json");
  } catch (const LessonError& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.rfind("invalid lesson:", 0), 0u);
    EXPECT_NE(what.find("mem.json: steps[0].check.min: "), std::string::npos) << what;
    EXPECT_NE(what.find("mem.json: steps[2].check.tolerance: "), std::string::npos) << what;
  }
}

TEST(LessonProblems, DesignIssuesCarryTheStepPath) {
  // A full spec whose core does not fit its sizes: spec::validate's field under steps[0].design.
  const auto ps = problemsOf(head() + R"([{"title": "a", "text": "<p>x</p>",
    "design": {"format": "tensorscope.attention_spec", "version": 1, "variant": "thsa",
               "sizes": {"F": 16, "H": 2, "D": 2, "R": 6}, "core": {"preset": "mhsa"}},
    "action": {"kind": "read", "prompt": "Read."}}]})");
  bool found = false;
  for (const auto& p : ps) found = found || p.field.rfind("steps[0].design.", 0) == 0;
  EXPECT_TRUE(found) << dump(ps);
  // Unknown spec fields, wrong preset names, oversized designs, and a bare object.
  const auto ps2 = problemsOf(head() + R"([
    {"title": "a", "text": "<p>x</p>", "design": {"preset": "transformer"}, "action": {"kind": "read", "prompt": "R."}},
    {"title": "b", "text": "<p>x</p>", "design": {"preset": "thsa", "sizes": {"H": 64, "D": 64}}, "action": {"kind": "read", "prompt": "R."}},
    {"title": "c", "text": "<p>x</p>", "design": {"variant": "mhsa"}, "action": {"kind": "read", "prompt": "R."}},
    {"title": "d", "text": "<p>x</p>", "design": {"format": "tensorscope.attention_spec", "version": 1, "variant": "mhsa", "heads": 3},
     "action": {"kind": "read", "prompt": "R."}},
    {"title": "e", "text": "<p>x</p>", "design": {"preset": "mhsa", "sizes": {"W": 3}}, "action": {"kind": "read", "prompt": "R."}}]})");
  EXPECT_TRUE(has(ps2, "steps[0].design.preset", "unknown preset 'transformer'")) << dump(ps2);
  EXPECT_TRUE(has(ps2, "steps[1].design.sizes", "H·D = 4096; a lesson's design has H·D ≤ 512")) << dump(ps2);
  EXPECT_TRUE(has(ps2, "steps[2].design", "or {\"preset\": NAME")) << dump(ps2);
  EXPECT_TRUE(has(ps2, "steps[3].design.heads", "unknown field")) << dump(ps2);
  EXPECT_TRUE(has(ps2, "steps[4].design.sizes.W", "known here: F, H, D, R, P, c, seq_len")) << dump(ps2);
}

TEST(LessonProblems, TopLevelAndEnvelope) {
  EXPECT_TRUE(has(problemsOf("[1, 2]"), "(document)", "must be a JSON object"));
  EXPECT_TRUE(has(problemsOf("{\"format\": "), "(document)", "malformed JSON"));
  const auto wrong = problemsOf(R"({"format": "tensorscope.session", "version": 2})");
  EXPECT_TRUE(has(wrong, "format", "expected \"tensorscope.lesson\""));
  EXPECT_TRUE(has(wrong, "version", "unsupported version 2"));
  const auto missing = problemsOf(R"({"format": "tensorscope.lesson", "version": 1, "extra": 1})");
  EXPECT_TRUE(has(missing, "extra", "known here: format, version, id, title, summary, order, task, steps")) << dump(missing);
  for (const char* f : {"id", "title", "summary", "order", "steps"}) EXPECT_TRUE(has(missing, f, "missing")) << f;
  const auto bad = problemsOf(head("ok", -3) + "[]}");
  EXPECT_TRUE(has(bad, "order", "must be in [0, 10000]")) << dump(bad);
  EXPECT_TRUE(has(bad, "steps", "must be a list of 1 to 64 steps")) << dump(bad);
  const auto summary = problemsOf(R"({"format": "tensorscope.lesson", "version": 1, "id": "a_b", "title": "T",
    "summary": "no full stop", "order": 1, "steps": [{"title": "x", "text": "<p>x</p>", "action": {"kind": "read", "prompt": "r"}}]})");
  EXPECT_TRUE(has(summary, "summary", "one sentence")) << dump(summary);
}

TEST(LessonProblems, StepsBeforeAnyDesign) {
  const auto ps = problemsOf(head() + R"([{"title": "a", "text": "<p>x</p>", "highlight": ["Wq"],
    "action": {"kind": "edit_core", "prompt": "Paint."},
    "check": {"kind": "inspected", "node": "Wq"}},
   {"title": "b", "text": "<p>x</p>", "design": {"preset": "mhsa"},
    "action": {"kind": "choose_core_preset", "preset": "skip_left", "prompt": "Choose."},
    "check": {"kind": "plan_step_reached", "step": 99}}]})");
  EXPECT_TRUE(has(ps, "steps[0].highlight", "before any design")) << dump(ps);
  EXPECT_TRUE(has(ps, "steps[0].action", "edit_core needs a design with a core C")) << dump(ps);
  EXPECT_TRUE(has(ps, "steps[0].check.node", "no design is set")) << dump(ps);
  EXPECT_TRUE(has(ps, "steps[1].action", "this step's design has none")) << dump(ps);
  EXPECT_TRUE(has(ps, "steps[1].check.step", "must be in [0, 5] or \"end\"")) << dump(ps);
}

TEST(LessonProblems, PaintAndTextLimits) {
  const auto ps = problemsOf(head() + R"([{"title": "a", "text": "<li>x</li><p><p>y</p></p><b><ul><li>z</li></ul></b><p class=\"x\">w</p><br></br>&bogus; <i>open",
    "design": {"preset": "thsa", "sizes": {"F": 16, "H": 2, "D": 2}},
    "action": {"kind": "edit_core", "prompt": "Paint.", "paint": [{"rows": [0, 4], "cols": [1, 0], "value": 1}, {"rows": [0, 0], "cols": [0, 0]}]}}]})");
  EXPECT_TRUE(has(ps, "steps[0].text", "<li> at the top level")) << dump(ps);
  EXPECT_TRUE(has(ps, "steps[0].text", "<p> inside <p>")) << dump(ps);
  EXPECT_TRUE(has(ps, "steps[0].text", "inside <b>")) << dump(ps);
  EXPECT_TRUE(has(ps, "steps[0].text", "has attributes")) << dump(ps);
  EXPECT_TRUE(has(ps, "steps[0].text", "</br>")) << dump(ps);
  EXPECT_TRUE(has(ps, "steps[0].text", "starts no entity")) << dump(ps);
  EXPECT_TRUE(has(ps, "steps[0].text", "<i> is never closed")) << dump(ps);
  EXPECT_TRUE(has(ps, "steps[0].action.paint[0].rows", "R-1 = 3")) << dump(ps);
  EXPECT_TRUE(has(ps, "steps[0].action.paint[0].cols", "first ≤ last")) << dump(ps);
  EXPECT_TRUE(has(ps, "steps[0].action.paint[1].value", "missing")) << dump(ps);

  EXPECT_TRUE(richTextProblems("<p>softmax(Q·Kᵀ/√D) &amp; x &lt; y &#8730;</p><ol><li><p>a</p><ul><li>b</li></ul></li></ol>").empty());
  EXPECT_FALSE(richTextProblems(std::string(kMaxLessonTextBytes + 1, 'a')).empty());
  EXPECT_FALSE(richTextProblems("<p>a</b></p>").empty());
  EXPECT_FALSE(richTextProblems("a < b").empty());
  EXPECT_FALSE(richTextProblems("   ").empty());
  const std::string longPrompt(301, 'p');
  const auto pp = problemsOf(head() + R"([{"title": "a", "text": "<p>x</p>", "action": {"kind": "read", "prompt": ")" +
                             longPrompt + R"("}, "check": {"kind": "loss_below", "value": -1, "hint": "line\nbreak"}}]})");
  EXPECT_TRUE(has(pp, "steps[0].action.prompt", "at most 300")) << dump(pp);
  EXPECT_TRUE(has(pp, "steps[0].check.value", "must be > 0")) << dump(pp);
  EXPECT_TRUE(has(pp, "steps[0].check.hint", "line break")) << dump(pp);
}

TEST(LessonFiles, FileStemDirectoryOrderAndDuplicates) {
  const fs::path d = scratch("dir");
  const std::string body = R"([{"title": "a", "text": "<p>x</p>", "action": {"kind": "read", "prompt": "Read."}}]})";
  write(d / "beta.json", head("beta", 2) + body);
  write(d / "alpha.json", head("alpha", 5) + body);
  write(d / "gamma.json", head("gamma", 2) + body);  // same order as beta: refused
  write(d / "notes.txt", "not a lesson");
  try {
    readLessonDirectory(d.string());
    ADD_FAILURE() << "duplicate orders accepted";
  } catch (const LessonError& e) {
    ASSERT_EQ(e.problems().size(), 1u) << e.what();
    EXPECT_EQ(e.problems()[0].field, "order");
    EXPECT_NE(e.problems()[0].message.find("beta.json"), std::string::npos) << e.what();
  }
  write(d / "gamma.json", head("gamma", 1) + body);
  const auto lessons = readLessonDirectory(d.string());
  ASSERT_EQ(lessons.size(), 3u);
  EXPECT_EQ(lessons[0].id, "gamma");
  EXPECT_EQ(lessons[1].id, "beta");
  EXPECT_EQ(lessons[2].id, "alpha");

  // An id that is not the file's stem, and a duplicate id.
  write(d / "delta.json", head("alpha", 9) + body);
  try {
    readLessonDirectory(d.string());
    ADD_FAILURE() << "bad stem accepted";
  } catch (const LessonError& e) {
    ASSERT_EQ(e.problems().size(), 1u) << e.what();
    EXPECT_EQ(e.problems()[0].source, (d / "delta.json").string());
    EXPECT_NE(e.problems()[0].message.find("file is named \"delta.json\""), std::string::npos) << e.what();
  }
  fs::remove(d / "delta.json");
  // Two files cannot share an id: each id must equal its file stem (the duplicate-id check stays as a guard).

  // Oversized and missing files, a missing directory.
  write(d / "huge.json", std::string(kMaxLessonFileBytes + 1, ' '));
  try {
    readLessonFile((d / "huge.json").string());
    ADD_FAILURE();
  } catch (const LessonError& e) {
    EXPECT_EQ(e.problems().at(0).field, "(file)");
  }
  EXPECT_THROW(readLessonFile((d / "missing.json").string()), LessonError);
  EXPECT_THROW(readLessonDirectory((d / "missing").string()), LessonError);
  fs::remove_all(d);
}

TEST(LessonChecks, MetAndHints) {
  const Lesson l = parseLesson(head() + kSteps, "mem.json");
  LessonState s;
  const LessonCheck& inspected = *l.steps[0].check;
  EXPECT_FALSE(checkMet(inspected, s));
  EXPECT_EQ(unmetHint(inspected, s), "The node W^Q.");
  s.inspected = "Wq";
  EXPECT_TRUE(checkMet(inspected, s));
  EXPECT_EQ(unmetHint(inspected, s), "");

  const LessonCheck& plan = *l.steps[1].check;  // all: plan end, all: loss below 3.5
  s.plan_length = 6;
  s.plan_step = 4;
  EXPECT_FALSE(checkMet(plan, s));
  EXPECT_EQ(unmetHint(plan, s), "the contraction plan is stepped to its end");
  s.plan_step = 5;
  EXPECT_FALSE(checkMet(plan, s));
  s.last_eval_loss = 3.0;
  EXPECT_TRUE(checkMet(plan, s));

  const LessonCheck& rank = *l.steps[2].check;
  s.stable_rank = 2.7;
  EXPECT_FALSE(checkMet(rank, s));
  s.stable_rank = 2.0;
  EXPECT_TRUE(checkMet(rank, s));

  const LessonCheck& params = *l.steps[3].check;  // tp within 30% of mhsa at the same F, H, D
  s.design = l.steps[3].effective_design;
  EXPECT_TRUE(checkMet(params, s)) << "tp = 5/4 of mhsa";
  LessonCheck tight = params;
  tight.tolerance = 0.2;
  EXPECT_FALSE(checkMet(tight, s));

  const LessonCheck& all = *l.steps[4].check;
  EXPECT_FALSE(checkMet(all, s));
  EXPECT_EQ(unmetHint(all, s), "Do it all.");
  s.labs_done = {LessonLab::StableRank};
  s.trained_steps = 10;
  EXPECT_FALSE(checkMet(all, s)) << "core_preset_is custom: tp has no core";
  EXPECT_NE(describeCheck(all).find("every one of: the stable_rank lab has been run; H in [1, 4]"), std::string::npos)
      << describeCheck(all);

  // A plan step's hint counts as the Inspector does, from 1 ("Step 7 of 8"); the file counts from 0
  // (finding N6: the TP lesson said "step 6" for the Inspector's "Step 7").
  LessonCheck step;
  step.kind = LessonCheckKind::PlanStepReached;
  step.plan_step = 6;
  EXPECT_EQ(describeCheck(step), "the contraction plan is stepped to Step 7");
  LessonState stepping;
  stepping.plan_step = 6;  // the stepping view at the Inspector's "Step 7"
  stepping.plan_length = 8;
  EXPECT_TRUE(checkMet(step, stepping));
  stepping.plan_step = 5;
  EXPECT_FALSE(checkMet(step, stepping));

  // The reference design follows the heads-only rule (D = 1, R = H).
  const AttentionSpec ref = lessonReferenceDesign("heads_only", makeSpecPreset("mhsa"));
  EXPECT_EQ(ref.sizes.D, 1);
  EXPECT_EQ(ref.sizes.R, ref.sizes.H);
  EXPECT_THROW(lessonReferenceDesign("nonsense", makeSpecPreset("mhsa")), std::invalid_argument);
}

TEST(LessonChecks, PaintMakesDenseAndSetsCells) {
  AttentionSpec s = makeSpecPreset("core:mhsa");  // Kronecker: made dense first
  s.sizes = {16, 2, 2, 4, 2, 2, 8};
  s.core = makeCorePreset("mhsa", 2, 2);
  const AttentionSpec painted = applyCorePaint(s, {{0, 0, 3, 3, 7.0}});
  ASSERT_TRUE(painted.core);
  EXPECT_EQ(painted.core->structure, CoreStructure::Dense);
  EXPECT_EQ(painted.core->preset, "custom");
  std::vector<double> expect = materializeCore(*s.core, 2, 2, 4);
  expect[3] = 7.0;
  EXPECT_EQ(painted.core->dense_values, expect);
  EXPECT_EQ(painted.core->trainable_mask, coreTrainableEntries(*s.core, 2, 2, 4));
  EXPECT_THROW(applyCorePaint(s, {{0, 4, 0, 0, 1.0}}), std::invalid_argument);
  EXPECT_THROW(applyCorePaint(makeSpecPreset("mhsa"), {}), std::invalid_argument);
}

TEST(LessonShipped, EveryLessonReadsAndIsSatisfiableByAScriptedLearner) {
  const fs::path dir = lessonsDir();
  ASSERT_TRUE(fs::is_directory(dir)) << dir;
  std::vector<Lesson> lessons;
  try {
    lessons = readLessonDirectory(dir.string());
  } catch (const LessonError& e) {
    FAIL() << e.what();
  }
  ASSERT_GE(lessons.size(), 7u);
  std::set<std::string> ids;
  for (const auto& l : lessons) {
    SCOPED_TRACE(l.id);
    EXPECT_TRUE(ids.insert(l.id).second);
    EXPECT_GE(l.steps.size(), 3u);
    EXPECT_LE(l.steps.size(), 8u);
    EXPECT_EQ(parseLesson(lessonToJson(l), l.source), l) << "round trip";
    bool realCheck = false;
    // A scripted learner: starts each step from the step's design (or its own), does exactly the
    // action, and must then satisfy the check.
    LessonState state;
    int lastPlan = 0;
    for (size_t i = 0; i < l.steps.size(); ++i) {
      SCOPED_TRACE("step " + std::to_string(i));
      const LessonStep& st = l.steps[i];
      EXPECT_TRUE(richTextProblems(st.text).empty());
      if (st.design) {
        state.design = *st.design;
        state.inspected.clear();
        state.plan_step = -1;
        state.zeroed_rows.clear();  // a new design is a new run
      }
      if (state.design) {
        const TensorNetwork net = buildTensorNetwork(*state.design, st.effective_seq);
        lastPlan = static_cast<int>(net.plan.size());
        state.plan_length = lastPlan;
        for (const auto& h : st.highlight) {
          const auto known = lessonElementIds(*state.design, st.effective_seq);
          EXPECT_NE(std::find(known.begin(), known.end(), h), known.end()) << h;
        }
      }
      const LessonAction& a = st.action;
      switch (a.kind) {
        case LessonActionKind::Read: break;
        case LessonActionKind::EditCore:
          ASSERT_FALSE(a.paint.empty()) << "shipped edit_core steps say what to paint";
          state.design = applyCorePaint(*state.design, a.paint);
          break;
        case LessonActionKind::ChooseVariant: {
          Variant v;
          ASSERT_TRUE(parseVariant(a.variant, v));
          state.design->variant = v;
          if (!hasCore(v)) state.design->core.reset();
          break;
        }
        case LessonActionKind::ChooseCorePreset: {
          auto& d = *state.design;
          if (a.preset == "heads_only" || a.preset == "trainable_heads_only") d.sizes.D = 1;
          d.sizes.R = d.sizes.H * d.sizes.D;
          d.core = makeCorePreset(a.preset, d.sizes.H, d.sizes.D);
          break;
        }
        case LessonActionKind::Train:
          // The TP lesson's role clusters need 1500 steps of arithmetic (about half a minute).
          EXPECT_LE(a.steps, l.id == "tp_roles" ? 1500 : 300) << "shipped lessons train in seconds";
          state.trained_steps += a.steps;
          break;
        case LessonActionKind::Inspect: state.inspected = a.node; break;
        case LessonActionKind::StepPlan: state.plan_step = !a.to || *a.to == kPlanEnd ? lastPlan - 1 : *a.to; break;
        case LessonActionKind::OpenLab: break;
        case LessonActionKind::RunLab: state.labs_done.push_back(a.lab); break;
        case LessonActionKind::SetSlot: state.design = applyLessonSlot(*state.design, a.slot, a.value); break;
        case LessonActionKind::ZeroRow:
          // A fork of the trained run whose starting weights have that row at zero (the GUI test
          // reads them from the fork's file).
          state.zeroed_rows = {a.parameter + "[" + std::to_string(a.row) + "]"};
          state.trained_steps = 0;
          break;
      }
      if (state.design && state.design->core) {
        const auto& d = *state.design;
        state.stable_rank = stableRank(materializeCore(*d.core, d.sizes.H, d.sizes.D, d.sizes.R), d.sizes.R);
      } else {
        state.stable_rank.reset();
      }
      if (state.design) {
        EXPECT_LE(state.design->sizes.F, 64) << "designs small enough to train in seconds";
      }
      if (st.check) {
        if (a.kind != LessonActionKind::Read) realCheck = true;
        // A loss comes only from training: this learner does not train, so loss_below is left to
        // the GUI's scripted learner (TeachingLessons.*), which trains and reads the real loss.
        EXPECT_TRUE(checkMet(withoutLoss(*st.check), state)) << describeCheck(*st.check) << "; stable rank "
                                                 << state.stable_rank.value_or(-1);
      }
    }
    EXPECT_TRUE(realCheck) << "at least one step checks an action other than read";
  }
}

// Issue 36: the design-space actions and checks. set_slot sets a slot as the Design dock does,
// slot_is reads it, cost_ratio_in compares a cost with MHSA's at the same F, H, D from the cost
// model, zero_row / row_zeroed name a row of a talking-heads mixing.
const char* kDesignSpaceSteps = R"([
  {"title": "GQA", "text": "<p>x</p>", "design": {"preset": "mhsa", "sizes": {"F": 64, "H": 4, "D": 16}},
   "action": {"kind": "set_slot", "slot": "slots.kv_groups", "value": 2, "prompt": "Set K/V groups to 2."},
   "check": {"kind": "all", "checks": [{"kind": "slot_is", "slot": "slots.kv_groups", "value": 2},
     {"kind": "cost_ratio_in", "cost": "kv_cache", "min": 0.49, "max": 0.51, "context": 512}]}},
  {"title": "MLA", "text": "<p>x</p>", "design": {"preset": "mla", "sizes": {"F": 64, "H": 4, "D": 16}},
   "action": {"kind": "set_slot", "slot": "slots.latent.order", "value": "absorbed", "prompt": "Absorb."},
   "check": {"kind": "slot_is", "slot": "slots.latent.order", "value": "absorbed"}},
  {"title": "Talking heads", "text": "<p>x</p>", "design": {"preset": "talking_heads", "sizes": {"F": 32, "H": 4, "D": 8}},
   "action": {"kind": "zero_row", "parameter": "mix_post", "row": 3, "prompt": "Zero row 3 of C′."},
   "check": {"kind": "row_zeroed", "parameter": "mix_post", "row": 3}},
  {"title": "Diff", "text": "<p>x</p>", "design": {"preset": "diff", "sizes": {"F": 32, "H": 2, "D": 8}},
   "action": {"kind": "read", "prompt": "Read."},
   "check": {"kind": "slot_is", "slot": "slots.differential", "value": true}}
]})";

TEST(LessonDesignSpace, SlotsCostsAndRowsParseRoundTripAndCheck) {
  const Lesson l = parseLesson(head() + kDesignSpaceSteps, "mem.json");
  ASSERT_EQ(l.steps.size(), 4u);
  EXPECT_EQ(l.steps[0].action.kind, LessonActionKind::SetSlot);
  EXPECT_EQ(l.steps[0].action.slot, "slots.kv_groups");
  EXPECT_EQ(l.steps[0].action.value, "2");
  EXPECT_EQ(l.steps[0].check->checks.at(1).context, 512);
  EXPECT_EQ(l.steps[2].action.kind, LessonActionKind::ZeroRow);
  EXPECT_EQ(l.steps[2].action.row, 3);
  EXPECT_EQ(l.steps[3].check->slot_value, "true");
  const std::string once = lessonToJson(l);
  EXPECT_EQ(parseLesson(once, "mem.json"), l);
  EXPECT_EQ(lessonToJson(parseLesson(once, "mem.json")), once);

  // set_slot then slot_is and cost_ratio_in, against the cost model's own numbers.
  LessonState s;
  s.design = *l.steps[0].design;
  EXPECT_FALSE(checkMet(*l.steps[0].check, s));
  s.design = applyLessonSlot(*s.design, "slots.kv_groups", "2");
  EXPECT_EQ(s.design->slots.kv_groups, 2);
  EXPECT_TRUE(checkMet(*l.steps[0].check, s));
  AttentionSpec causal = *s.design, mhsa = *l.steps[0].design;
  causal.causal = mhsa.causal = true;
  const double decode = estimateDecodeCost(causal, 1024).flops / estimateDecodeCost(mhsa, 1024).flops;
  EXPECT_DOUBLE_EQ(*lessonCostRatio(*s.design, "decode_flops", 1024), decode);
  EXPECT_LT(decode, 1.0);
  EXPECT_DOUBLE_EQ(*lessonCostRatio(*s.design, "kv_cache", 7), 0.5) << "2·G·D of 2·H·D";
  EXPECT_DOUBLE_EQ(*lessonCostRatio(*s.design, "parameters", 1),
                   double(parameterCount(*s.design)) / double(parameterCount(mhsa)));
  EXPECT_DOUBLE_EQ(*lessonCostRatio(mhsa, "training_flops", 64), 1.0);

  // MLA: naive caches every head's key (D + r) and value (D), absorbed the latent and the rotary key.
  AttentionSpec mla = *l.steps[1].design;
  const auto& lat = mla.slots.latent;
  EXPECT_DOUBLE_EQ(*lessonCostRatio(mla, "kv_cache", 1024), 4.0 * (2 * 16 + lat.rope_dim) / (2.0 * 4 * 16));
  const auto showing = [](const AttentionSpec& d) {
    LessonState st;
    st.design = d;
    return st;
  };
  EXPECT_FALSE(checkMet(*l.steps[1].check, showing(mla)));
  mla = applyLessonSlot(mla, "slots.latent.order", "absorbed");
  EXPECT_TRUE(checkMet(*l.steps[1].check, showing(mla)));
  EXPECT_DOUBLE_EQ(*lessonCostRatio(mla, "kv_cache", 1024), double(lat.kv_rank + lat.rope_dim) / (2.0 * 4 * 16));
  EXPECT_EQ(lessonSlotValue(mla, "slots.latent.order"), "absorbed");
  EXPECT_EQ(lessonSlotValue(mla, "slots.gate"), "none");

  // No KV cache: linear THSA keeps a fixed state, so the ratio does not exist and the check fails.
  AttentionSpec linear = makeSpecPreset("thsa_linear");
  EXPECT_FALSE(lessonCostRatio(linear, "kv_cache", 64).has_value());
  EXPECT_THROW(lessonCostRatio(mhsa, "memory", 64), std::invalid_argument);

  // row_zeroed reads the state's rows.
  LessonState forked;
  forked.design = *l.steps[2].design;
  EXPECT_FALSE(checkMet(*l.steps[2].check, forked));
  forked.zeroed_rows = {"mix_post[2]"};
  EXPECT_FALSE(checkMet(*l.steps[2].check, forked));
  forked.zeroed_rows = {"mix_post[3]"};
  EXPECT_TRUE(checkMet(*l.steps[2].check, forked));
  EXPECT_NE(describeCheck(*l.steps[2].check).find("row 3 of mix_post"), std::string::npos);

  // applyLessonSlot refuses what the Design dock cannot set, with the reason.
  EXPECT_THROW(applyLessonSlot(mhsa, "slots.kv_groups", "3"), std::invalid_argument) << "3 does not divide H = 4";
  EXPECT_THROW(applyLessonSlot(mhsa, "slots.kv_groups", "two"), std::invalid_argument);
  EXPECT_THROW(applyLessonSlot(mhsa, "slots.post_mix", "yes"), std::invalid_argument);
  EXPECT_THROW(applyLessonSlot(mhsa, "slots.colour", "1"), std::invalid_argument);
  EXPECT_THROW(applyLessonSlot(*l.steps[3].design, "slots.post_mix", "true"), std::invalid_argument)
      << "differential attention takes no talking heads";
}

TEST(LessonDesignSpace, ProblemsNameTheField) {
  const auto ps = problemsOf(head() + R"([
    {"title": "a", "text": "x", "design": {"preset": "mhsa", "sizes": {"F": 32, "H": 4, "D": 8}},
     "action": {"kind": "set_slot", "slot": "slots.kv_groups", "value": 3, "prompt": "p"},
     "check": {"kind": "cost_ratio_in", "cost": "memory", "min": 0, "max": 1}},
    {"title": "b", "text": "x",
     "action": {"kind": "set_slot", "slot": "slots.colour", "value": [1], "prompt": "p"},
     "check": {"kind": "row_zeroed", "parameter": "mix_post", "row": 0}},
    {"title": "c", "text": "x", "design": {"preset": "talking_heads", "sizes": {"F": 32, "H": 4, "D": 8}},
     "action": {"kind": "zero_row", "parameter": "mix_post", "row": 4, "prompt": "p"},
     "check": {"kind": "slot_is", "slot": "slots.latent.order", "value": "sideways"}},
    {"title": "d", "text": "x",
     "action": {"kind": "zero_row", "parameter": "wq", "row": 0, "prompt": "p"},
     "check": {"kind": "cost_ratio_in", "cost": "kv_cache", "min": 2, "max": 1, "context": 0}}
  ]})");
  EXPECT_TRUE(has(ps, "steps[0].action.value", "must divide H=4")) << dump(ps);
  EXPECT_TRUE(has(ps, "steps[0].check.cost", "unknown cost")) << dump(ps);
  EXPECT_TRUE(has(ps, "steps[0].check.min", "must be > 0")) << dump(ps);
  EXPECT_TRUE(has(ps, "steps[1].action.slot", "unknown slot")) << dump(ps);
  EXPECT_TRUE(has(ps, "steps[1].action.value", "must be a whole number")) << dump(ps);
  EXPECT_TRUE(has(ps, "steps[1].check.parameter", "has no mix_post")) << dump(ps);
  EXPECT_TRUE(has(ps, "steps[2].action.row", "must be < H = 4")) << dump(ps);
  EXPECT_TRUE(has(ps, "steps[2].check.value", "naive or absorbed")) << dump(ps);
  EXPECT_TRUE(has(ps, "steps[3].action.parameter", "unknown parameter")) << dump(ps);
  EXPECT_TRUE(has(ps, "steps[3].check.max", "must be ≥ min")) << dump(ps);
  EXPECT_TRUE(has(ps, "steps[3].check.context", "")) << dump(ps);
}
