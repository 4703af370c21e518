// Core presets against the layer contract's table (docs/attention-variants.md §3).
#include <gtest/gtest.h>

#include <cmath>

#include "spec/attention_spec.h"
#include "spec/core_spec.h"

using namespace tensorscope::spec;

namespace {
double at(const std::vector<double>& C, int R, int r, int s) { return C[static_cast<size_t>(r) * R + s]; }
}  // namespace

TEST(CorePreset, MhsaIsSqrtHTimesBlockDiagonalOnes) {
  const int H = 4, D = 3, R = 12;
  const auto C = materializeCore(makeCorePreset("mhsa", H, D), H, D, R);
  for (int r = 0; r < R; ++r)
    for (int s = 0; s < R; ++s)
      EXPECT_DOUBLE_EQ(at(C, R, r, s), (r / D == s / D) ? 2.0 : 0.0) << r << "," << s;
}

TEST(CorePreset, ThsaIsDenseTrainableInitialisedAtMhsa) {
  const int H = 2, D = 3, R = 6;
  const auto t = makeCorePreset("thsa", H, D);
  EXPECT_EQ(t.structure, CoreStructure::Dense);
  EXPECT_EQ(materializeCore(t, H, D, R), materializeCore(makeCorePreset("mhsa", H, D), H, D, R));
  EXPECT_EQ(t.trainableCount(H, D, R), R * R);
}

TEST(CorePreset, SkipLeftEqualsMhsaAtInitAndTrainsTwoVectors) {
  const int H = 4, D = 8, R = 32;
  const auto c = makeCorePreset("skip_left", H, D);
  EXPECT_EQ(c.a.kind, FactorKind::Identity);
  EXPECT_EQ(c.b.kind, FactorKind::Rank1);
  const auto C = materializeCore(c, H, D, R);
  const auto M = materializeCore(makeCorePreset("mhsa", H, D), H, D, R);
  for (size_t i = 0; i < C.size(); ++i) EXPECT_NEAR(C[i], M[i], 1e-12);
  EXPECT_EQ(c.trainableCount(H, D, R), 2 * D);
}

TEST(CorePreset, SkipRightTrainsHeadMixing) {
  const int H = 4, D = 8, R = 32;
  const auto c = makeCorePreset("skip_right", H, D);
  EXPECT_EQ(c.a.kind, FactorKind::Trainable);
  EXPECT_EQ(c.b.kind, FactorKind::Ones);
  EXPECT_EQ(c.trainableCount(H, D, R), H * H);
  EXPECT_EQ(materializeCore(c, H, D, R), materializeCore(makeCorePreset("mhsa", H, D), H, D, R));
}

TEST(CorePreset, HeadsOnlyAndSingleHead) {
  const auto h = materializeCore(makeCorePreset("heads_only", 4, 1), 4, 1, 4);
  for (int r = 0; r < 4; ++r)
    for (int s = 0; s < 4; ++s) EXPECT_DOUBLE_EQ(at(h, 4, r, s), r == s ? 2.0 : 0.0);
  EXPECT_TRUE(makeCorePreset("heads_only", 4, 1).isFrozen());
  const auto one = materializeCore(makeCorePreset("single_head", 2, 3), 2, 3, 6);
  for (double v : one) EXPECT_DOUBLE_EQ(v, 1.0);
  EXPECT_EQ(makeCorePreset("trainable_heads_only", 4, 1).trainableCount(4, 1, 4), 16);
}

TEST(CorePreset, UnknownNameListsTheKnownOnes) {
  try {
    makeCorePreset("skip_middle", 4, 4);
    FAIL() << "expected an exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("skip_left"), std::string::npos);
  }
}

TEST(CoreSpec, KroneckerLayoutIsHeadMajor) {
  // C[(h,d),(h',d')] = s A[h,h'] B[d,d'], channel r = h*D + d.
  CoreSpec c;
  c.structure = CoreStructure::Kronecker;
  c.scale = 2.0;
  c.a = {FactorKind::Fixed, {1, 2, 3, 4}, true};
  c.b = {FactorKind::Fixed, {5, 6, 7, 8}, true};
  const auto C = materializeCore(c, 2, 2, 4);
  EXPECT_DOUBLE_EQ(at(C, 4, 0, 0), 2 * 1 * 5);
  EXPECT_DOUBLE_EQ(at(C, 4, 1, 2), 2 * 2 * 7);  // h=0,d=1 ; h'=1,d'=0
  EXPECT_DOUBLE_EQ(at(C, 4, 3, 0), 2 * 3 * 7);  // h=1,d=1 ; h'=0,d'=0
  EXPECT_DOUBLE_EQ(at(C, 4, 2, 3), 2 * 4 * 6);
}

TEST(CoreSpec, TrainableEntriesFollowStructure) {
  const auto c = makeCorePreset("skip_left", 2, 2);  // I (x) c2c3^T: only diagonal blocks train
  const auto m = coreTrainableEntries(c, 2, 2, 4);
  EXPECT_EQ(m[0 * 4 + 1], 1);
  EXPECT_EQ(m[0 * 4 + 2], 0);
  EXPECT_EQ(m[3 * 4 + 2], 1);
}

TEST(SpecPreset, EveryNameBuilds) {
  for (const auto& n : specPresetNames()) EXPECT_NO_THROW(makeSpecPreset(n)) << n;
  EXPECT_EQ(makeSpecPreset("skip_right").variant, Variant::Thsa);
  EXPECT_EQ(makeSpecPreset("core:mhsa").core->preset, "mhsa");
  EXPECT_EQ(makeSpecPreset("mhsa").variant, Variant::Mhsa);
  EXPECT_FALSE(makeSpecPreset("mhsa").core.has_value());
  EXPECT_EQ(makeSpecPreset("heads_only").sizes.D, 1);
  EXPECT_EQ(makeSpecPreset("heads_only").sizes.R, 4);
  EXPECT_THROW(makeSpecPreset("nope"), std::invalid_argument);
}

TEST(CorePreset, LowRankIsMhsaWrittenAsUVTransposed) {
  const int H = 4, D = 3, R = 12;
  const auto c = makeCorePreset("low_rank", H, D);
  EXPECT_EQ(c.structure, CoreStructure::LowRank);
  EXPECT_EQ(c.rank, H);
  // U·Vᵀ = H^¼·H^¼·(I ⊗ 11ᵀ): √H up to rounding of the fourth root.
  const auto C = materializeCore(c, H, D, R), M = materializeCore(makeCorePreset("mhsa", H, D), H, D, R);
  for (size_t i = 0; i < C.size(); ++i) EXPECT_NEAR(C[i], M[i], 1e-15) << i;
  EXPECT_EQ(c.trainableCount(H, D, R), 2 * R * H);
  EXPECT_FALSE(c.isFrozen());
  for (auto m : coreTrainableEntries(c, H, D, R)) EXPECT_EQ(m, 1);
}

TEST(CorePreset, LowRankAboveHStartsAtMhsaWithMovableExtraColumns) {
  // Extra columns: zero in U (C unchanged at init), nonzero in V (so ∂U ≠ 0 and they can learn).
  const int H = 2, D = 3, R = 6, rank = 4;
  const auto c = makeLowRankCore(H, D, rank);
  EXPECT_EQ(c.preset, "custom");
  const auto C0 = materializeCore(c, H, D, R), M = materializeCore(makeCorePreset("mhsa", H, D), H, D, R);
  for (size_t i = 0; i < C0.size(); ++i) EXPECT_NEAR(C0[i], M[i], 1e-15) << i;
  double vExtra = 0;
  for (int r = 0; r < R; ++r)
    for (int j = H; j < rank; ++j) {
      EXPECT_EQ(c.u_values[static_cast<size_t>(r) * rank + j], 0.0);
      vExtra += std::abs(c.v_values[static_cast<size_t>(r) * rank + j]);
    }
  EXPECT_GT(vExtra, 0.0);
  // Below H the core keeps the first heads' blocks: C has stable-rank-sized support.
  const auto low = makeLowRankCore(4, 2, 1);
  const auto C = materializeCore(low, 4, 2, 8);
  EXPECT_NEAR(at(C, 8, 0, 1), 2.0, 1e-15);  // √H on head 0's block
  EXPECT_DOUBLE_EQ(at(C, 8, 2, 2), 0.0);  // head 1 has no column
}
