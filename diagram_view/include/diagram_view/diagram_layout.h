#pragma once
/// From a TensorNetwork to positions: the network becomes a Graphviz graph (tensors as nodes,
/// batch-multiplication hyperedges as point nodes, softmax boxes as clusters, dangling legs as
/// invisible end nodes), `dot` lays it out, and the result is returned in scene coordinates
/// (points, y pointing down). Layouts are cached by the graph's text, so the same network drawn
/// with the same options is laid out once.

#include <QPainterPath>
#include <QPointF>
#include <QRectF>
#include <QSizeF>
#include <QString>
#include <cstdint>
#include <string>
#include <vector>

#include "diagram_view/diagram_style.h"
#include "spec/tensor_network.h"

namespace tensorscope::diagram_view {

/// An index as the diagram sees it (from spec::contractions and spec::danglingLegs): the
/// (node, leg) ends among the drawn nodes that carry it. One end: a dangling leg; two: a
/// contraction; three or more, or two that are also an output leg: a batch-multiplication
/// hyperedge (a joining dot, with one more dangling leg when `output`).
struct DrawnIndex {
  char index = 0;
  std::string symbol;
  std::int64_t size = 0;
  std::vector<std::pair<std::string, int>> ends;
  bool output = false;  ///< also a leg of the layer's output

  bool hyperedge() const { return ends.size() >= 3 || (ends.size() == 2 && output); }
};

/// Every index of the drawn nodes, in order of first appearance (bias nodes carry none: they
/// are drawn beside their weight).
std::vector<DrawnIndex> drawnIndices(const spec::TensorNetwork& network);

/// A tensor (circle) or an elementwise operation (small box) at its laid-out place.
struct TensorPlacement {
  std::string id;
  QPointF center;
  double width = 0, height = 0;
  bool op_box = false;
  bool bias = false;  ///< a bias, drawn small beside its weight
};

/// One drawn line: a contraction between two tensors, a spoke from a tensor to a hyperedge dot,
/// a dangling leg (from a tensor or from a hyperedge dot), or the dashed link of a bias to its
/// weight.
struct LegPlacement {
  enum class Kind { Contraction, Spoke, Dangling, Bias };
  Kind kind = Kind::Contraction;
  char index = 0;
  QString symbol;
  std::int64_t size = 0;
  QString label;          ///< the text drawn on the leg (symbol or size, per the options)
  std::string from;       ///< tensor id (the bias for Bias; empty for a dot's dangling leg)
  std::string to;         ///< tensor id (Contraction; the weight for Bias), empty otherwise
  int hyperedge = -1;     ///< Spoke, or Dangling from a dot: index into DiagramLayout::hyperedges
  QPainterPath path;      ///< cubic Bézier pieces, scene coordinates
  bool has_label = false;
  QPointF label_pos;      ///< centre of the label
  QSizeF label_size;      ///< as Graphviz measured it
};

/// A batch-multiplication dot joining three or more legs.
struct HyperedgePlacement {
  char index = 0;
  bool output = false;  ///< also carries a dangling output leg
  QString symbol;
  std::int64_t size = 0;
  QPointF center;
  std::vector<std::string> tensors;  ///< ids of the joined tensors
  QString label;                     ///< symbol or size, written once beside the dot
  bool has_label = false;
  QPointF label_pos;                 ///< centre of the label
  QSizeF label_size;
};

/// A box: softmax (dotted, filled ball on the normalised leg, α), normalisation without exp
/// (dotted, open ball) or an elementwise function such as φ (thin solid outline, its label).
struct BoxPlacement {
  std::string id;
  spec::SoftmaxBox::Kind kind = spec::SoftmaxBox::Kind::Softmax;
  QString label;          ///< e.g. "softmax", "φ = elu + 1"
  QString role;           ///< hover text
  int depth = 0;          ///< nesting depth (0: outermost)
  QRectF rect;
  bool has_ball = false;
  QPointF ball;           ///< where the normalised leg leaves the box (or its midpoint)
  QString ball_text;      ///< written beside the ball: α (e.g. "1/√D"), "normalise", ", causal"
  QRectF ball_text_rect;  ///< where: beside the ball, clear of labels, tensors and legs
  QString scale_label;    ///< α, e.g. "1/√D"
  QPointF label_pos;      ///< Elementwise: centre of the label Graphviz reserved room for
  char normalized = 0;
  bool causal = false;
  std::vector<std::string> tensors;
};

struct DiagramLayout {
  QRectF bounds;  ///< everything laid out, scene coordinates
  std::vector<TensorPlacement> tensors;
  std::vector<LegPlacement> legs;
  std::vector<HyperedgePlacement> hyperedges;
  std::vector<BoxPlacement> boxes;
  std::string dot;  ///< the Graphviz graph that was laid out
};

/// The Graphviz graph of a network (HTML-like labels, dotted clusters): what is laid out and what
/// the DOT export writes.
std::string networkToDot(const spec::TensorNetwork& network, const DiagramOptions& options);

/// Lays out a network (through GraphvizEngine, cached). Throws std::runtime_error if Graphviz fails.
DiagramLayout layoutNetwork(const spec::TensorNetwork& network, const DiagramOptions& options);

/// Layout-cache counters, for tests and diagnostics.
struct LayoutCacheStats {
  std::size_t hits = 0, misses = 0, entries = 0;
};
LayoutCacheStats layoutCacheStats();

/// The label drawn on a leg: its symbol, or its size with `sizes`.
QString legLabel(const std::string& symbol, std::int64_t size, bool sizes);

/// Whether a node is the core C or one of its factors (what opens the core editor).
bool isCoreNode(const spec::TensorNode& node);

}  // namespace tensorscope::diagram_view
