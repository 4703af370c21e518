#pragma once
/// `tensorscope diagram`: draws a layer's tensor diagram to SVG, PDF, PNG, DOT or TikZ, or checks
/// (`--check`) that the diagram's network computes what the layer computes.

#include <iosfwd>

#include "cli/args.h"

namespace tensorscope::app {

int runDiagramCommand(Args& args, std::ostream& out, std::ostream& err);

}  // namespace tensorscope::app
