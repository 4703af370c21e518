// Reads a Graphviz layout of networkToDot's graph back into scene coordinates (see the naming
// scheme at the top of diagram_dot.cpp).
#include "diagram_view/diagram_layout.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <mutex>
#include <optional>

#include "diagram_view/graphviz.h"

namespace tensorscope::diagram_view {
namespace {

constexpr std::size_t kCacheCapacity = 128;

struct LayoutCache {
  std::mutex mutex;
  std::map<std::string, Layout> layouts;  // keyed by the DOT text, which the network determines
  LayoutCacheStats stats;
};

LayoutCache& cache() {
  static LayoutCache c;
  return c;
}

Layout cachedLayout(const std::string& dot) {
  auto& c = cache();
  {
    std::lock_guard lock(c.mutex);
    if (auto it = c.layouts.find(dot); it != c.layouts.end()) {
      ++c.stats.hits;
      return it->second;
    }
  }
  Layout fresh = GraphvizEngine::layout(dot, "dot");  // GraphvizEngine holds its own lock
  std::lock_guard lock(c.mutex);
  ++c.stats.misses;
  if (c.layouts.size() >= kCacheCapacity) c.layouts.clear();
  c.layouts.emplace(dot, fresh);
  return fresh;
}

// Parses "<prefix><k>" or "<prefix><k>_<j>".
std::optional<std::pair<int, int>> parseName(const std::string& name, const std::string& prefix) {
  if (name.rfind(prefix, 0) != 0 || name.size() == prefix.size()) return std::nullopt;
  const std::string rest = name.substr(prefix.size());
  const auto us = rest.find('_');
  try {
    size_t used = 0;
    const int k = std::stoi(rest.substr(0, us), &used);
    if (used != (us == std::string::npos ? rest.size() : us)) return std::nullopt;
    const int j = us == std::string::npos ? -1 : std::stoi(rest.substr(us + 1));
    return std::pair{k, j};
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

// Where `path` first crosses the boundary of `rect`, refined by bisection.
std::optional<QPointF> boundaryCrossing(const QPainterPath& path, const QRectF& rect) {
  if (path.elementCount() < 2) return std::nullopt;
  constexpr int kSteps = 240;
  double t0 = 0;
  bool in0 = rect.contains(path.pointAtPercent(0));
  for (int i = 1; i <= kSteps; ++i) {
    double t1 = static_cast<double>(i) / kSteps;
    if (rect.contains(path.pointAtPercent(t1)) == in0) {
      t0 = t1;
      continue;
    }
    for (int it = 0; it < 30; ++it) {
      const double mid = 0.5 * (t0 + t1);
      (rect.contains(path.pointAtPercent(mid)) == in0 ? t0 : t1) = mid;
    }
    return path.pointAtPercent(0.5 * (t0 + t1));
  }
  return std::nullopt;
}

void placeBall(BoxPlacement& box, const std::vector<LegPlacement>& legs) {
  const LegPlacement* fallback = nullptr;
  for (const auto& leg : legs) {
    if (leg.index != box.normalized || leg.kind == LegPlacement::Kind::Bias) continue;
    if (auto p = boundaryCrossing(leg.path, box.rect)) {
      box.has_ball = true;
      box.ball = *p;
      return;
    }
    if (!fallback) fallback = &leg;
  }
  if (fallback && fallback->path.elementCount() >= 2) {
    box.has_ball = true;
    box.ball = fallback->path.pointAtPercent(0.5);
  }
}

QRectF centred(const QPointF& c, const QSizeF& size) {
  return QRectF(c.x() - size.width() / 2, c.y() - size.height() / 2, size.width(), size.height());
}

// How badly `r` collides with what is already drawn: labels, tensors, dots, legs, box edges.
// `self` (a box or hyperedge being labelled) is not an obstacle to itself.
int conflicts(const QRectF& r, const DiagramLayout& layout, const void* self) {
  int n = 0;
  for (const auto& l : layout.legs) {
    if (l.has_label && r.intersects(centred(l.label_pos, l.label_size))) n += 3;
    for (int i = 0; i <= 96; ++i)
      if (r.contains(l.path.pointAtPercent(i / 96.0))) {
        ++n;
        break;
      }
  }
  for (const auto& t : layout.tensors)
    if (r.intersects(centred(t.center, QSizeF(t.width, t.height)))) n += 3;
  for (const auto& h : layout.hyperedges) {
    if (r.intersects(centred(h.center, QSizeF(style::kHyperedgeDot, style::kHyperedgeDot)))) n += 2;
    if (&h != self && h.has_label && r.intersects(centred(h.label_pos, h.label_size))) n += 3;
  }
  for (const auto& b : layout.boxes) {
    if (r.intersects(b.rect) && !b.rect.contains(r)) n += 2;  // crosses a box edge
    if (&b != self && b.has_ball && !b.ball_text.isEmpty() && r.intersects(b.ball_text_rect)) n += 3;
  }
  return n;
}

QSizeF estimatedTextSize(const QString& text) {
  // DejaVu Serif averages about 0.6 em per character; exact metrics would need a GUI session.
  return QSizeF(0.62 * style::kLegFontSize * text.size() + 2, style::kLegFontSize * 1.3);
}

// Writes a hyperedge's index once beside its dot, where it touches no leg or other label.
void placeHyperedgeLabel(HyperedgePlacement& h, const DiagramLayout& layout) {
  h.label_size = estimatedTextSize(h.label);
  const double rx = style::kHyperedgeDot / 2 + 2 + h.label_size.width() / 2;
  const double ry = style::kHyperedgeDot / 2 + 1 + h.label_size.height() / 2;
  const QPointF offsets[] = {{rx, ry}, {-rx, ry}, {rx, -ry}, {-rx, -ry}, {0, ry + 1}, {0, -ry - 1}, {rx + 1, 0}, {-rx - 1, 0}};
  int best = -1;
  for (const QPointF& o : offsets) {
    const int score = conflicts(centred(h.center + o, h.label_size), layout, &h);
    if (best < 0 || score < best) best = score, h.label_pos = h.center + o;
    if (score == 0) break;
  }
  h.has_label = true;
}

// Writes α (or the box's label) beside its ball, at the first of eight places around it that
// collides with nothing, preferring places outside the box.
void placeBallText(BoxPlacement& box, const DiagramLayout& layout) {
  if (box.kind == spec::SoftmaxBox::Kind::Normalize) box.ball_text = box.label;
  else if (box.scale_label != "1") box.ball_text = box.scale_label;
  if (box.causal) box.ball_text += box.ball_text.isEmpty() ? "causal" : ", causal";
  if (box.ball_text.isEmpty()) return;
  const QSizeF size = estimatedTextSize(box.ball_text);
  const double w = size.width(), h = size.height();
  const double r = style::kBallDiameter / 2 + 3;
  const QPointF offsets[] = {{r, -h - 1},      {r, 1},          {-w - r, -h - 1}, {-w - r, 1},
                             {r, -h / 2},      {-w - r, -h / 2}, {-w / 2, -h - r}, {-w / 2, r}};
  int best = -1;
  for (const QPointF& o : offsets) {
    const QRectF candidate(box.ball + o, QSizeF(w, h));
    const int score = 10 * conflicts(candidate, layout, &box) + (candidate.intersects(box.rect) ? 1 : 0);
    if (best < 0 || score < best) best = score, box.ball_text_rect = candidate;
    if (score == 0) break;
  }
}

}  // namespace

LayoutCacheStats layoutCacheStats() {
  std::lock_guard lock(cache().mutex);
  LayoutCacheStats s = cache().stats;
  s.entries = cache().layouts.size();
  return s;
}

DiagramLayout layoutNetwork(const spec::TensorNetwork& net, const DiagramOptions& options) {
  DiagramLayout out;
  out.dot = networkToDot(net, options);
  const Layout gv = cachedLayout(out.dot);
  const auto indices = drawnIndices(net);
  // Graphviz's y axis points up; the scene's points down. `dot` orders the nodes of a rank to
  // cross few edges, which may put X^V above X^Q; the picture is then mirrored vertically (still
  // a valid layout) so that the first input is above the last, as in the papers.
  std::map<int, double> tensorY;  // node position -> Graphviz y
  for (const auto& n : gv.nodes)
    if (auto t = parseName(n.name, "t"); t && t->second < 0) tensorY[t->first] = n.y;
  double firstY = 0, lastY = 0;
  bool haveFirst = false;
  for (const auto& [i, y] : tensorY) {
    if (i >= static_cast<int>(net.nodes.size()) || net.nodes[i].kind != spec::NodeKind::Input) continue;
    if (!haveFirst) firstY = y, haveFirst = true;
    lastY = y;
  }
  const bool mirror = haveFirst && firstY < lastY;
  auto scene = [&](const GvPoint& p) { return QPointF(p.x, mirror ? p.y : gv.height - p.y); };

  std::map<int, const LaidOutNode*> dots;
  for (const auto& n : gv.nodes) {
    const QPointF c = scene({n.x, n.y});
    if (auto t = parseName(n.name, "t"); t && t->second < 0 && t->first < static_cast<int>(net.nodes.size())) {
      const auto& node = net.nodes[t->first];
      out.tensors.push_back(
          {node.id, c, n.width, n.height, node.kind == spec::NodeKind::Intermediate, !node.adds_to.empty()});
    } else if (auto h = parseName(n.name, "h"); h && h->second < 0) {
      dots[h->first] = &n;
    }
  }
  std::map<int, int> hyperedgeSlot;
  for (const auto& [k, dot] : dots) {
    if (k >= static_cast<int>(indices.size())) continue;
    const auto& d = indices[k];
    HyperedgePlacement h;
    h.index = d.index;
    h.output = d.output;
    h.symbol = QString::fromStdString(d.symbol);
    h.size = d.size;
    h.center = scene({dot->x, dot->y});
    for (const auto& e : d.ends) h.tensors.push_back(e.first);
    h.label = legLabel(d.symbol, d.size, options.show_sizes);
    h.has_label = false;  // placed once the legs are known (placeHyperedgeLabel)
    hyperedgeSlot[k] = static_cast<int>(out.hyperedges.size());
    out.hyperedges.push_back(std::move(h));
  }

  for (const auto& e : gv.edges) {
    if (e.id.empty() || e.spline.empty()) continue;
    const auto ids = parseName(e.id.substr(1), "");
    if (!ids) continue;
    LegPlacement leg;
    if (e.id[0] == 'b') {  // bias link: b<i>, i a node position
      if (ids->first >= static_cast<int>(net.nodes.size())) continue;
      const auto& bias = net.nodes[ids->first];
      leg.kind = LegPlacement::Kind::Bias;
      leg.from = bias.id;
      leg.to = bias.adds_to;
      leg.label.clear();
    } else {
      if (ids->first >= static_cast<int>(indices.size())) continue;
      const auto& d = indices[ids->first];
      leg.index = d.index;
      leg.symbol = QString::fromStdString(d.symbol);
      leg.size = d.size;
      leg.label = legLabel(d.symbol, d.size, options.show_sizes);
      const bool dot = hyperedgeSlot.count(ids->first) > 0;
      if (e.id[0] == 'c' && d.ends.size() == 2 && !d.hyperedge()) {
        leg.kind = LegPlacement::Kind::Contraction;
        leg.from = d.ends[0].first;
        leg.to = d.ends[1].first;
      } else if (e.id[0] == 's' && dot && ids->second >= 0 && ids->second < static_cast<int>(d.ends.size())) {
        leg.kind = LegPlacement::Kind::Spoke;
        leg.from = d.ends[ids->second].first;
        leg.hyperedge = hyperedgeSlot[ids->first];
      } else if (e.id[0] == 'd' && d.hyperedge() && dot) {
        leg.kind = LegPlacement::Kind::Dangling;
        leg.hyperedge = hyperedgeSlot[ids->first];
      } else if (e.id[0] == 'd' && d.ends.size() == 1) {
        leg.kind = LegPlacement::Kind::Dangling;
        leg.from = d.ends[0].first;
      } else {
        continue;
      }
    }
    leg.path.moveTo(scene(e.spline[0]));
    for (size_t i = 1; i + 2 < e.spline.size(); i += 3)
      leg.path.cubicTo(scene(e.spline[i]), scene(e.spline[i + 1]), scene(e.spline[i + 2]));
    leg.has_label = e.has_label;
    leg.label_pos = scene(e.label);
    leg.label_size = QSizeF(e.label_width, e.label_height);
    out.legs.push_back(std::move(leg));
  }

  for (const auto& c : gv.clusters) {
    const auto b = parseName(c.name, "cluster_b");
    if (!b || b->second >= 0 || b->first >= static_cast<int>(net.boxes.size())) continue;
    const auto& sb = net.boxes[b->first];
    BoxPlacement box;
    box.id = sb.id;
    box.kind = sb.kind;
    box.label = QString::fromStdString(sb.label);
    if (sb.kind == spec::SoftmaxBox::Kind::Elementwise) box.label = box.label.section(" = ", 0, 0).trimmed();
    box.role = QString::fromStdString(sb.role);
    box.rect = QRectF(scene(c.lower_left), scene(c.upper_right)).normalized();
    box.scale_label = QString::fromStdString(sb.scale_label);
    box.label_pos = c.has_label ? scene(c.label) : box.rect.topLeft();
    box.normalized = sb.normalized;
    box.causal = sb.causal;
    box.tensors = sb.nodes;
    if (sb.kind != spec::SoftmaxBox::Kind::Elementwise) placeBall(box, out.legs);
    out.boxes.push_back(std::move(box));
  }
  // Nesting depth: how many other boxes enclose each one.
  for (auto& box : out.boxes)
    for (const auto& other : out.boxes)
      if (&other != &box && other.rect.contains(box.rect) && other.rect != box.rect) ++box.depth;
  for (size_t k = 0; k < out.hyperedges.size(); ++k)
    if (!out.hyperedges[k].output) placeHyperedgeLabel(out.hyperedges[k], out);
  for (auto& box : out.boxes)
    if (box.has_ball) placeBallText(box, out);

  QRectF bounds;
  for (const auto& t : out.tensors)
    bounds |= QRectF(t.center.x() - t.width / 2, t.center.y() - t.height / 2, t.width, t.height);
  for (const auto& l : out.legs) bounds |= l.path.boundingRect();
  for (const auto& b : out.boxes) {
    bounds |= b.rect;
    if (b.has_ball && !b.ball_text.isEmpty()) bounds |= b.ball_text_rect;
  }
  for (const auto& h : out.hyperedges)
    if (h.has_label) bounds |= centred(h.label_pos, h.label_size);
  out.bounds = bounds;
  return out;
}

}  // namespace tensorscope::diagram_view
