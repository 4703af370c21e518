#pragma once
/// The rich text of a lesson step: a small HTML subset, checked before anything shows it.

#include <string>
#include <string_view>
#include <vector>

namespace tensorscope::spec {

/// Problems of a step's rich text (empty when valid): unknown or unclosed tags, attributes,
/// bad nesting (li only in ul/ol; ul/ol hold only li; p, ul and ol not inside p, li-less
/// inline tags or code), bad entities, control characters, over kMaxLessonTextBytes.
std::vector<std::string> richTextProblems(std::string_view text);

}  // namespace tensorscope::spec
