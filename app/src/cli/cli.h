#pragma once
/// Headless entry points of `tensorscope`. The GUI is opened only when no sub-command is given.

#include <iosfwd>
#include <string>
#include <vector>

#include "common/exit_codes.h"
#include "common/version.h"

namespace tensorscope::app {

/// True when `args` (without argv[0]) asks for a headless command rather than the window.
bool isHeadlessInvocation(const std::vector<std::string>& args);

/// Runs a headless command, printing results to `out` and problems to `err`.
int runCli(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

/// The --help text.
std::string helpText();

}  // namespace tensorscope::app
