#pragma once
/// `tensorscope diagram`: draws a layer's tensor diagram to SVG, PDF, PNG, DOT or TikZ, or checks
/// (`--check`) that the diagram's network computes what the layer computes.

#include <iosfwd>
#include <memory>

#include "cli/args.h"

namespace tensorscope::app {

int runDiagramCommand(Args& args, std::ostream& out, std::ostream& err);

#if TENSORSCOPE_WITH_GUI
/// Rendering needs a QApplication: a command makes an offscreen one for as long as it holds the
/// result (nothing when one exists already).
std::shared_ptr<void> ensureOffscreenApplication();
#endif

}  // namespace tensorscope::app
