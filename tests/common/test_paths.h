// Paths the tests need (the test data, the source tree, the tensorscope binary), read at run time,
// not compiled in. A definition holding an absolute path makes every translation unit of its target
// differ between two clones, and with the shared precompiled header ccache hashes definitions, so a
// clean clone recompiled every torch test file however warm the cache was (docs/ci.md).
//
// Each path comes from the environment variable of its name when set, else from test_paths.txt
// beside the test binary, which tests/CMakeLists.txt writes at build time (lines NAME=PATH), so a
// test binary run by hand finds them too.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <system_error>

namespace ts_test {

inline std::string pathFromBuild(const std::string& name) {
  if (const char* v = std::getenv(name.c_str()); v != nullptr && *v != '\0') return v;
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  const auto file = exe.parent_path() / "test_paths.txt";
  std::ifstream in(file);
  for (std::string line; std::getline(in, line);)
    if (line.size() > name.size() && line.compare(0, name.size(), name) == 0 && line[name.size()] == '=')
      return line.substr(name.size() + 1);
  throw std::runtime_error(name + " is neither set nor in " + file.string() +
                           " (tests/CMakeLists.txt writes that file beside the test binaries)");
}

/// tests/data of the source tree.
inline std::string testDataDir() { return pathFromBuild("TS_TEST_DATA"); }
/// The source tree's root.
inline std::string sourceDir() { return pathFromBuild("TS_SOURCE_DIR"); }
/// The tensorscope binary of this build.
inline std::string tensorscopeBinary() { return pathFromBuild("TS_TENSORSCOPE_BINARY"); }

}  // namespace ts_test
