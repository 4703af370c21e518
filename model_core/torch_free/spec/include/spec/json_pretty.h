#pragma once
// Pretty-printing of the torch-free JSON writers (spec files here, lessons in the lesson library):
// like dump(indent), but arrays of numbers (matrix rows, vectors, ranges) stay on one line, so a
// spec with an R x R core stays readable and diffable. For nlohmann::json and nlohmann::ordered_json
// alike.

#include <cstddef>
#include <string>

namespace tensorscope::spec::detail {

template <typename Json>
bool isNumberRow(const Json& j) {
  if (!j.is_array() || j.empty()) return false;
  for (const auto& x : j)
    if (!x.is_number()) return false;
  return true;
}

template <typename Json>
void prettyPrint(const Json& j, int indent, int depth, std::string& out) {
  const std::string pad(static_cast<std::size_t>(indent) * (depth + 1), ' ');
  const std::string close(static_cast<std::size_t>(indent) * depth, ' ');
  if (j.is_object() && !j.empty()) {
    out += "{\n";
    std::size_t i = 0;
    for (auto it = j.begin(); it != j.end(); ++it, ++i) {
      out += pad + Json(it.key()).dump() + ": ";
      prettyPrint(it.value(), indent, depth + 1, out);
      out += (i + 1 < j.size() ? ",\n" : "\n");
    }
    out += close + "}";
  } else if (j.is_array() && !j.empty() && !isNumberRow(j)) {
    out += "[\n";
    for (std::size_t i = 0; i < j.size(); ++i) {
      out += pad;
      prettyPrint(j[i], indent, depth + 1, out);
      out += (i + 1 < j.size() ? ",\n" : "\n");
    }
    out += close + "]";
  } else if (isNumberRow(j)) {
    out += "[";
    for (std::size_t i = 0; i < j.size(); ++i) out += (i ? ", " : "") + j[i].dump();
    out += "]";
  } else {
    out += j.dump();
  }
}

}  // namespace tensorscope::spec::detail
