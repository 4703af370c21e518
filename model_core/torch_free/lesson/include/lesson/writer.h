#pragma once
/// Writing lessons: a Lesson as a "tensorscope.lesson" v1 document.

#include <string>

#include "lesson/types.h"

namespace tensorscope::spec {

/// The lesson as a "tensorscope.lesson" v1 document: parseLesson(lessonToJson(l), s) == l for
/// every parsed lesson l (source aside). Designs in preset form are written in preset form.
std::string lessonToJson(const Lesson& lesson, int indent = 2);

}  // namespace tensorscope::spec
