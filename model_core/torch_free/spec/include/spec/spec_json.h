#pragma once
/// Versioned JSON form of AttentionSpec (format "tensorscope.attention_spec", version 1).
/// The format is documented in docs/spec-format.md.

#include <stdexcept>
#include <string>
#include <vector>

#include "spec/attention_spec.h"
#include "spec/validation.h"

namespace tensorscope::spec {

inline constexpr const char* kSpecFormat = "tensorscope.attention_spec";
inline constexpr int kSpecVersion = 1;

/// Thrown when a document cannot be read as a spec. Carries every problem found.
class SpecError : public std::runtime_error {
 public:
  explicit SpecError(std::vector<Issue> issues);
  const std::vector<Issue>& issues() const { return issues_; }

 private:
  std::vector<Issue> issues_;
};

/// Serialises a spec; the core is always written in explicit form (structure and values).
std::string toJson(const AttentionSpec& spec, int indent = 2);

/// Parses a document. Structural problems (malformed JSON, wrong version, unknown or mistyped
/// fields) throw SpecError with all problems found; the result is not yet validated for sizes.
AttentionSpec fromJson(const std::string& text);

/// Reads a file: fromJson plus I/O errors ("cannot open FILE: reason").
AttentionSpec readSpecFile(const std::string& path);

}  // namespace tensorscope::spec
