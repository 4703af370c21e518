#pragma once
/// Headless entry points of `tensorscope`. The GUI is opened only when no sub-command is given.

#include <iosfwd>
#include <string>
#include <vector>

namespace tensorscope::app {

/// Exit codes shared by every command.
enum ExitCode { kExitOk = 0, kExitFailure = 1, kExitUsage = 2 };

/// True when `args` (without argv[0]) asks for a headless command rather than the window.
bool isHeadlessInvocation(const std::vector<std::string>& args);

/// Runs a headless command, printing results to `out` and problems to `err`.
int runCli(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

/// The --help text.
std::string helpText();

/// The --version text (Tensorscope, Qt, LibTorch, device, threads, BLAS, Graphviz).
std::string versionText();

}  // namespace tensorscope::app
