#include "tasks/data_sources.h"

#include <pwd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <stdexcept>

#include "files/atomic_file.h"
#include "files/read_file.h"
#include "model_core/tasks.h"
#include "spec/json_reader.h"

namespace tensorscope::model_core {

std::string taskCacheDirectory() {
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  if (xdg && xdg[0] == '/') return std::string(xdg) + "/tensorscope";  // the XDG spec ignores relative paths
  const char* home = std::getenv("HOME");
  if (home && home[0] != '\0') return std::string(home) + "/.cache/tensorscope";
  if (const passwd* pw = getpwuid(getuid()); pw && pw->pw_dir) return std::string(pw->pw_dir) + "/.cache/tensorscope";
  return "/tmp/tensorscope-cache";
}

namespace tasks {
namespace {

constexpr const char* kBibleMarker = "In the beginning God created the heaven and the earth.";
constexpr std::size_t kBibleMinimumBytes = 4'000'000;  // the full text is 4.4 MB

struct PipeCloser {
  void operator()(FILE* f) const {
    if (f) pclose(f);
  }
};

std::string runBible(const std::string& executable) {
  const std::string command = "'" + executable + "' " + kBibleCommandArguments + " 2>/dev/null";
  FILE* raw = popen(command.c_str(), "r");
  if (!raw) throw std::runtime_error("cannot run " + command);
  std::unique_ptr<FILE, PipeCloser> pipe(raw);
  std::string text;
  char buffer[1 << 16];
  std::size_t n = 0;
  while ((n = std::fread(buffer, 1, sizeof buffer, pipe.get())) > 0) text.append(buffer, n);
  const int status = pclose(pipe.release());
  if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw std::runtime_error("`bible " + std::string(kBibleCommandArguments) + "` failed (exit status " +
                             std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1) +
                             "); reinstall the Debian package bible-kjv");
  return text;
}

bool looksLikeBible(const std::string& text) {
  return text.size() >= kBibleMinimumBytes && text.find(kBibleMarker) != std::string::npos;
}

}  // namespace

std::string findExecutable(const std::string& name) {
  const char* path = std::getenv("PATH");
  if (!path) return "";
  const std::string dirs = path;
  std::size_t start = 0;
  while (start <= dirs.size()) {
    std::size_t end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    const std::string dir = end > start ? dirs.substr(start, end - start) : ".";
    const std::string candidate = dir + "/" + name;
    std::error_code ec;
    if (std::filesystem::is_regular_file(candidate, ec) && access(candidate.c_str(), X_OK) == 0) return candidate;
    start = end + 1;
  }
  return "";
}

Corpus loadCorpusFile(const std::string& path) {
  Corpus c;
  try {
    c.text = files::readBoundedFile(path, files::kMaxCorpusFileBytes);
  } catch (const std::exception& e) {
    throw std::runtime_error(std::string("char_lm corpus: ") + e.what());
  }
  if (c.text.empty()) throw std::runtime_error("char_lm corpus " + path + " is empty");
  c.source = path;
  return c;
}

Corpus loadKingJamesBible() {
  const std::string dir = taskCacheDirectory();
  const std::string cache = dir + "/" + kBibleCacheFile;
  std::error_code ec;
  if (std::filesystem::is_regular_file(cache, ec)) {
    Corpus c;
    try {
      c.text = files::readWholeFile(cache);
    } catch (const std::exception&) {
      c.text.clear();  // unreadable cache: extract again below
    }
    if (looksLikeBible(c.text)) {
      c.source = "King James Bible (bible-kjv), cached in " + cache;
      return c;
    }
  }
  const std::string bible = findExecutable("bible");
  if (bible.empty())
    throw MissingDataError(
        "King James Bible text not available: the program `bible` was not found on PATH: install the Debian "
        "package bible-kjv (apt-get install bible-kjv)");
  Corpus c;
  c.text = runBible(bible);
  if (!looksLikeBible(c.text))
    throw std::runtime_error("unexpected output from `" + bible + " " + kBibleCommandArguments + "` (" +
                             std::to_string(c.text.size()) + " bytes, expected the King James text of ~4.4 MB); "
                             "reinstall the Debian package bible-kjv");
  try {
    std::filesystem::create_directories(dir);
    files::writeFileAtomically(cache, c.text);
    c.source = "King James Bible (bible-kjv), extracted and cached in " + cache;
  } catch (const std::exception& e) {
    c.source = std::string("King James Bible (bible-kjv), not cached: ") + e.what();
  }
  return c;
}

}  // namespace tasks
}  // namespace tensorscope::model_core
