#pragma once
/// Graphviz access for diagram layout. Graphviz is not thread-safe: every call into it goes
/// through GraphvizEngine, which serialises them with one process-wide lock.

#include <memory>
#include <string>
#include <vector>

namespace tensorscope::diagram_view {

/// Position of a laid-out node, in points, origin bottom-left (Graphviz's convention).
struct LaidOutNode {
  std::string name;
  double x = 0, y = 0, width = 0, height = 0;
};

struct Layout {
  double width = 0, height = 0;
  std::vector<LaidOutNode> nodes;
};

class GraphvizEngine {
 public:
  /// The Graphviz library version in use, e.g. "2.42.2".
  static std::string version();
  /// Lays out a DOT graph with `engine` ("dot", "neato", ...). Throws std::runtime_error with
  /// Graphviz's reason for malformed input or an unknown engine.
  static Layout layout(const std::string& dot, const std::string& engine = "dot");
};

}  // namespace tensorscope::diagram_view
