#include "cli/args.h"

#include <charconv>

namespace tensorscope::app {

bool Args::takeFlag(const std::string& name) {
  for (auto it = words_.begin(); it != words_.end(); ++it)
    if (*it == name) {
      words_.erase(it);
      return true;
    }
  return false;
}

std::optional<std::string> Args::takeOption(const std::string& name) {
  for (auto it = words_.begin(); it != words_.end(); ++it) {
    if (*it == name) {
      if (it + 1 == words_.end()) throw UsageError("option " + name + " needs a value");
      std::string value = *(it + 1);
      words_.erase(it, it + 2);
      return value;
    }
    if (it->rfind(name + "=", 0) == 0) {
      std::string value = it->substr(name.size() + 1);
      words_.erase(it);
      return value;
    }
  }
  return std::nullopt;
}

std::optional<long long> Args::takeInt(const std::string& name, long long lo, long long hi) {
  auto text = takeOption(name);
  if (!text) return std::nullopt;
  long long v = 0;
  const auto* end = text->data() + text->size();
  auto [p, ec] = std::from_chars(text->data(), end, v);
  if (ec != std::errc() || p != end)
    throw UsageError("option " + name + " needs a whole number; got '" + *text + "'");
  if (v < lo || v > hi)
    throw UsageError("option " + name + " must be in [" + std::to_string(lo) + ", " +
                     std::to_string(hi) + "]; got " + *text);
  return v;
}

std::optional<std::string> Args::takeCommand() {
  if (words_.empty() || words_.front().rfind("--", 0) == 0) return std::nullopt;
  std::string c = words_.front();
  words_.erase(words_.begin());
  return c;
}

std::vector<std::string> Args::positionals(size_t min, size_t max, const std::string& usage) const {
  for (const auto& w : words_)
    if (w.size() > 1 && w[0] == '-')
      throw UsageError("unknown option '" + w + "'\nusage: " + usage);
  if (words_.size() < min || words_.size() > max)
    throw UsageError("expected " + (min == max ? std::to_string(min) : std::to_string(min) + " to " + std::to_string(max)) +
                     " argument(s), got " + std::to_string(words_.size()) + "\nusage: " + usage);
  return words_;
}

}  // namespace tensorscope::app
