#pragma once
/// Which published designs a spec equals or contains, read from its structure (its sizes, core
/// values and slots), never from its preset label: `tensorscope spec name FILE`.
/// docs/attention-variants.md §8 lists the rules; plain C++.

#include <string>
#include <vector>

#include "spec/attention_spec.h"

namespace tensorscope::spec {

struct DesignName {
  std::string name;    ///< e.g. "GQA-4", "MHSA", "talking heads, pre-softmax half"
  bool equals = true;  ///< the spec is this design (false: it contains it as one of its parts)
  std::string why;     ///< the structure that makes it so, in one sentence
};

/// The designs of `spec` (which must be valid), the one it equals first. Never empty: a spec that
/// equals no published design is named by its family with equals = false.
std::vector<DesignName> nameDesigns(const AttentionSpec& spec);

}  // namespace tensorscope::spec
