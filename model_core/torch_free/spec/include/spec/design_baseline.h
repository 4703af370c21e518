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
/// and causality, its proportional sizes following (keepPresetProportions). Throws
/// std::invalid_argument for an unknown name (makeSpecPreset's message).
AttentionSpec presetAtSizeOf(const std::string& name, const AttentionSpec& s);

/// The sizes a design preset states as proportions of its heads, recomputed at s's H and D: the one
/// rule for "this preset at this size" (presetAtSizeOf, the benchmarks' rows). Collaborative
/// attention's shared key space is H·D/2; MLA's latent is 2D and its rotary part 2·max(1, D/4)
/// (DeepSeek-V3's kv_lora_rank 512 and qk_rope_head_dim 64 for heads of 128 + 64, as the mla
/// preset has them at D = 16). Other slots keep their sizes (TPA's ranks are T6's own numbers).
void keepPresetProportions(AttentionSpec& s);

}  // namespace tensorscope::spec
