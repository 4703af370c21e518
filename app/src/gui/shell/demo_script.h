#pragma once
/// The demo script of `tensorscope --demo SCRIPT` (see demo_runner.h for the commands), parsed and
/// checked whole before anything runs (issue 19): an unknown command, a missing or malformed
/// argument, or an oversized file is refused with its line, instead of stopping the demo midway.
/// Plain C++ (no Qt), so the fuzz harness (tests/fuzz) builds it alone.

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace tensorscope::app {

struct DemoCommand {
  std::string name;  ///< e.g. "train"
  std::string arg;   ///< the rest of the line, trimmed ("" when none)
  int line = 0;      ///< 1-based line in the script
};

/// Lines longer than this are refused (no command needs more than a path).
inline constexpr std::size_t kMaxDemoLineBytes = 4096;
/// Scripts larger than this are refused before reading.
inline constexpr std::uintmax_t kMaxDemoScriptBytes = 1u << 20;

/// Parses `text`; throws std::invalid_argument("<source> line N: <reason>").
std::vector<DemoCommand> parseDemoScript(std::string_view text, const std::string& source);

/// Reads and parses a script file (bounded read: devices, directories and oversized files refused).
std::vector<DemoCommand> readDemoScript(const std::string& path);

/// The script text of `commands` (one per line): parseDemoScript(formatDemoScript(c)) == c up to lines.
std::string formatDemoScript(const std::vector<DemoCommand>& commands);

}  // namespace tensorscope::app
