// The Graphviz graph of a tensor network. Names follow one scheme that layoutNetwork reads back:
//   t<i>  node i of network.nodes              h<k>  hyperedge dot of drawn index k
//   e<k>  invisible end of index k's dangling leg   cluster_b<j>  box j of network.boxes
//   edge ids: c<k> contraction, s<k>_<j> spoke j of hyperedge k, d<k> dangling leg of index k,
//   b<i> link of bias node i to its weight.
#include <QString>
#include <algorithm>
#include <deque>
#include <map>
#include <set>
#include <sstream>

#include "diagram_view/diagram_layout.h"
#include "label_text.h"

namespace tensorscope::diagram_view {
namespace {

constexpr double kPointsPerInch = 72.0;
constexpr double kBiasDiameter = 24.0;

std::string name(const char* prefix, size_t k, int j = -1) {
  std::ostringstream s;
  s << prefix << k;
  if (j >= 0) s << '_' << j;
  return s.str();
}

std::string num(double v) {
  std::ostringstream s;
  s.precision(4);
  s << v;
  return s.str();
}

// Built with append: GCC 12's -Wrestrict misfires on `"<" + std::string(...) + ">"`.
std::string html(const QString& rich) {
  std::string s(1, '<');
  s.append(rich.toStdString()).push_back('>');
  return s;
}

std::string quoted(const std::string& text) { return dotQuoted(QString::fromStdString(text)).toStdString(); }

bool isBias(const spec::TensorNode& n) { return !n.adds_to.empty(); }

QString elementwiseName(const spec::SoftmaxBox& box) {
  return QString::fromStdString(box.label).section(" = ", 0, 0).trimmed();
}

// The graph's structure, computed once: positions, flow levels, box nesting and membership.
struct Plan {
  const spec::TensorNetwork& net;
  std::vector<DrawnIndex> indices;
  std::map<std::string, int> position;
  std::vector<int> level;       // tensors 0..T-1, then one vertex per drawn index (its dot)
  std::vector<int> boxParent;   // -1: top level
  std::vector<int> nodeBox;     // innermost box of each node, -1: none
  std::vector<int> dotBox;      // innermost box holding all ends of a hyperedge, -1: none
  int T = 0;

  explicit Plan(const spec::TensorNetwork& n) : net(n), indices(drawnIndices(n)), T(static_cast<int>(n.nodes.size())) {
    for (int i = 0; i < T; ++i) position[net.nodes[i].id] = i;
    nestBoxes();
    flowLevels();
  }

  std::set<std::string> members(size_t b) const { return {net.boxes[b].nodes.begin(), net.boxes[b].nodes.end()}; }

  // The smallest box whose members include every id in `ids` (ties: the later, inner one).
  int innermost(const std::vector<std::string>& ids) const {
    int best = -1;
    size_t bestSize = 0;
    for (size_t b = 0; b < net.boxes.size(); ++b) {
      const auto m = members(b);
      if (!std::all_of(ids.begin(), ids.end(), [&](const auto& id) { return m.count(id) > 0; })) continue;
      if (best < 0 || m.size() <= bestSize) best = static_cast<int>(b), bestSize = m.size();
    }
    return best;
  }

  void nestBoxes() {
    const size_t B = net.boxes.size();
    boxParent.assign(B, -1);
    for (size_t b = 0; b < B; ++b) {
      const auto mine = members(b);
      size_t bestSize = 0;
      for (size_t o = 0; o < B; ++o) {
        if (o == b) continue;
        const auto other = members(o);
        const bool contains = std::includes(other.begin(), other.end(), mine.begin(), mine.end());
        // Equal sets nest in list order, so two identical boxes still form a chain.
        if (!contains || (other.size() == mine.size() && o > b)) continue;
        if (boxParent[b] < 0 || other.size() < bestSize) boxParent[b] = static_cast<int>(o), bestSize = other.size();
      }
    }
    nodeBox.assign(T, -1);
    for (int i = 0; i < T; ++i) nodeBox[i] = innermost({net.nodes[i].id});
    dotBox.assign(indices.size(), -1);
    for (size_t k = 0; k < indices.size(); ++k) {
      if (!indices[k].hyperedge() || indices[k].output) continue;  // an output dot sits outside
      std::vector<std::string> ids;
      for (const auto& e : indices[k].ends) ids.push_back(e.first);
      dotBox[k] = innermost(ids);
    }
  }

  // Breadth-first distance from the inputs over tensors and dots, used to orient edges so that
  // `dot` ranks the picture from the inputs (left) towards the output legs (right).
  void flowLevels() {
    std::vector<std::vector<int>> adj(T + indices.size());
    auto link = [&](int a, int b) { adj[a].push_back(b), adj[b].push_back(a); };
    for (size_t k = 0; k < indices.size(); ++k) {
      const auto& ends = indices[k].ends;
      if (indices[k].hyperedge())
        for (const auto& e : ends) link(T + static_cast<int>(k), position.at(e.first));
      else if (ends.size() == 2)
        link(position.at(ends[0].first), position.at(ends[1].first));
    }
    level.assign(adj.size(), -1);
    std::deque<int> queue;
    for (int i = 0; i < T; ++i)
      if (net.nodes[i].kind == spec::NodeKind::Input) level[i] = 0, queue.push_back(i);
    for (int start = 0;; ++start) {  // components without an input start from their first tensor
      while (!queue.empty()) {
        const int v = queue.front();
        queue.pop_front();
        for (int w : adj[v])
          if (level[w] < 0) level[w] = level[v] + 1, queue.push_back(w);
      }
      while (start < T && (level[start] >= 0 || isBias(net.nodes[start]))) ++start;
      if (start >= T) break;
      level[start] = 0;
      queue.push_back(start);
    }
    for (int i = 0; i < T; ++i)  // a bias sits one rank after its weight, beside it
      if (isBias(net.nodes[i]))
        if (auto it = position.find(net.nodes[i].adds_to); it != position.end()) level[i] = level[it->second] + 1;
  }
};

class DotWriter {
 public:
  DotWriter(const Plan& plan, const DiagramOptions& options) : p_(plan), options_(options) {}

  std::string write() {
    const std::string font = quoted(diagramFontFamily().toStdString());
    out_ << "graph tensor_network {\n"
         << "  graph [rankdir=LR, nodesep=0.3, ranksep=0.42, newrank=true, splines=spline, pad=0.1, forcelabels=true, remincross=true, mclimit=4, fontname="
         << font << "];\n"
         << "  node [fontname=" << font << ", fontsize=" << num(style::kTensorFontSize) << ", fixedsize=true];\n"
         << "  edge [fontname=" << font << ", fontsize=" << num(style::kLegFontSize) << "];\n";
    // The title is drawn above the picture by the scene; here it only names the graph.
    if (!p_.net.title.empty()) out_ << "  comment=" << quoted(p_.net.title) << ";\n";
    contents(-1, "  ");
    // The inputs form the first column, as in the papers (newrank lets this span clusters).
    std::string inputs;
    for (int i = 0; i < p_.T; ++i)
      if (p_.net.nodes[i].kind == spec::NodeKind::Input) inputs.append(" ").append(name("t", i)).append(";");
    if (!inputs.empty()) out_ << "  { rank=same;" << inputs << " }\n";
    edges();
    out_ << "}\n";
    return out_.str();
  }

 private:
  // Nodes, dots and child clusters whose innermost box is `box` (-1: the top level).
  void contents(int box, const std::string& indent) {
    for (size_t b = 0; b < p_.net.boxes.size(); ++b)
      if (p_.boxParent[b] == box) cluster(b, indent);
    for (int i = 0; i < p_.T; ++i)
      if (p_.nodeBox[i] == box) out_ << indent << nodeLine(i) << "\n";
    const double dot = style::kHyperedgeDot / kPointsPerInch;
    for (size_t k = 0; k < p_.indices.size(); ++k)
      if (p_.indices[k].hyperedge() && p_.dotBox[k] == box) {
        // The index is written once, beside the dot (the scene places it clear of the legs); an
        // output dot's dangling leg carries it instead.
        out_ << indent << name("h", k) << " [shape=point, width=" << num(dot);
        if (!p_.indices[k].output)
          out_ << ", fontsize=" << num(style::kLegFontSize) << ", xlabel=" << legLabelHtml(p_.indices[k]);
        out_ << "];\n";
      }
  }

  void cluster(size_t b, const std::string& indent) {
    const auto& box = p_.net.boxes[b];
    // An elementwise box shows the function's name ("φ" of "φ = elu + 1"); the hover has the rest.
    out_ << indent << "subgraph " << name("cluster_b", b) << " {\n";
    if (box.kind == spec::SoftmaxBox::Kind::Elementwise) {
      out_ << indent << "  style=rounded; penwidth=0.8; margin=10; labeljust=l; labelloc=t; fontsize="
           << num(style::kLegFontSize) << "; label=" << html(labelHtml(elementwiseName(box), true)) << ";\n";
    } else {
      out_ << indent << "  style=dotted; penwidth=1.4; margin=14; label=\"\";\n";
    }
    if (!box.role.empty()) out_ << indent << "  tooltip=" << quoted(box.role) << ";\n";
    contents(static_cast<int>(b), indent + "  ");
    out_ << indent << "}\n";
  }

  std::string nodeLine(int i) const {
    const auto& n = p_.net.nodes[i];
    std::ostringstream s;
    const bool op = n.kind == spec::NodeKind::Intermediate;
    const double side = (op ? style::kOpSide : isBias(n) ? kBiasDiameter : style::kTensorDiameter) / kPointsPerInch;
    s << name("t", i) << " [shape=" << (op ? "box" : "circle") << ", width=" << num(side) << ", height=" << num(side)
      << ", label=" << html("<I>" + labelHtml(QString::fromStdString(n.label), true) + "</I>");
    if (isBias(n)) s << ", fontsize=" << num(style::kLegFontSize);
    if (!n.role.empty()) s << ", tooltip=" << quoted(n.role);
    if (isCoreNode(n)) s << ", penwidth=2";
    if (n.kind == spec::NodeKind::Constant) s << ", style=dashed";
    s << "];";
    return s.str();
  }

  std::string legLabelHtml(const DrawnIndex& d) const {
    const QString text = legLabel(d.symbol, d.size, options_.show_sizes);
    return html(options_.show_sizes ? text : "<I>" + labelHtml(text, true) + "</I>");
  }

  // u -- v, oriented from the lower flow level. Edges within one level do not constrain ranks, so
  // e.g. X^K and X^V (both inputs) stay in one column joined by their M leg.
  //
  // Such an edge usually ends up flat (both ends on one rank). A flat edge with a `label` is laid
  // out by `dot` with an extra label rank, and with newrank=true and a cluster on one end Graphviz
  // 2.42 (Debian 12) then frees a rank array twice in gvFreeLayout: heap corruption in our process
  // on every layout (minimal reproducer: tests/data/graphviz/newrank_flat_label.dot, checked by
  // tests/diagram_view/graphviz_asan_check.c). A flat edge therefore carries its index as an
  // `xlabel`, which Graphviz places after layout without touching the ranks; layoutNetwork reads
  // either kind of label back.
  void edge(const std::string& u, int lu, const std::string& v, int lv, const std::string& id,
            const std::string& attrs, const std::string& labelHtml = {}) {
    const bool swap = lv < lu;
    out_ << "  " << (swap ? v : u) << " -- " << (swap ? u : v) << " [id=\"" << id << "\"" << attrs;
    if (!labelHtml.empty()) out_ << (lu == lv ? ", xlabel=" : ", label=") << labelHtml;
    if (lu == lv) out_ << ", constraint=false";
    out_ << "];\n";
  }

  void edges() {
    const int T = p_.T;
    auto isInput = [&](const std::string& id) { return p_.net.nodes[p_.position.at(id)].kind == spec::NodeKind::Input; };
    for (size_t k = 0; k < p_.indices.size(); ++k) {
      const auto& d = p_.indices[k];
      const std::string label = legLabelHtml(d);
      if (d.hyperedge()) {
        // An output index joining only inputs (TP's X^Q and X^R along N) dangles to the left,
        // like the inputs' own output legs.
        const bool left = d.output && std::all_of(d.ends.begin(), d.ends.end(), [&](const auto& e) { return isInput(e.first); });
        const int dotLevel = left ? -1 : p_.level[T + k];
        for (size_t j = 0; j < d.ends.size(); ++j) {
          const int t = p_.position.at(d.ends[j].first);
          edge(name("t", t), p_.level[t], name("h", k), dotLevel, name("s", k, static_cast<int>(j)), "");
        }
        if (d.output) {
          out_ << "  " << name("e", k) << " [shape=point, style=invis, width=0.02];\n";
          edge(name("h", k), dotLevel, name("e", k), left ? dotLevel - 1 : dotLevel + 1, name("d", k), "", label);
        }
      } else if (d.ends.size() == 2) {
        const int a = p_.position.at(d.ends[0].first), b = p_.position.at(d.ends[1].first);
        edge(name("t", a), p_.level[a], name("t", b), p_.level[b], name("c", k), "", label);
      } else if (d.ends.size() == 1) {
        // Output legs of inputs (X^Q's N) dangle to the left, all others to the right.
        const int t = p_.position.at(d.ends[0].first);
        const bool left = p_.net.nodes[t].kind == spec::NodeKind::Input;
        out_ << "  " << name("e", k) << " [shape=point, style=invis, width=0.02];\n";
        edge(name("t", t), p_.level[t], name("e", k), p_.level[t] + (left ? -1 : 1), name("d", k), "", label);
      }
    }
    for (int i = 0; i < T; ++i) {
      const auto& n = p_.net.nodes[i];
      if (!isBias(n)) continue;
      if (auto w = p_.position.find(n.adds_to); w != p_.position.end())
        edge(name("t", w->second), p_.level[w->second], name("t", i), p_.level[i], name("b", i),
             ", style=dashed");
    }
  }

  const Plan& p_;
  const DiagramOptions& options_;
  std::ostringstream out_;
};

}  // namespace

QString legLabel(const std::string& symbol, std::int64_t size, bool sizes) {
  if (sizes || symbol.empty()) return QString::number(size);
  return QString::fromStdString(symbol);
}

bool isCoreNode(const spec::TensorNode& node) {
  return node.kind == spec::NodeKind::Core || node.binding == "core" || node.binding.rfind("core.", 0) == 0;
}

std::vector<DrawnIndex> drawnIndices(const spec::TensorNetwork& network) {
  const auto contracted = spec::contractions(network);
  const auto dangling = spec::danglingLegs(network);
  std::vector<DrawnIndex> out;
  for (const auto& leg : spec::networkIndices(network)) {
    DrawnIndex d{leg.index, leg.symbol, leg.size, {}, false};
    if (auto c = std::find_if(contracted.begin(), contracted.end(), [&](const auto& x) { return x.index == leg.index; });
        c != contracted.end()) {
      d.ends = c->ends;
      d.output = c->dangling;
    } else {
      for (const auto& [id, pos] : dangling) {
        const auto node = std::find_if(network.nodes.begin(), network.nodes.end(), [&](const auto& n) { return n.id == id; });
        if (node != network.nodes.end() && node->legs[pos].index == leg.index) d.ends.emplace_back(id, pos);
      }
    }
    if (!d.ends.empty()) out.push_back(std::move(d));
  }
  return out;
}

std::string networkToDot(const spec::TensorNetwork& net, const DiagramOptions& options) {
  const Plan plan(net);
  return DotWriter(plan, options).write();
}

}  // namespace tensorscope::diagram_view
