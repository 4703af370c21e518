#pragma once
/// What `tensorscope --version` and the explorer's About say: Tensorscope, Qt, LibTorch, the device,
/// threads, the BLAS kernels and Graphviz. Shared by the command line and the explorer (neither
/// includes the other).

#include <string>

namespace tensorscope::app {

std::string versionText();

}  // namespace tensorscope::app
