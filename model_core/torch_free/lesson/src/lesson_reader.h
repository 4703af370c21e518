#pragma once
// The lesson reader: one FieldReader collects every problem of a document with its JSON path; the
// document, its steps, their designs, actions and checks are read by the member functions below,
// defined by topic in reader.cpp (document and steps), reader_fields.cpp (typed fields),
// reader_design.cpp (a step's design), reader_action.cpp and reader_check.cpp.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lesson/types.h"
#include "lesson_detail.h"
#include "spec/json_reader.h"

namespace tensorscope::spec::lesson_detail {

class LessonReader {
 public:
  /// The lesson in `text`; `stem` (when given) must equal its id. Throws LessonError.
  Lesson lesson(std::string_view text, const std::string& source, const std::string* stem);

 private:
  void fail(const std::string& field, const std::string& message) { r_.fail(field, message); }
  [[noreturn]] void raise(const std::string& source) const;

  // The document and its steps (reader.cpp).
  void header(const json& j);
  void step(const json& j, const std::string& field, LessonStep& s, const LessonStep* previous, bool& previousUsable,
            Elements& elements);
  void stepDesign(const json& j, const std::string& prefix, LessonStep& s, const LessonStep* previous,
                  bool& previousUsable, Elements& elements);
  void highlights(const json& h, const std::string& prefix, LessonStep& s, const Elements& elements);

  // Typed fields (reader_fields.cpp).
  bool requireString(const json& obj, const char* key, const std::string& prefix, std::string& out,
                     const std::string& what);
  /// A plain-text field: no control characters (no line breaks), 1..maxChars code points.
  void plainText(const std::string& field, const std::string& s, size_t maxChars, bool required = true);
  bool finiteNumber(const json& obj, const char* key, const std::string& prefix, double& out, bool required);
  bool wholeIn(const json& obj, const char* key, const std::string& prefix, std::int64_t lo, std::int64_t hi,
               std::int64_t& out, bool required);
  std::optional<LessonLab> lab(const json& obj, const std::string& prefix);
  /// An element id of the step's network (highlight, inspect, inspected).
  void element(const std::string& field, const std::string& id, const Elements& e, bool hasDesign);
  /// A plan step: a whole number < the plan's length or "end".
  std::optional<int> planStep(const json& obj, const char* key, const std::string& prefix, const Elements& e,
                              bool hasDesign);
  void needsCore(const std::string& field, const std::string& what, const Elements& e, bool hasDesign);

  // A step's design (reader_design.cpp).
  std::optional<AttentionSpec> design(const json& j, const std::string& prefix, LessonStep& step);
  bool designTooLarge(const json& j, const std::string& field);
  std::optional<AttentionSpec> presetDesign(const json& j, const std::string& field, LessonStep& step);
  std::optional<AttentionSpec> fullDesign(const json& j, const std::string& field);

  // Actions (reader_action.cpp).
  void action(const json& j, const std::string& field, LessonAction& a, const Elements& e, bool hasDesign);
  void paint(const json& j, const std::string& prefix, LessonAction& a, const Elements& e);
  void paintRectangle(const json& p, const std::string& pf, LessonAction& a, const Elements& e);
  bool slotAndValue(const json& j, const std::string& prefix, std::string& slot, std::string& value);
  void mixRow(const json& j, const std::string& field, const Elements& e, bool hasDesign, std::string& parameter,
              int& row, const char* what);

  // Checks (reader_check.cpp).
  std::optional<LessonCheck> check(const json& j, const std::string& field, int level, const Elements& e,
                                   bool hasDesign);
  bool checkFields(const json& j, const std::string& field, int level, const Elements& e, bool hasDesign,
                   LessonCheck& c, std::vector<std::string>& known);
  void stableRankIn(const json& j, const std::string& field, const Elements& e, bool hasDesign, LessonCheck& c);
  void headsIn(const json& j, const std::string& prefix, LessonCheck& c);
  void parametersMatch(const json& j, const std::string& prefix, LessonCheck& c);
  void costRatioIn(const json& j, const std::string& prefix, LessonCheck& c);
  bool allOf(const json& j, const std::string& prefix, int level, const Elements& e, bool hasDesign, LessonCheck& c);

  FieldReader r_;
};

}  // namespace tensorscope::spec::lesson_detail
