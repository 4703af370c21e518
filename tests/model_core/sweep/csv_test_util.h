// The shape of a csv report: how many fields each line has (quoted fields may hold commas).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace tensorscope::test {

/// The number of fields of each line of `csv` (RFC 4180 quoting: "" inside quotes is a quote).
inline std::vector<std::size_t> csvFieldCounts(const std::string& csv) {
  std::vector<std::size_t> counts;
  std::size_t fields = 1;
  bool quoted = false;
  for (const char ch : csv) {
    if (ch == '"') quoted = !quoted;
    else if (ch == ',' && !quoted) ++fields;
    else if (ch == '\n' && !quoted) counts.push_back(fields), fields = 1;
  }
  return counts;
}

}  // namespace tensorscope::test
