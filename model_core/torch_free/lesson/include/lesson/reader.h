#pragma once
/// Reading lessons: one document, one file, a directory of lesson files, and the element ids of a
/// design's network that a lesson may name (the rules: lesson/lesson.h, docs/lessons.md).

#include <string>
#include <string_view>
#include <vector>

#include "lesson/types.h"
#include "spec/attention_spec.h"

namespace tensorscope::spec {

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

/// Every element id of a network a lesson may name: node ids, box ids, then "leg:<node>:<i>" for
/// every leg of every node, in that order (buildTensorNetwork(design, seq); throws
/// std::invalid_argument for an invalid design).
std::vector<std::string> lessonElementIds(const AttentionSpec& design, int seq);

}  // namespace tensorscope::spec
