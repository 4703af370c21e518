#pragma once
/// A small argument reader for sub-commands: options are taken by name, what remains must be
/// positional, and anything unrecognised is an error with the exact word that was not understood.

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace tensorscope::app {

class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Args {
 public:
  Args(std::vector<std::string> words) : words_(std::move(words)) {}

  /// Removes `--name` and reports whether it was there.
  bool takeFlag(const std::string& name);
  /// Removes `--name VALUE` (or `--name=VALUE`) and returns VALUE.
  std::optional<std::string> takeOption(const std::string& name);
  /// Like takeOption, parsed as an integer in [lo, hi].
  std::optional<long long> takeInt(const std::string& name, long long lo, long long hi);
  /// Removes and returns the first word, if any (the sub-command).
  std::optional<std::string> takeCommand();
  /// The remaining words; throws UsageError naming any leftover option.
  std::vector<std::string> positionals(size_t min, size_t max, const std::string& usage) const;

  const std::vector<std::string>& words() const { return words_; }

 private:
  std::vector<std::string> words_;
};

}  // namespace tensorscope::app
