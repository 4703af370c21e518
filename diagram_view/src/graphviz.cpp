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
  }
  gvFreeLayout(gvc, g.get());
  return out;
}

}  // namespace tensorscope::diagram_view
