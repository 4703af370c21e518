#pragma once
/// The baselines a design is compared with at its own size (plain C++, no Qt, no torch): the Design
/// dock's Cost rows and Match budget, the lessons' cost checks and "Sweep this design" all take them
/// from here, so "MHSA here" and "a preset at this F, H, D" mean one thing everywhere.

#include <string>

#include "spec/attention_spec.h"

namespace tensorscope::spec {

/// MHSA at the design's F and H (its D where the design has heads, else F / H), sequence length,
/// bias and causality.
AttentionSpec mhsaAtSizeOf(const AttentionSpec& s);

/// Design preset `name` (its slots as the preset has them) at the design's F, H, D, sequence length
/// and causality. Throws std::invalid_argument for an unknown name (makeSpecPreset's message).
AttentionSpec presetAtSizeOf(const std::string& name, const AttentionSpec& s);

}  // namespace tensorscope::spec
