#pragma once
/// Validation of specs with messages a user can act on. Every problem is reported, not just the first.

#include <string>
#include <string_view>
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
/// Values a core may hold (dense: R*R; low rank: 2*R*rank), so that a preset or a spec never
/// expands to more than 16.8 M values (128 MiB as doubles): dense cores up to R = 4096.
inline constexpr long long kMaxCoreValues = 1LL << 24;

/// All problems of a spec; empty when valid.
std::vector<Issue> validate(const AttentionSpec& spec);

/// Problems that make expanding core preset `preset` at the spec's sizes impossible or unbounded:
/// H, D and H*D out of range, or more than kMaxCoreValues values. Checked before the expansion
/// allocates anything (a preset at H = 4,000,000 once asked for terabytes).
std::vector<Issue> corePresetIssues(std::string_view preset, const Sizes& sizes);

/// Whether a core of `structure` at width R (and `rank`, for low_rank) stays within kMaxCoreValues;
/// for editors that convert a core before they allocate it.
std::vector<Issue> coreSizeIssues(CoreStructure structure, int R, int rank = 0);

/// "field: message" lines joined by newlines.
std::string formatIssues(const std::vector<Issue>& issues);

}  // namespace tensorscope::spec
