#pragma once
// Shared by the libFuzzer harnesses (issue 19). A harness turns bytes into a value or into the
// reader's documented error type; anything else (another exception, a crash, a sanitizer report,
// a broken invariant, more than the time or memory bound that scripts/fuzz.sh passes to libFuzzer)
// is a finding.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <string_view>

#define FUZZ_CHECK(cond)                                                                         \
  do {                                                                                           \
    if (!(cond)) {                                                                               \
      std::fprintf(stderr, "invariant broken: %s (%s:%d)\n", #cond, __FILE__, __LINE__);         \
      std::abort();                                                                              \
    }                                                                                            \
  } while (0)

namespace fuzz {

inline std::string_view text(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

/// A per-process scratch directory (readers that take paths read the input from a file there).
inline const std::string& scratchDir() {
  static const std::string dir = [] {
    const char* base = std::getenv("TMPDIR");
    std::string d = std::string(base && *base ? base : "/tmp") + "/tensorscope-fuzz-" + std::to_string(::getpid());
    const std::string cmd = "mkdir -p '" + d + "'";
    FUZZ_CHECK(std::system(cmd.c_str()) == 0);
    return d;
  }();
  return dir;
}

/// Writes `bytes` to scratchDir()/name and returns the path.
inline std::string writeScratch(const std::string& name, std::string_view bytes) {
  const std::string path = scratchDir() + "/" + name;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), std::streamsize(bytes.size()));
  FUZZ_CHECK(out.good());
  return path;
}

}  // namespace fuzz
