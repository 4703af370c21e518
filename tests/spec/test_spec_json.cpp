#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "spec/spec_json.h"
#include "spec/validation.h"

using namespace tensorscope::spec;

namespace {
std::vector<Issue> issuesOf(const std::string& text) {
  try {
    fromJson(text);
  } catch (const SpecError& e) {
    return e.issues();
  }
  return {};
}
bool mentions(const std::vector<Issue>& issues, const std::string& field, const std::string& text) {
  for (const auto& i : issues)
    if (i.field == field && i.message.find(text) != std::string::npos) return true;
  return false;
}
}  // namespace

TEST(SpecJson, EveryPresetRoundTrips) {
  for (const auto& n : specPresetNames()) {
    const auto s = makeSpecPreset(n);
    const auto back = fromJson(toJson(s));
    EXPECT_EQ(back, s) << n;
    EXPECT_EQ(toJson(back), toJson(s)) << n;
  }
}

TEST(SpecJson, CustomCoresRoundTrip) {
  auto s = makeSpecPreset("thsa");
  s.sizes = {16, 2, 2, 4, 2, 2, 8};
  s.core->preset = "custom";
  s.core->dense_values = {1, 0, 0.5, 0, 0, 1, 0, 0, 0, 0, 1, -2, 0, 0, 0, 1};
  s.core->trainable_mask = {1, 0, 1, 0, 0, 1, 0, 0, 0, 0, 1, 1, 0, 0, 0, 1};
  EXPECT_EQ(fromJson(toJson(s)), s);
  auto k = makeSpecPreset("skip_left");
  k.core->preset = "custom";
  k.core->scale = 0.5;
  k.core->a = {FactorKind::Fixed, std::vector<double>(16, 0.25), true};
  k.core->b.trainable_rank1 = false;
  EXPECT_EQ(fromJson(toJson(k)), k);
}

TEST(SpecJson, PresetOnlyCoreExpandsForTheSizes) {
  const auto s = fromJson(R"({"format":"tensorscope.attention_spec","version":1,"variant":"thsa",
    "sizes":{"F":32,"H":2,"D":4,"R":8},"core":{"preset":"skip_right"}})");
  ASSERT_TRUE(s.core);
  EXPECT_EQ(s.core->a.values.size(), 4u);
  EXPECT_TRUE(validate(s).empty());
}

TEST(SpecJson, RejectsMalformedJsonWithPosition) {
  const auto issues = issuesOf("{\"format\": ");
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_NE(issues[0].message.find("malformed JSON"), std::string::npos);
}

TEST(SpecJson, RejectsUnknownVersionAndFormat) {
  auto issues = issuesOf(R"({"format":"tensorscope.attention_spec","version":7,"variant":"mhsa"})");
  EXPECT_TRUE(mentions(issues, "version", "unsupported version 7"));
  issues = issuesOf(R"({"format":"other","variant":"mhsa"})");
  EXPECT_TRUE(mentions(issues, "format", "expected"));
  EXPECT_TRUE(mentions(issues, "version", "missing"));
}

TEST(SpecJson, ReportsAllFieldProblemsAtOnce) {
  const auto issues = issuesOf(R"({"format":"tensorscope.attention_spec","version":1,"variant":"mhsa",
    "sizes":{"F":"big","H":2.5,"Q":3},"causal":"yes","caual":true})");
  EXPECT_TRUE(mentions(issues, "sizes.F", "whole number"));
  EXPECT_TRUE(mentions(issues, "sizes.H", "whole number; got the number 2.5"));
  EXPECT_TRUE(mentions(issues, "sizes.Q", "unknown field"));
  EXPECT_TRUE(mentions(issues, "causal", "true or false"));
  EXPECT_TRUE(mentions(issues, "caual", "unknown field"));
  EXPECT_EQ(issues.size(), 5u);
}

TEST(SpecJson, RejectsBadVariantAndCoreShapes) {
  EXPECT_TRUE(mentions(issuesOf(R"({"format":"tensorscope.attention_spec","version":1,"variant":"mhsx"})"),
                       "variant", "unknown variant 'mhsx'"));
  const auto issues = issuesOf(R"({"format":"tensorscope.attention_spec","version":1,"variant":"thsa",
    "core":{"structure":"kronecker","A":{"kind":"fixed","values":[[1,2],[3]]},"B":{"kind":"sideways"}}})");
  EXPECT_TRUE(mentions(issues, "core.A.values", "row 1 has 1 entries"));
  EXPECT_TRUE(mentions(issues, "core.B.kind", "unknown factor kind 'sideways'"));
}

TEST(SpecJson, MissingFieldsTakeVariantDefaults) {
  const auto s = fromJson(R"({"format":"tensorscope.attention_spec","version":1,"variant":"dimwise"})");
  EXPECT_EQ(s, makeSpecPreset("dimwise"));
}

TEST(SpecFile, ReadsWhatToJsonWrote) {
  const auto dir = std::filesystem::temp_directory_path() / "ts_spec_file_test";
  std::filesystem::create_directories(dir);
  const auto path = (dir / "s.json").string();
  const auto s = makeSpecPreset("skip_left");
  std::ofstream(path) << toJson(s) << "\n";
  EXPECT_EQ(readSpecFile(path), s);
  std::filesystem::remove_all(dir);
}

TEST(SpecFile, MissingFileSaysWhy) {
  try {
    readSpecFile("/nonexistent/dir/spec.json");
    FAIL();
  } catch (const SpecError& e) {
    EXPECT_NE(std::string(e.what()).find("No such file"), std::string::npos) << e.what();
  }
}

TEST(SpecJson, LowRankCoreRoundTripsAndIsChecked) {
  auto s = makeSpecPreset("low_rank");
  s.core = makeLowRankCore(s.sizes.H, s.sizes.D, 6);
  s.core->u_values[3] = -0.75;
  s.core->factors_trainable = false;
  EXPECT_EQ(fromJson(toJson(s)), s);
  const std::string head = R"({"format":"tensorscope.attention_spec","version":1,"variant":"thsa",
    "sizes":{"F":16,"H":2,"D":2,"R":4},"core":)";
  EXPECT_TRUE(mentions(issuesOf(head + R"({"structure":"low_rank","U":[[1],[1],[1],[1]],"V":[[1],[1],[1],[1]]}})"),
                       "core.rank", "needs \"rank\""));
  // Sizes are the validator's (the reader checks form, validate() the shapes against R).
  const auto wrongU = fromJson(head + R"({"structure":"low_rank","rank":2,"U":[[1],[1],[1],[1]],"V":[[1,0],[1,0],[1,0],[1,0]]}})");
  EXPECT_TRUE(mentions(validate(wrongU), "core.U", "R*rank = 8 values"));
  EXPECT_TRUE(validate(wrongU).size() == 1u) << formatIssues(validate(wrongU));
  EXPECT_TRUE(mentions(validate(fromJson(head + R"({"structure":"low_rank","rank":9,"U":[[1]],"V":[[1]]}})")),
                       "core.rank", "rank must be in [1, R]"));
  EXPECT_TRUE(mentions(issuesOf(head + R"({"structure":"low_rank","rank":1,"U":[[1],[1],[1],[1]],"V":[[1],[1],[1],[1]],"scale":2}})"),
                       "core", "not A, B, scale or values"));
  EXPECT_TRUE(mentions(issuesOf(head + R"({"structure":"dense","rank":1,"values":[[1,0,0,0],[0,1,0,0],[0,0,1,0],[0,0,0,1]]}})"),
                       "core", "belong to structure low_rank"));
}
