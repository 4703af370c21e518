#pragma once
/// Graphviz access for diagram layout. Graphviz is not thread-safe: every call into it goes
/// through GraphvizEngine, which serialises them with one process-wide lock.

#include <memory>
#include <string>
#include <vector>

namespace tensorscope::diagram_view {

/// A point in Graphviz coordinates: points (1/72 inch), origin bottom-left.
struct GvPoint {
  double x = 0, y = 0;
};

/// Position of a laid-out node, in points, origin bottom-left (Graphviz's convention).
struct LaidOutNode {
  std::string name;
  double x = 0, y = 0, width = 0, height = 0;
};

/// A laid-out edge: its cubic Bézier spline (start point, then three points per segment) and
/// the centre and size of its label, if it has one. `id` is the edge's `id` attribute (empty if unset).
struct LaidOutEdge {
  std::string id;
  std::string tail, head;
  std::vector<GvPoint> spline;
  bool has_label = false;
  GvPoint label;
  double label_width = 0, label_height = 0;
};

/// A laid-out cluster (subgraph named cluster*): its name, bounding box and label centre.
struct LaidOutCluster {
  std::string name;
  GvPoint lower_left, upper_right;
  bool has_label = false;
  GvPoint label;
};

struct Layout {
  double width = 0, height = 0;
  std::vector<LaidOutNode> nodes;
  std::vector<LaidOutEdge> edges;
  std::vector<LaidOutCluster> clusters;
};

class GraphvizEngine {
 public:
  /// The Graphviz library version in use, e.g. "2.42.2".
  static std::string version();
  /// Lays out a DOT graph with `engine` ("dot", "neato", ...). Throws std::runtime_error with
  /// Graphviz's reason for malformed input or an unknown engine. Deterministic: the same text
  /// gives the same layout.
  static Layout layout(const std::string& dot, const std::string& engine = "dot");
};

}  // namespace tensorscope::diagram_view
