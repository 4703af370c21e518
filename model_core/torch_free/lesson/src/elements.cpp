// The element ids of a design's network that a lesson may name (highlight, inspect, inspected).
#include <algorithm>

#include "lesson/reader.h"
#include "lesson_detail.h"

namespace tensorscope::spec {
namespace lesson_detail {

Elements elementsOf(const TensorNetwork& net, const AttentionSpec& design) {
  Elements e;
  e.usable = true;
  e.has_core = hasCore(design.variant) && design.core.has_value();
  e.R = design.sizes.R;
  e.plan_length = static_cast<int>(net.plan.size());
  e.design = design;
  for (const auto& n : net.nodes) {
    e.ids.push_back(n.id);
    e.legs[n.id] = static_cast<int>(n.legs.size());
  }
  for (const auto& b : net.boxes)
    if (std::find(e.ids.begin(), e.ids.end(), b.id) == e.ids.end()) e.ids.push_back(b.id);
  return e;
}

std::string elementProblem(const std::string& id, const Elements& e) {
  if (std::find(e.ids.begin(), e.ids.end(), id) != e.ids.end()) return "";
  if (id.rfind("leg:", 0) == 0) {
    const auto colon = id.rfind(':');
    const std::string node = colon > 3 ? id.substr(4, colon - 4) : "";
    const std::string pos = id.substr(colon + 1);
    const auto it = e.legs.find(node);
    if (colon <= 3 || it == e.legs.end())
      return "leg " + preview(id) + " names no node (write leg:<node>:<position>; nodes here: " +
             joined(std::vector<std::string>(e.ids.begin(), e.ids.begin() + static_cast<std::ptrdiff_t>(e.legs.size()))) +
             ")";
    const bool digits = !pos.empty() && pos.size() <= 3 && pos.find_first_not_of("0123456789") == std::string::npos;
    if (!digits || std::stoi(pos) >= it->second)
      return "leg " + preview(id) + ": node " + node + " has legs 0.." + std::to_string(it->second - 1);
    return "";
  }
  return "unknown element " + preview(id) + " (known here: " + joined(e.ids) + "; a leg: leg:<node>:<position>)";
}

}  // namespace lesson_detail

std::vector<std::string> lessonElementIds(const AttentionSpec& design, int seq) {
  const TensorNetwork net = buildTensorNetwork(design, seq);
  const lesson_detail::Elements e = lesson_detail::elementsOf(net, design);
  std::vector<std::string> out = e.ids;
  for (const auto& n : net.nodes)
    for (size_t i = 0; i < n.legs.size(); ++i) out.push_back("leg:" + n.id + ":" + std::to_string(i));
  return out;
}

}  // namespace tensorscope::spec
