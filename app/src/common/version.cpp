#include "common/version.h"

#include "model_core/runtime.h"
#if TENSORSCOPE_WITH_GUI
#include <QtGlobal>

#include "diagram_view/graphviz.h"
#endif

namespace tensorscope::app {

std::string versionText() {
  const auto info = model_core::runtimeInfo();
  std::string s = "Tensorscope " TENSORSCOPE_VERSION "\n";
#if TENSORSCOPE_WITH_GUI
  s += std::string("Qt ") + qVersion() + "\n";
#else
  s += "headless build: no explorer window, diagrams can be checked (--check) but not drawn\n";
#endif
  s += model_core::describeRuntime(info) + "\n";
#if TENSORSCOPE_WITH_GUI
  s += "Graphviz " + diagram_view::GraphvizEngine::version() + "\n";
#endif
  return s;
}

}  // namespace tensorscope::app
