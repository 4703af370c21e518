// "This preset at this size" (spec/design_baseline.h): one rule for the Design dock's Cost rows, the
// lessons' cost checks, "Sweep this design" and the benchmarks' rows.
#include <gtest/gtest.h>

#include "spec/cost_model.h"
#include "spec/design_baseline.h"
#include "spec/validation.h"

using namespace tensorscope::spec;

namespace {

AttentionSpec sized(const std::string& preset, int F, int H, int D) {
  auto s = makeSpecPreset(preset);
  s.sizes.F = F;
  s.sizes.H = H;
  s.sizes.D = D;
  s.sizes.R = H * D;
  return s;
}

}  // namespace

// At a preset's own sizes the rule gives the preset back, slot for slot: its proportions are the
// preset's (MLA's latent 32 and rotary 8 at D = 16, collaborative's key space 32 at H·D = 64).
TEST(PresetAtSize, EveryDesignPresetAtItsOwnSizeIsThePreset) {
  for (const auto& name : designPresetNames()) {
    SCOPED_TRACE(name);
    const auto preset = makeSpecPreset(name);
    // R (THSA's channel count, which no headed design reads) is set to H·D; the diff preset halves
    // H and keeps the default R.
    auto expected = preset;
    expected.sizes.R = preset.sizes.H * preset.sizes.D;
    EXPECT_EQ(presetAtSizeOf(name, preset), expected);
    auto kept = preset;
    keepPresetProportions(kept);
    EXPECT_EQ(kept, preset);
  }
}

TEST(PresetAtSize, MlasLatentAndRotaryPartFollowTheHeadSize) {
  const auto at = presetAtSizeOf("mla", sized("mhsa", 128, 8, 32));
  EXPECT_EQ(at.sizes.F, 128);
  EXPECT_EQ(at.sizes.H, 8);
  EXPECT_EQ(at.sizes.D, 32);
  EXPECT_EQ(at.slots.latent.kv_rank, 64);   // 2D
  EXPECT_EQ(at.slots.latent.rope_dim, 16);  // D/2
  EXPECT_EQ(at.slots.latent.q_rank, makeSpecPreset("mla").slots.latent.q_rank);
  EXPECT_TRUE(validate(at).empty()) << formatIssues(validate(at));
  // The absorbed cache is the latent and the rotary key, shared by the heads: 2D + D/2.
  auto absorbed = at;
  absorbed.causal = true;  // a layer decodes token by token only when causal
  absorbed.slots.latent.order = LatentOrder::Absorbed;
  EXPECT_DOUBLE_EQ(estimateDecodeCost(absorbed, 16).cache_elements_per_token, 64 + 16);

  // Small heads keep an even rotary part of at least 2 (the rotary turns pairs).
  for (const int D : {1, 2, 3, 4, 5, 6, 7, 8}) {
    const auto small = presetAtSizeOf("mla", sized("mhsa", 32, 4, D));
    EXPECT_EQ(small.slots.latent.kv_rank, 2 * D) << D;
    EXPECT_EQ(small.slots.latent.rope_dim % 2, 0) << D;
    EXPECT_GE(small.slots.latent.rope_dim, 2) << D;
    EXPECT_TRUE(validate(small).empty()) << D << ": " << formatIssues(validate(small));
  }
}

TEST(PresetAtSize, CollaborativeKeySpaceIsHalfOfTheHeadsWidth) {
  EXPECT_EQ(presetAtSizeOf("collaborative", sized("mhsa", 128, 8, 32)).slots.collaborative.key_dim, 128);
  EXPECT_EQ(presetAtSizeOf("collaborative", sized("mhsa", 8, 1, 1)).slots.collaborative.key_dim, 1);
}

// Slots that are not proportions keep the preset's numbers at any size: TPA's ranks are T6's.
TEST(PresetAtSize, OtherSlotsKeepThePresetsNumbers) {
  const auto tpa = presetAtSizeOf("tpa", sized("mhsa", 128, 8, 32));
  EXPECT_EQ(tpa.slots.tpa, makeSpecPreset("tpa").slots.tpa);
  const auto gqa = presetAtSizeOf("gqa", sized("mhsa", 128, 8, 32));
  EXPECT_EQ(gqa.slots.kv_groups, makeSpecPreset("gqa").slots.kv_groups);
}
