#include "diagram_view/graphviz.h"

#include <graphviz/cgraph.h>
#include <graphviz/gvc.h>

#include <cstdlib>
#include <mutex>
#include <stdexcept>
#include <vector>

namespace tensorscope::diagram_view {
namespace {

std::mutex& graphvizMutex() {
  static std::mutex m;
  return m;
}

struct GvcDeleter {
  void operator()(GVC_t* g) const { gvFreeContext(g); }
};
struct GraphDeleter {
  void operator()(Agraph_t* g) const { agclose(g); }
};

GVC_t* context() {
  // One context for the process; built on first use under the lock.
  static std::unique_ptr<GVC_t, GvcDeleter> ctx(gvContext());
  return ctx.get();
}

void collectClusters(Agraph_t* g, std::vector<LaidOutCluster>& out) {
  for (int i = 1; i <= GD_n_cluster(g); ++i) {
    Agraph_t* sub = GD_clust(g)[i];
    const boxf bb = GD_bb(sub);
    LaidOutCluster c{agnameof(sub), {bb.LL.x, bb.LL.y}, {bb.UR.x, bb.UR.y}, false, {}};
    if (const textlabel_t* lab = GD_label(sub); lab && lab->set) {
      c.has_label = true;
      c.label = {lab->pos.x, lab->pos.y};
    }
    out.push_back(c);
    collectClusters(sub, out);
  }
}

LaidOutEdge edgeOf(Agedge_t* e) {
  LaidOutEdge out;
  char* id = agget(e, const_cast<char*>("id"));
  if (id) out.id = id;
  out.tail = agnameof(agtail(e));
  out.head = agnameof(aghead(e));
  if (const splines* spl = ED_spl(e)) {
    // Several Bézier pieces only appear with compound edges; join them into one spline.
    for (int b = 0; b < spl->size; ++b) {
      const bezier& bz = spl->list[b];
      for (int i = (b == 0 || out.spline.empty()) ? 0 : 1; i < bz.size; ++i)
        out.spline.push_back({bz.list[i].x, bz.list[i].y});
    }
  }
  // A flat edge carries its label as an xlabel (see diagram_dot.cpp); either kind is read back.
  const textlabel_t* lab = ED_label(e);
  if (!lab || !lab->set) lab = ED_xlabel(e);
  if (lab && lab->set) {
    out.has_label = true;
    out.label = {lab->pos.x, lab->pos.y};
    out.label_width = lab->dimen.x;
    out.label_height = lab->dimen.y;
  }
  return out;
}

std::string lastError() {
  const char* e = aglasterr();
  return e ? std::string(e) : std::string("no detail from Graphviz");
}

}  // namespace

std::string GraphvizEngine::version() {
  std::lock_guard lock(graphvizMutex());
  const char* v = gvcVersion(context());
  return v ? v : "unknown";
}

Layout GraphvizEngine::layout(const std::string& dot, const std::string& engine) {
  std::lock_guard lock(graphvizMutex());
  GVC_t* gvc = context();
  agseterr(AGMAX);
  std::unique_ptr<Agraph_t, GraphDeleter> g(agmemread(dot.c_str()));
  if (!g) throw std::runtime_error("Graphviz could not read the graph: " + lastError());
  if (gvLayout(gvc, g.get(), engine.c_str()) != 0)
    throw std::runtime_error("Graphviz layout '" + engine + "' failed: " + lastError());
  Layout out;
  const boxf bb = GD_bb(g.get());
  out.width = bb.UR.x - bb.LL.x;
  out.height = bb.UR.y - bb.LL.y;
  for (Agnode_t* n = agfstnode(g.get()); n; n = agnxtnode(g.get(), n)) {
    const pointf p = ND_coord(n);
    out.nodes.push_back({agnameof(n), p.x, p.y, ND_width(n) * 72.0, ND_height(n) * 72.0});
    for (Agedge_t* e = agfstout(g.get(), n); e; e = agnxtout(g.get(), e)) out.edges.push_back(edgeOf(e));
  }
  collectClusters(g.get(), out.clusters);
  gvFreeLayout(gvc, g.get());
  return out;
}

}  // namespace tensorscope::diagram_view
