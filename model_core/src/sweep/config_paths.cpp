// Dotted paths into a run config's JSON ("model.attention[1].core"): setConfigPath.
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

std::vector<PathStep> parsePath(const std::string& path) {
  if (path.empty()) throw std::invalid_argument("an empty path");
  std::vector<PathStep> steps;
  std::size_t i = 0;
  while (i <= path.size()) {
    const auto dot = path.find('.', i);
    std::string part = path.substr(i, dot == std::string::npos ? std::string::npos : dot - i);
    PathStep step;
    const auto br = part.find('[');
    if (br != std::string::npos) {
      if (part.back() != ']' || br + 2 > part.size() - 1)
        throw std::invalid_argument("'" + path + "': an index is written [i]");
      const std::string digits = part.substr(br + 1, part.size() - br - 2);
      if (digits.empty() || digits.size() > 4 || !std::all_of(digits.begin(), digits.end(), ::isdigit))
        throw std::invalid_argument("'" + path + "': the index must be a number below 10000");
      step.index = std::stoul(digits);
      part = part.substr(0, br);
    }
    if (part.empty()) throw std::invalid_argument("'" + path + "' has an empty field name");
    step.key = part;
    steps.push_back(step);
    if (dot == std::string::npos) break;
    i = dot + 1;
  }
  return steps;
}

}  // namespace sweep_internal

namespace {

void setSteps(json& node, const std::vector<PathStep>& steps, std::size_t at, const json& value, const std::string& path) {
  if (!node.is_object()) throw std::invalid_argument("'" + path + "': '" + steps[at - (at > 0)].key + "' is not an object");
  const auto& step = steps[at];
  const bool last = at + 1 == steps.size();
  if (last && !step.index) {
    if (value.is_null()) node.erase(step.key);
    else node[step.key] = value;
    return;
  }
  if (!node.contains(step.key)) {
    if (step.index) throw std::invalid_argument("'" + path + "': there is no '" + step.key + "' to index");
    node[step.key] = json::object();
  }
  json& child = node[step.key];
  if (step.index) {
    if (!child.is_array() || *step.index >= child.size())
      throw std::invalid_argument("'" + path + "': '" + step.key + "' has no element " + std::to_string(*step.index));
    if (last) {
      child[*step.index] = value;
      return;
    }
    setSteps(child[*step.index], steps, at + 1, value, path);
  } else if (child.is_array()) {  // every element (e.g. each layer's attention spec)
    for (auto& e : child) setSteps(e, steps, at + 1, value, path);
  } else {
    setSteps(child, steps, at + 1, value, path);
  }
}

}  // namespace

void setConfigPath(json& config, const std::string& path, const json& value) { setSteps(config, parsePath(path), 0, value, path); }

}  // namespace tensorscope::model_core
