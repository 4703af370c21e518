// Seeds until settled (issue 37; docs/sweeps.md, Seeds until settled): rounds decided from results
// written by hand into a planned sweep, so every verdict sequence is known in advance.
#include <gtest/gtest.h>

#include "csv_test_util.h"

#include <filesystem>
#include <nlohmann/json.hpp>

#include "error_of.h"
#include "files/atomic_file.h"
#include "files/read_file.h"
#include "model_core/sweep.h"
#include "../training/training_test_util.h"

namespace tensorscope::model_core {
namespace {

using nlohmann::json;
using test::errorOf;
using testing::TempDir;
using testing::tinyRun;

json designValue(const std::string& label, const std::string& variant, double lr) {
  json set = {{"model.attention.variant", variant}, {"model.attention.sizes.R", 16}, {"train.lr", lr}};
  set["model.attention.core"] = variant == "mhsa" ? json() : json{{"preset", "thsa"}};
  return {{"label", label}, {"set", set}};
}

/// mhsa (the baseline), thsa and mhsa at another learning rate, on the loss, seeds 1 and 2.
SweepPlan plan(const TempDir& tmp) {
  const json j = {{"format", "tensorscope.sweep"},
                  {"version", 1},
                  {"name", "settle"},
                  {"base", json::parse(runConfigToJson(tinyRun("mhsa", 20)))},
                  {"axes", {{{"name", "design"},
                             {"values", {designValue("mhsa", "mhsa", 0.001), designValue("thsa", "thsa", 0.001),
                                         designValue("lr2", "mhsa", 0.002)}}}}},
                  {"seeds", {1, 2}},
                  {"budget", {{"steps", 12}}},
                  {"metric", "loss"}};
  const auto sweep = sweepFromJson(j.dump());
  writeSweepDirectory(tmp.path("sw"), sweep, expandSweep(sweep));
  return readSweepPlan(tmp.path("sw"));
}

void finish(const SweepPlan& p, const Trial& t, double loss) {
  TrialResult r;
  r.status = "finished";
  r.steps = 12;
  r.final_metric = loss;
  r.best_metric = loss;
  r.best_step = 12;
  r.tokens_per_second = 1000;
  files::writeFileAtomically(p.trialDir(t) + "/result.json", trialResultToJson(r));
}

/// The synthetic results: mhsa ends at 2.3 or 2.4 (odd, even seeds), thsa 1.3 lower (a clear
/// difference from two seeds on), lr2 at mhsa's other value (differences ±0.1 that never settle).
double lossOf(const Trial& t) {
  const double mhsa = t.seed % 2 ? 2.3 : 2.4;
  if (t.design == "thsa") return mhsa - 1.3;
  if (t.design == "lr2") return t.seed % 2 ? 2.4 : 2.3;
  return mhsa;
}

void finishAll(const SweepPlan& p) {
  for (const auto& t : p.trials)
    if (trialStatus(p, t).state != TrialState::Finished) finish(p, t, lossOf(t));
}

// Rule: alpha 0.05, at most 5 seeds from 2: looks 4, each at 0.0125. At n = 2 thsa against mhsa:
// differences (-1.3, -1.3): Welch se = sqrt(0.005/2 + 0.005/2) = 0.0707, t = -18.38, df = 2,
// p = 0.00295; lr2: mean difference 0 -> p = 1. Holm over 2: thsa 2 x 0.00295 = 0.0059 <= 0.0125:
// settled at 2 seeds. lr2 stays open: rounds 1, 2, 3 add seeds 3, 4, 5 to lr2 and mhsa (its
// baseline), then lr2 is at the cap and no round follows.
TEST(SettleRounds, SeedsGoToTheOpenVerdictsAndTheirBaselinesUntilTheCap) {
  TempDir tmp("settle_rounds");
  auto p = plan(tmp);
  recordSettleRule(p, {0.05, 5, 2});
  ASSERT_TRUE(p.settle);
  EXPECT_EQ(p.settle->looks(), 4);
  EXPECT_DOUBLE_EQ(p.settle->alphaPerLook(), 0.0125);
  for (int round = 1; round <= 3; ++round) {
    finishAll(p);
    const auto r = planSettleRound(p, buildReport(p));
    EXPECT_EQ(r.round, round);
    EXPECT_EQ(r.seed, std::uint64_t(2 + round));
    ASSERT_EQ(r.settled, std::vector<std::string>{"thsa"});
    ASSERT_EQ(r.open, std::vector<std::string>{"lr2"});
    ASSERT_EQ(r.added.size(), 2u);
    EXPECT_EQ(r.added[0].design, "mhsa");  // the baseline, in the plan's design order
    EXPECT_EQ(r.added[1].design, "lr2");
    const auto first = std::int64_t(6 + 2 * (round - 1));
    EXPECT_EQ(r.added[0].index, first);
    EXPECT_EQ(r.added[0].name, (first < 10 ? "00" : "0") + std::to_string(first) + "-mhsa-s" + std::to_string(2 + round));
    EXPECT_EQ(r.added[1].config.train.seed, std::uint64_t(2 + round));
    EXPECT_EQ(r.added[1].config.train.lr, 0.002);
    EXPECT_EQ(r.added[1].round, round);
    extendSweepPlan(p, r.added);
    // Read back the fast way (plan.check) and the slow way (the expansion plus the derived seeds).
    const auto fast = readSweepPlan(p.dir);
    std::filesystem::remove(p.dir + "/plan.check");
    const auto slow = readSweepPlan(p.dir);
    ASSERT_EQ(fast.trials.size(), p.trials.size());
    ASSERT_EQ(slow.trials.size(), p.trials.size());
    EXPECT_EQ(planToJson(slow.sweep, slow.trials), planToJson(p.sweep, p.trials));
    EXPECT_EQ(fast.trials.back().round, round);
    ASSERT_TRUE(slow.settle);
    EXPECT_EQ(slow.settle->max_seeds, 5);
  }
  finishAll(p);
  const auto report = buildReport(p);
  const auto last = planSettleRound(p, report);
  EXPECT_TRUE(last.added.empty());
  EXPECT_EQ(last.at_cap, std::vector<std::string>{"lr2"});
  EXPECT_EQ(report.alpha, 0.0125);
  ASSERT_EQ(report.designs.size(), 3u);
  EXPECT_EQ(report.designs[0].trials, 5);
  EXPECT_EQ(report.designs[1].settle_state, "settled");
  EXPECT_EQ(report.designs[1].trials, 2);
  EXPECT_EQ(report.designs[2].settle_state, "cap");
  EXPECT_EQ(report.designs[2].trials, 5);
  // thsa's 2 seeds pair with mhsa's seeds 1 and 2; lr2's 5 with mhsa's 5.
  EXPECT_EQ(report.designs[1].comparison->pairs, 2);
  EXPECT_EQ(report.designs[2].comparison->pairs, 5);
  const std::string md = formatReport(report, "md");
  EXPECT_NE(md.find("### Seeds until settled"), std::string::npos);
  EXPECT_NE(md.find("looked at, at most, 4 times; each look decides at alpha / 4 = 0.0125"), std::string::npos);
  EXPECT_NE(md.find("| thsa | 2 | lower loss than mhsa, p = 0.0059 | settled at n = 2 |"), std::string::npos) << md;
  EXPECT_NE(md.find("| lr2 | 5 | no difference established at n = 5 | open at the cap (n = 5) |"), std::string::npos) << md;
  const std::string csv = formatReport(report, "csv");
  EXPECT_NE(csv.find(",verdict,seeds_taken,settle\n"), std::string::npos);
  EXPECT_NE(csv.find(",2,settled\n"), std::string::npos);
  const auto counts = test::csvFieldCounts(csv);  // every row as wide as the header, the baseline's too
  for (const auto n : counts) EXPECT_EQ(n, counts[0]) << csv;
  EXPECT_NE(csv.find(",5,cap\n"), std::string::npos);
  const auto j = json::parse(formatReport(report, "json"));
  EXPECT_EQ(j["until_settled"]["looks"], 4);
  EXPECT_EQ(j["until_settled"]["alpha_per_look"], 0.0125);
  EXPECT_EQ(j["designs"][1]["settle"]["state"], "settled");
  EXPECT_EQ(j["designs"][2]["settle"]["seeds"], 5);
  EXPECT_FALSE(j["designs"][0].contains("settle"));  // the baseline has no verdict of its own
  const std::string latex = formatReport(report, "latex");
  EXPECT_NE(latex.find("lr2 & 5 & open at the cap (n = 5) \\\\"), std::string::npos) << latex;
}

// A design that is still open below the cap is said so while rounds go on.
TEST(SettleRounds, AnUnfinishedSequenceSaysMoreSeedsAreToCome) {
  TempDir tmp("settle_open");
  auto p = plan(tmp);
  recordSettleRule(p, {0.05, 6, 2});
  finishAll(p);
  const auto report = buildReport(p);
  EXPECT_EQ(report.designs[2].settle_state, "open");
  EXPECT_NE(formatReport(report, "md").find("| lr2 | 2 | no difference established at n = 2 | open (n = 2, more seeds to come) |"),
            std::string::npos);
}

// The rule a sweep was run under is kept: another alpha or cap once seeds were added is refused
// (its error bound would be untrue); the same rule again is fine; a damaged settle.json is named.
TEST(SettleRounds, TheRuleOfASequenceCannotChangeOnceSeedsWereAdded) {
  TempDir tmp("settle_rule");
  auto p = plan(tmp);
  recordSettleRule(p, {0.05, 5, 2});
  recordSettleRule(p, {0.01, 8, 2});  // no round yet: a new rule replaces it
  EXPECT_EQ(p.settle->alpha, 0.01);
  finishAll(p);
  extendSweepPlan(p, planSettleRound(p, buildReport(p)).added);
  EXPECT_NO_THROW(recordSettleRule(p, {0.01, 8, 2}));
  const auto e = errorOf([&] { recordSettleRule(p, {0.05, 8, 2}); });
  EXPECT_NE(e.find("at alpha 0.01 and at most 8 seeds (settle.json)"), std::string::npos) << e;
  EXPECT_NE(e.find("error bound untrue"), std::string::npos) << e;
  EXPECT_NE(errorOf([&] { recordSettleRule(p, {0.01, 1, 2}); }).find("below the sweep's own 2 seeds"), std::string::npos);
  files::writeFileAtomically(p.dir + "/settle.json", "{\"format\": \"tensorscope.sweep_settle\", \"version\": 1, \"alpha\": 3}");
  const auto d = errorOf([&] { readSweepPlan(p.dir); });
  EXPECT_NE(d.find("settle.json"), std::string::npos) << d;
  EXPECT_NE(d.find("alpha: must be a number in (0, 0.5]"), std::string::npos) << d;
  EXPECT_NE(d.find("max_seeds"), std::string::npos) << d;
}

// A plan.json whose added trial was edited (another seed than its name says) is refused.
TEST(SettleRounds, AnEditedAddedTrialIsRefused) {
  TempDir tmp("settle_edit");
  auto p = plan(tmp);
  recordSettleRule(p, {0.05, 5, 2});
  finishAll(p);
  extendSweepPlan(p, planSettleRound(p, buildReport(p)).added);
  auto j = json::parse(files::readBoundedFile(p.dir + "/plan.json"));
  j["trials"][6]["seed"] = 9;
  files::writeFileAtomically(p.dir + "/plan.json", j.dump(2));
  EXPECT_NE(errorOf([&] { readSweepPlan(p.dir); }).find("does not match sweep.json"), std::string::npos);
}

}  // namespace
}  // namespace tensorscope::model_core
