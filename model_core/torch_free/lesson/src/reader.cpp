// Lessons: "tensorscope.lesson" version 1 (docs/lessons.md), read with the bounded JSON parser and
// the shared FieldReader, every problem at once with its JSON path. The document and its steps
// here; a lesson file and a directory of them at the end.
#include <algorithm>
#include <filesystem>
#include <map>

#include "files/read_file.h"
#include "lesson/reader.h"
#include "lesson/rich_text.h"
#include "lesson_reader.h"

namespace tensorscope::spec {
namespace lesson_detail {

Lesson LessonReader::lesson(std::string_view text, const std::string& source, const std::string* stem) {
  Lesson l;
  l.source = source;
  json j;
  try {
    j = parseUntrustedJson(text);
  } catch (const JsonError& e) {
    throw LessonError({{source, "(document)", std::string("malformed JSON: ") + e.what()}});
  }
  if (!j.is_object()) throw LessonError({{source, "(document)", "a lesson must be a JSON object; got " + kindName(j)}});
  header(j);
  if (!r_.empty()) raise(source);

  r_.rejectUnknown(j, "", {"format", "version", "id", "title", "summary", "order", "task", "steps"});
  if (requireString(j, "id", "", l.id, "snake_case, the file name without .json")) {
    if (!isSnakeCase(l.id) || l.id.size() > kMaxLessonIdChars)
      fail("id", "must be snake_case ([a-z][a-z0-9_]*, no double or trailing '_'), at most " +
                     std::to_string(kMaxLessonIdChars) + " characters; got " + preview(l.id));
    else if (stem && *stem != l.id)
      fail("id", "is " + preview(l.id) + " but the file is named " + preview(*stem + ".json") +
                     "; a lesson's id is its file name without .json");
  }
  if (requireString(j, "title", "", l.title, "plain text")) plainText("title", l.title, kMaxLessonTitleChars);
  if (requireString(j, "summary", "", l.summary, "one sentence")) {
    plainText("summary", l.summary, kMaxLessonSummaryChars);
    const char last = l.summary.empty() ? 0 : l.summary.back();
    if (last != '.' && last != '?' && last != '!') fail("summary", "must be one sentence ending with '.', '?' or '!'");
  }
  std::int64_t order = 0;
  if (wholeIn(j, "order", "", 0, kMaxLessonOrder, order, true)) l.order = static_cast<int>(order);
  if (j.contains("task") && requireString(j, "task", "", l.task, "a task name")) {
    const auto& names = lessonTaskNames();
    if (std::find(names.begin(), names.end(), l.task) == names.end()) {
      std::string known;
      for (const auto& n : names) known += (known.empty() ? "" : ", ") + n;
      fail("task", "unknown task " + preview(l.task) + "; known: " + known);
      l.task.clear();
    }
  }
  if (!j.contains("steps")) {
    fail("steps", "missing; a list of 1 to " + std::to_string(kMaxLessonSteps) + " steps");
  } else if (const json& steps = j["steps"];
             !steps.is_array() || steps.empty() || steps.size() > static_cast<size_t>(kMaxLessonSteps)) {
    fail("steps", "must be a list of 1 to " + std::to_string(kMaxLessonSteps) + " steps; got " +
                      (steps.is_array() ? std::to_string(steps.size()) + " steps" : kindName(steps)));
  } else {
    bool usable = true;
    Elements elements;
    l.steps.resize(steps.size());
    for (size_t i = 0; i < steps.size(); ++i)
      step(steps[i], "steps[" + std::to_string(i) + "]", l.steps[i], i ? &l.steps[i - 1] : nullptr, usable, elements);
  }
  if (!r_.empty()) raise(source);
  return l;
}

/// "format" and "version": anything but "tensorscope.lesson" v1 is refused before the rest is read.
void LessonReader::header(const json& j) {
  std::string format;
  if (!j.contains("format")) fail("format", std::string("missing; expected \"") + kLessonFormat + "\"");
  else if (r_.read(j, "format", "", format) && format != kLessonFormat)
    fail("format", "is " + preview(format) + "; expected \"" + kLessonFormat + "\"");
  int version = -1;
  if (!j.contains("version")) fail("version", "missing; this Tensorscope reads version " + std::to_string(kLessonVersion));
  else if (r_.read(j, "version", "", version) && version != kLessonVersion)
    fail("version", "unsupported version " + std::to_string(version) + "; this Tensorscope reads version " +
                        std::to_string(kLessonVersion));
}

void LessonReader::raise(const std::string& source) const {
  std::vector<LessonProblem> problems;
  for (const auto& p : r_.problems()) problems.push_back({source, p.field, p.message});
  throw LessonError(std::move(problems));
}

void LessonReader::step(const json& j, const std::string& field, LessonStep& s, const LessonStep* previous,
                        bool& previousUsable, Elements& elements) {
  const std::string prefix = field + ".";
  if (previous) {
    s.effective_design = previous->effective_design;
    s.has_design = previous->has_design;
    s.effective_seq = previous->effective_seq;
  }
  if (!j.is_object()) {
    fail(field, "must be an object with title, text and action; got " + kindName(j));
    return;
  }
  r_.rejectUnknown(j, prefix, {"title", "text", "design", "seq", "highlight", "action", "check"});
  if (requireString(j, "title", prefix, s.title, "plain text")) plainText(prefix + "title", s.title, kMaxLessonTitleChars);
  if (requireString(j, "text", prefix, s.text, "rich text (" + std::string(kTagList) + ")"))
    for (const auto& p : richTextProblems(s.text)) fail(prefix + "text", p);

  stepDesign(j, prefix, s, previous, previousUsable, elements);
  if (j.contains("highlight")) highlights(j["highlight"], prefix, s, elements);
  if (!j.contains("action")) fail(prefix + "action", "missing; {\"kind\": \"read\", \"prompt\": \"…\"} at least");
  else action(j["action"], prefix + "action", s.action, elements, s.has_design);
  if (j.contains("check")) s.check = check(j["check"], prefix + "check", 1, elements, s.has_design);
}

/// The step's design and seq, its effective design and seq, and the elements of its network (built
/// again only when this step sets a design or seq, or is the first).
void LessonReader::stepDesign(const json& j, const std::string& prefix, LessonStep& s, const LessonStep* previous,
                              bool& previousUsable, Elements& elements) {
  bool usable = previousUsable;
  bool changed = false;
  if (j.contains("design")) {
    s.design = design(j["design"], prefix, s);
    s.has_design = true;
    usable = s.design.has_value();
    if (usable) s.effective_design = *s.design;
    changed = true;
  }
  std::int64_t seq = 0;
  if (wholeIn(j, "seq", prefix, 1, kMaxLessonSeq, seq, false)) {
    s.seq = static_cast<int>(seq);
    s.effective_seq = s.seq.value();
    changed = true;
  }
  if (changed || !previous) {
    elements = Elements{};
    if (s.has_design && usable) {
      try {
        elements = elementsOf(buildTensorNetwork(s.effective_design, s.effective_seq), s.effective_design);
      } catch (const std::exception& e) {
        fail(prefix + "design", std::string("cannot build its tensor network: ") + e.what());
      }
    }
  }
  previousUsable = usable;
}

void LessonReader::highlights(const json& h, const std::string& prefix, LessonStep& s, const Elements& elements) {
  if (!h.is_array() || h.size() > static_cast<size_t>(kMaxHighlights)) {
    fail(prefix + "highlight", "must be a list of at most " + std::to_string(kMaxHighlights) + " element ids; got " +
                                   (h.is_array() ? std::to_string(h.size()) + " ids" : kindName(h)));
    return;
  }
  if (!h.empty() && !s.has_design) {
    fail(prefix + "highlight", "a step before any design cannot highlight; set \"design\" here or in an earlier step");
    return;
  }
  for (size_t i = 0; i < h.size(); ++i) {
    const std::string hf = prefix + "highlight[" + std::to_string(i) + "]";
    if (!h[i].is_string()) {
      fail(hf, "must be an element id (a string); got " + kindName(h[i]));
      continue;
    }
    const std::string id = h[i].get<std::string>();
    if (std::find(s.highlight.begin(), s.highlight.end(), id) != s.highlight.end()) {
      fail(hf, preview(id) + " is listed twice");
      continue;
    }
    element(hf, id, elements, s.has_design);
    s.highlight.push_back(id);
  }
}

}  // namespace lesson_detail

Lesson parseLesson(std::string_view text, const std::string& source) {
  lesson_detail::LessonReader reader;
  return reader.lesson(text, source, nullptr);
}

Lesson readLessonFile(const std::string& path) {
  std::string text;
  try {
    text = files::readBoundedFile(path, kMaxLessonFileBytes);
  } catch (const std::runtime_error& e) {
    throw LessonError({{path, "(file)", e.what()}});
  }
  const std::string stem = std::filesystem::path(path).stem().string();
  lesson_detail::LessonReader reader;
  return reader.lesson(text, path, &stem);
}

std::vector<Lesson> readLessonDirectory(const std::string& dir) {
  namespace fs = std::filesystem;
  std::vector<LessonProblem> problems;
  std::vector<std::string> paths;
  std::error_code ec;
  fs::directory_iterator it(dir, ec);
  if (ec) throw LessonError({{dir, "(file)", "cannot read the lesson directory: " + ec.message()}});
  for (; it != fs::directory_iterator(); it.increment(ec)) {
    if (ec) throw LessonError({{dir, "(file)", "cannot read the lesson directory: " + ec.message()}});
    const fs::path p = it->path();
    if (p.extension() != ".json") continue;
    std::error_code typeError;
    if (!fs::is_regular_file(p, typeError)) continue;
    paths.push_back(p.string());
    if (paths.size() > static_cast<size_t>(kMaxLessonFiles))
      throw LessonError({{dir, "(file)", "holds more than " + std::to_string(kMaxLessonFiles) + " lesson files"}});
  }
  std::sort(paths.begin(), paths.end());
  std::vector<Lesson> lessons;
  for (const auto& p : paths) {
    try {
      lessons.push_back(readLessonFile(p));
    } catch (const LessonError& e) {
      problems.insert(problems.end(), e.problems().begin(), e.problems().end());
    }
  }
  std::map<std::string, std::string> ids;
  std::map<int, std::string> orders;
  for (const auto& l : lessons) {
    if (const auto [at, fresh] = ids.emplace(l.id, l.source); !fresh)
      problems.push_back({l.source, "id", "lesson id " + lesson_detail::preview(l.id) + " is also the id of " + at->second});
    if (const auto [at, fresh] = orders.emplace(l.order, l.source); !fresh)
      problems.push_back({l.source, "order", "order " + std::to_string(l.order) + " is also the order of " + at->second});
  }
  if (!problems.empty()) throw LessonError(std::move(problems));
  std::stable_sort(lessons.begin(), lessons.end(), [](const Lesson& a, const Lesson& b) {
    return a.order != b.order ? a.order < b.order : a.id < b.id;
  });
  return lessons;
}

}  // namespace tensorscope::spec
