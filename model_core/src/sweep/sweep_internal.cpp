// Helpers shared by the sweep component's files (sweep/sweep_internal.h).
#include "model_core/sweep.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>

#include "sweep/sweep_internal.h"

namespace tensorscope::model_core {

using nlohmann::json;
namespace fs = std::filesystem;
using namespace sweep_internal;

namespace sweep_internal {

std::string shortNumber(double v) {
  std::ostringstream s;
  s.precision(6);
  s << v;
  return s.str();
}

/// Why a name or label cannot be printed as it is, or empty: control characters (C0, DEL, C1) would
std::string controlCharacterProblem(const std::string& s) {
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    unsigned code = 0;
    if (c < 0x20 || c == 0x7f) code = c;
    else if (c == 0xc2 && i + 1 < s.size() && static_cast<unsigned char>(s[i + 1]) >= 0x80 &&
             static_cast<unsigned char>(s[i + 1]) <= 0x9f)
      code = static_cast<unsigned char>(s[i + 1]);
    else continue;
    char hex[8];
    std::snprintf(hex, sizeof hex, "%04X", code);
    return std::string("holds a control character (U+") + hex +
           "); names and labels are printed on terminals and into reports and figures";
  }
  return "";
}

std::string firstEvalSplit(const RunConfig& c) { return evaluationSplitNames(c).front(); }

std::optional<double> metricOf(const MetricsRecord& rec, const std::string& name) {
  const auto value = rec.finite(name);
  if (!value) return std::nullopt;
  const double v = *value;
  if (name == "tokens_per_second") return v >= 0 && v <= 1e12 ? std::optional<double>(v) : std::nullopt;
  if (name == "elapsed_seconds") return v >= 0 && v <= 1e9 ? std::optional<double>(v) : std::nullopt;
  return plausibleMetric(name, v) ? std::optional<double>(v) : std::nullopt;
}

}  // namespace sweep_internal

}  // namespace tensorscope::model_core
