#pragma once
/// Validation of specs with messages a user can act on. Every problem is reported, not just the first.

#include <string>
#include <vector>

#include "spec/attention_spec.h"

namespace tensorscope::spec {

/// One problem: the JSON-style path of the offending field and a sentence saying what to change.
struct Issue {
  std::string field;    ///< e.g. "sizes.R" or "core.A.values"
  std::string message;  ///< e.g. "core structure kronecker needs R = H*D; got R=24, H=4, D=8"

  bool operator==(const Issue&) const = default;
};

/// Upper bounds that keep sizes sane for an interactive explorer.
inline constexpr int kMaxWidth = 16384;
inline constexpr int kMaxHeads = 1024;
inline constexpr int kMaxSeqLen = 65536;
inline constexpr int kMaxBlockTerms = 64;
inline constexpr int kMaxFilters = 64;

/// All problems of a spec; empty when valid.
std::vector<Issue> validate(const AttentionSpec& spec);

/// "field: message" lines joined by newlines.
std::string formatIssues(const std::vector<Issue>& issues);

}  // namespace tensorscope::spec
