#include <gtest/gtest.h>

#include <cmath>

#include "spec/attention_spec.h"
#include "spec/validation.h"

using namespace tensorscope::spec;

namespace {
bool hasIssue(const std::vector<Issue>& issues, const std::string& field, const std::string& text) {
  for (const auto& i : issues)
    if (i.field == field && i.message.find(text) != std::string::npos) return true;
  return false;
}
}  // namespace

TEST(Validation, EveryPresetIsValid) {
  for (const auto& n : specPresetNames()) EXPECT_TRUE(validate(makeSpecPreset(n)).empty()) << n << ": " << formatIssues(validate(makeSpecPreset(n)));
}

TEST(Validation, KroneckerNeedsRequalsHD) {
  auto s = makeSpecPreset("skip_right");
  s.sizes.H = 4;
  s.sizes.D = 8;
  s.sizes.R = 24;
  s.core = makeCorePreset("skip_right", 4, 8);
  const auto issues = validate(s);
  EXPECT_TRUE(hasIssue(issues, "sizes.R", "core structure kronecker needs R = H*D; got R=24, H=4, D=8"))
      << formatIssues(issues);
}

TEST(Validation, ReportsEveryProblemNotJustTheFirst) {
  auto s = makeSpecPreset("mhsa");
  s.sizes.F = 0;
  s.sizes.H = -3;
  s.dropout = 1.5;
  const auto issues = validate(s);
  EXPECT_TRUE(hasIssue(issues, "sizes.F", "got 0"));
  EXPECT_TRUE(hasIssue(issues, "sizes.H", "got -3"));
  EXPECT_TRUE(hasIssue(issues, "dropout", "[0, 1)"));
  EXPECT_EQ(issues.size(), 3u);
}

TEST(Validation, CoreOnlyForThsaFamily) {
  auto s = makeSpecPreset("mhsa");
  s.core = makeCorePreset("mhsa", 4, 16);
  EXPECT_TRUE(hasIssue(validate(s), "core", "has no core matrix C"));
  auto t = makeSpecPreset("thsa");
  t.core.reset();
  EXPECT_TRUE(hasIssue(validate(t), "core", "needs a core"));
}

TEST(Validation, FactorValueCountsAndKinds) {
  auto s = makeSpecPreset("skip_right");
  s.core->a.values.pop_back();
  s.core->b.kind = FactorKind::Rank1;  // rank1 without values
  s.core->scale = 0;
  const auto issues = validate(s);
  EXPECT_TRUE(hasIssue(issues, "core.A.values", "needs HxH = 16 values (H=4); got 15"));
  EXPECT_TRUE(hasIssue(issues, "core.B.values", "2*D = 32"));
  EXPECT_TRUE(hasIssue(issues, "core.scale", "non-zero"));
  auto r = makeSpecPreset("skip_right");
  r.core->a.kind = FactorKind::Rank1;
  r.core->a.values.assign(8, 1.0);
  EXPECT_TRUE(hasIssue(validate(r), "core.A.kind", "factor B only"));
}

TEST(Validation, DenseCoreNeedsRSquaredValuesAndMask) {
  auto s = makeSpecPreset("thsa");
  s.core->dense_values.resize(10);
  s.core->trainable_mask.resize(3);
  const auto issues = validate(s);
  EXPECT_TRUE(hasIssue(issues, "core.values", "R*R = 4096"));
  EXPECT_TRUE(hasIssue(issues, "core.trainable", "got 3"));
}

TEST(Validation, HeadsOnlyNeedsDOne) {
  auto s = makeSpecPreset("heads_only");
  s.sizes.D = 2;
  s.sizes.R = 8;
  s.core = makeCorePreset("heads_only", 4, 2);
  EXPECT_TRUE(hasIssue(validate(s), "sizes.D", "needs D = 1"));
}

TEST(Validation, NonFiniteValuesRejected) {
  auto s = makeSpecPreset("thsa");
  s.core->dense_values[5] = std::nan("");
  EXPECT_TRUE(hasIssue(validate(s), "core.values", "finite"));
}

// Issue 18 item 7: values were validated as double but used as float32 (a core value 1e39 or a
// Kronecker scale 1e300 passed and the first checkpoint already held Inf).
TEST(Validation, ValuesMustFitTheFloat32RangeModelsRunIn) {
  auto dense = makeSpecPreset("thsa");
  dense.core->dense_values[3] = 1e39;
  EXPECT_TRUE(hasIssue(validate(dense), "core.values", "beyond the float32 range")) << formatIssues(validate(dense));
  dense.core->dense_values[3] = 3e38;  // just inside
  EXPECT_TRUE(validate(dense).empty()) << formatIssues(validate(dense));

  auto kron = makeSpecPreset("thsa");
  kron.core = makeCorePreset("mhsa", kron.sizes.H, kron.sizes.D);
  ASSERT_EQ(kron.core->structure, CoreStructure::Kronecker);
  kron.core->scale = 1e300;
  EXPECT_TRUE(hasIssue(validate(kron), "core.scale", "beyond the float32 range")) << formatIssues(validate(kron));
  // Finite factors whose product overflows: s = 1e30 with a fixed A holding 1e10.
  kron.core->scale = 1e30;
  kron.core->a.kind = FactorKind::Fixed;
  kron.core->a.values.assign(size_t(kron.sizes.H) * kron.sizes.H, 0.0);
  kron.core->a.values[0] = 1e10;
  EXPECT_TRUE(hasIssue(validate(kron), "core.scale", "reach 1e+40")) << formatIssues(validate(kron));
  kron.core->a.values[0] = 1e5;
  EXPECT_TRUE(validate(kron).empty()) << formatIssues(validate(kron));

  auto lowRank = makeSpecPreset("thsa");
  lowRank.core = makeCorePreset("low_rank", lowRank.sizes.H, lowRank.sizes.D);
  ASSERT_EQ(lowRank.core->structure, CoreStructure::LowRank);
  lowRank.core->u_values.assign(lowRank.core->u_values.size(), 1e20);
  lowRank.core->v_values.assign(lowRank.core->v_values.size(), 1e20);
  EXPECT_TRUE(hasIssue(validate(lowRank), "core.U", "beyond the float32 range")) << formatIssues(validate(lowRank));
}
