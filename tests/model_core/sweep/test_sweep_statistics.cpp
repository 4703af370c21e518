// The statistics of sweep reports (issue 37; docs/sweeps.md, Statistics) through the whole report:
// results written by hand into a planned sweep, every number checked against values computed by
// hand (the formulas are in the comments; tests/stats checks the functions themselves).
#include <gtest/gtest.h>

#include "csv_test_util.h"

#include <cmath>
#include <nlohmann/json.hpp>

#include "error_of.h"
#include "files/atomic_file.h"
#include "model_core/sweep.h"
#include "../training/training_test_util.h"

namespace tensorscope::model_core {
namespace {

using nlohmann::json;
using test::errorOf;
using testing::TempDir;
using testing::tinyRun;

json designValue(const std::string& label, const std::string& variant, double lr = 0.001) {
  json set = {{"model.attention.variant", variant}, {"model.attention.sizes.R", 16}, {"train.lr", lr}};
  set["model.attention.core"] = variant == "mhsa" ? json() : json{{"preset", "thsa"}};
  return {{"label", label}, {"set", set}};
}

/// MHSA against dense THSA (and optionally MHSA at another learning rate), compared on the loss.
json statsSweep(std::vector<int> seeds, bool third = false) {
  json values = {designValue("mhsa", "mhsa"), designValue("thsa", "thsa")};
  if (third) values.push_back(designValue("mhsa-lr2", "mhsa", 0.002));
  return {{"format", "tensorscope.sweep"},
          {"version", 1},
          {"name", "duel"},
          {"base", json::parse(runConfigToJson(tinyRun("mhsa", 20)))},
          {"axes", {{{"name", "design"}, {"values", values}}}},
          {"seeds", seeds},
          {"budget", {{"steps", 12}}},
          {"metric", "loss"}};
}

SweepPlan plan(const TempDir& tmp, const json& sweepJson) {
  const auto sweep = sweepFromJson(sweepJson.dump());
  writeSweepDirectory(tmp.path("sw"), sweep, expandSweep(sweep));
  return readSweepPlan(tmp.path("sw"));
}

/// Writes a finished result with this final loss (the report reads nothing else of it).
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

// The worked example of docs/sweeps.md (and tests/stats WorkedThreeSeedExample): over seeds 1, 2, 3
// mhsa ends at (2.3, 2.4, 2.5), thsa at (2.0, 2.2, 2.1). Paired differences (-0.3, -0.2, -0.4):
// mean -0.3, s_d = 0.1, interval -0.3 ± 4.3026527 * 0.1/sqrt(3) = [-0.5484138, -0.0515862].
// Welch: t = -0.3 / sqrt(0.02/3) = -3.6742346, df = 4, p = 0.0213116. Sign flip: 2/8 = 0.25. Three
// pairs are fewer than the 6 the sign-flip test needs to reach 0.05 (2/2^5 = 0.0625), so Welch's p
// decides; one comparison: Holm leaves it as it is. 0.0213 <= 0.05: "lower loss than mhsa, p = 0.021".
// Each design's interval of the mean: mhsa 2.4 ± 4.3026527 * 0.1/sqrt(3) = [2.1515862, 2.6484138].
TEST(SweepStatistics, TheWorkedThreeSeedExampleInEveryFormat) {
  TempDir tmp("sweep_stats_worked");
  const auto p = plan(tmp, statsSweep({1, 2, 3}));
  const double losses[] = {2.3, 2.4, 2.5, 2.0, 2.2, 2.1};
  for (std::size_t i = 0; i < 6; ++i) finish(p, p.trials[i], losses[i]);
  const auto r = buildReport(p);
  ASSERT_EQ(r.designs.size(), 2u);
  ASSERT_TRUE(r.baseline);
  EXPECT_EQ(r.baseline->axis, "design");
  EXPECT_EQ(r.baseline->label, "mhsa");  // the first value of the first axis
  EXPECT_EQ(r.alpha, 0.05);
  const auto& m = r.designs[0];
  EXPECT_TRUE(m.is_baseline);
  EXPECT_FALSE(m.comparison);
  EXPECT_NEAR(m.ci_low, 2.1515862, 1e-7);
  EXPECT_NEAR(m.ci_high, 2.6484138, 1e-7);
  ASSERT_EQ(m.seed_values.size(), 3u);
  EXPECT_EQ(m.seed_values[2].first, 3u);
  EXPECT_EQ(m.seed_values[2].second, 2.5);
  ASSERT_TRUE(r.designs[1].comparison);
  const auto& c = *r.designs[1].comparison;
  EXPECT_EQ(c.baseline, "mhsa");
  EXPECT_EQ(c.n, 3);
  EXPECT_EQ(c.pairs, 3);
  EXPECT_TRUE(c.tested);
  EXPECT_TRUE(c.paired);
  EXPECT_NEAR(c.difference, -0.3, 1e-12);
  EXPECT_NEAR(c.ci_low, -0.5484138, 1e-7);
  EXPECT_NEAR(c.ci_high, -0.0515862, 1e-7);
  EXPECT_NEAR(c.welch_t, -3.6742346, 1e-7);
  EXPECT_NEAR(c.welch_df, 4, 1e-9);
  EXPECT_NEAR(c.welch_p, 0.0213116, 1e-7);
  ASSERT_TRUE(c.sign_flip_p);
  EXPECT_DOUBLE_EQ(*c.sign_flip_p, 0.25);
  EXPECT_EQ(c.decided_by, "welch");
  EXPECT_NEAR(c.p_holm, 0.0213116, 1e-7);
  EXPECT_EQ(c.direction, -1);
  EXPECT_EQ(c.verdict, "lower loss than mhsa, p = 0.021");
  EXPECT_EQ(r.comparisons_tested, 1);

  const auto md = formatReport(r, "md");
  EXPECT_NE(md.find("| [2.1516, 2.6484] |"), std::string::npos) << md;
  EXPECT_NE(md.find("### Against the baseline"), std::string::npos) << md;
  EXPECT_NE(md.find("The sign-flip test decides where there are at least 6 pairs"), std::string::npos) << md;
  EXPECT_NE(md.find("| thsa | mhsa | 3 vs 3 (3 paired) | -0.3000 [-0.5484, -0.0516] paired | 0.021 | 0.25 | welch | 0.021 | "
                    "lower loss than mhsa, p = 0.021 |"),
            std::string::npos)
      << md;
  const auto csv = formatReport(r, "csv");
  EXPECT_NE(csv.find(",loss_ci95_low,loss_ci95_high,baseline,pairs,difference,difference_ci95_low,difference_ci95_high,"
                     "welch_t,welch_df,welch_p,sign_flip_p,decided_by,p_holm,verdict\n"),
            std::string::npos) << csv;
  // The baseline row: "baseline" and eleven empty cells up to verdict, as many fields as the header
  // (before, one more: a reader took the row as one column longer than its header).
  EXPECT_NE(csv.find(",2.15159,2.64841,baseline,,,,,,,,,,,\n"), std::string::npos) << csv;
  const auto counts = test::csvFieldCounts(csv);
  ASSERT_EQ(counts.size(), 3u);
  EXPECT_EQ(counts[0], 23u);
  for (const auto n : counts) EXPECT_EQ(n, counts[0]) << csv;
  EXPECT_NE(csv.find("\nthsa," + std::to_string(r.designs[1].attention_parameters) + ",3,3,2.1,0.1,2.1,12,1000,1.85159,2.34841,mhsa,3,-0.3,-0.548414,-0.0515862,-3.67423,4,"
                     "0.0213116,0.25,welch,0.0213116,\"lower loss than mhsa, p = 0.021\"\n"),
            std::string::npos)
      << csv;
  const auto tex = formatReport(r, "latex");
  EXPECT_NE(tex.find("thsa & mhsa & $-0.3000$ [$-0.5484$, $-0.0516$] & 0.021 & 0.25 & 0.021 & lower loss than mhsa, p = 0.021 \\\\"),
            std::string::npos) << tex;
  const auto js = json::parse(formatReport(r, "json"));
  EXPECT_EQ(js["alpha"], 0.05);
  EXPECT_EQ(js["baseline"]["label"], "mhsa");
  EXPECT_EQ(js["comparisons_tested"], 1);
  EXPECT_TRUE(js["designs"][0]["is_baseline"].get<bool>());
  EXPECT_TRUE(js["designs"][0]["comparison"].is_null());
  EXPECT_NEAR(js["designs"][0]["ci95"][0].get<double>(), 2.1515862, 1e-7);
  EXPECT_EQ(js["designs"][0]["seed_values"][1]["seed"], 2);
  const auto& jc = js["designs"][1]["comparison"];
  EXPECT_EQ(jc["verdict"], "lower loss than mhsa, p = 0.021");
  EXPECT_EQ(jc["decided_by"], "welch");
  EXPECT_NEAR(jc["welch"]["p"].get<double>(), 0.0213116, 1e-7);
  EXPECT_NEAR(jc["difference_ci95"][1].get<double>(), -0.0515862, 1e-7);
  EXPECT_EQ(jc["sign_flip_p"], 0.25);
  EXPECT_NEAR(js["designs"][1]["mean"].get<double>(), 2.1, 1e-12);  // the old fields stay

  const auto svg = reportFigureSvg(r, "design");
  EXPECT_NE(svg.find(">thsa: lower loss than mhsa, p = 0.021</text>"), std::string::npos) << svg;
  EXPECT_NE(svg.find("mean and 95% CI over seeds"), std::string::npos);
  EXPECT_NE(svg.find("height='580'"), std::string::npos);  // the size of every report figure: the panels make room
  // One verdict line and its heading: the panels start 16 * 2 + 6 = 38 below 50 and are as much shorter.
  EXPECT_NE(svg.find("<rect x='80' y='88' width='470' height='362'"), std::string::npos) << svg;
  std::size_t bars = 0;
  for (auto at = svg.find("stroke-width='1.5'/>"); at != std::string::npos; at = svg.find("stroke-width='1.5'/>", at + 1)) ++bars;
  EXPECT_EQ(bars, 2u);
}

// Six seeds and two designs against mhsa. thsa is lower by (0.3, 0.2, 0.4, 0.25, 0.35, 0.3): six
// pairs of one sign, sign-flip p = 2/64 = 0.03125, and six pairs reach 0.05, so the sign-flip test
// decides. mhsa-lr2 differs by (+0.1, -0.1, +0.1, -0.1, +0.1, +0.1): observed sum 0.2; every signed
// sum is 0.1 (2k - 6) for k plus signs, |2k - 6| >= 2 for k in {0, 1, 2, 4, 5, 6}: C(6,k) = 1 + 6 +
// 15 + 15 + 6 + 1 = 44 of 64, p = 0.6875. Holm over m = 2: 0.03125 * 2 = 0.0625 and max(0.0625,
// 0.6875 * 1) = 0.6875. At alpha 0.05 thsa's difference is not established after the correction;
// at alpha 0.1 it is ("p = 0.062": the Holm-adjusted p).
TEST(SweepStatistics, TheSignFlipTestDecidesWithEnoughPairsAndHolmCorrects) {
  const std::vector<int> seeds{1, 2, 3, 4, 5, 6};
  const std::vector<double> base{2.30, 2.40, 2.50, 2.35, 2.45, 2.55}, lower{0.3, 0.2, 0.4, 0.25, 0.35, 0.3},
      mixed{0.1, -0.1, 0.1, -0.1, 0.1, 0.1};
  for (const double alpha : {0.05, 0.1}) {
    TempDir tmp("sweep_stats_holm");
    auto j = statsSweep(seeds, true);
    if (alpha != 0.05) j["alpha"] = alpha;
    const auto p = plan(tmp, j);
    for (std::size_t s = 0; s < 6; ++s) {
      finish(p, p.trials[s], base[s]);
      finish(p, p.trials[6 + s], base[s] - lower[s]);
      finish(p, p.trials[12 + s], base[s] + mixed[s]);
    }
    const auto r = buildReport(p);
    EXPECT_EQ(r.alpha, alpha);
    EXPECT_EQ(r.comparisons_tested, 2);
    const auto& t = *r.designs[1].comparison;
    const auto& l = *r.designs[2].comparison;
    EXPECT_EQ(t.decided_by, "sign-flip");
    EXPECT_EQ(l.decided_by, "sign-flip");
    EXPECT_DOUBLE_EQ(t.p, 0.03125);
    EXPECT_DOUBLE_EQ(l.p, 0.6875);
    EXPECT_DOUBLE_EQ(t.p_holm, 0.0625);
    EXPECT_DOUBLE_EQ(l.p_holm, 0.6875);
    EXPECT_NEAR(t.difference, -0.3, 1e-12);  // mean of (0.3, 0.2, 0.4, 0.25, 0.35, 0.3), negated
    EXPECT_EQ(l.verdict, "no difference established at n = 6");
    if (alpha == 0.05) {
      EXPECT_EQ(t.verdict, "no difference established at n = 6");
      EXPECT_EQ(t.direction, 0);
    } else {
      EXPECT_EQ(t.verdict, "lower loss than mhsa, p = 0.062");
      EXPECT_EQ(t.direction, -1);
      EXPECT_NE(formatReport(r, "md").find("at least 5 pairs (its smallest p, 2/2^n, reaches alpha = 0.1"), std::string::npos);
    }
  }
}

// A failed seed: thsa finished seeds 1 and 2 only, mhsa 1, 2, 3 at (0.5, 0.6, 0.7), thsa at (0.9,
// 0.7). The seeds differ, so the interval is Welch's: difference 0.8 - 0.6 = 0.2, s^2/n = 0.02/2 =
// 0.01 and 0.01/3, se = sqrt(0.04/3) = 0.1154701, t = 1.7320508, df = (0.04/3)^2 / (0.01^2/1 +
// (0.01/3)^2/2) = 1.6842105. The pairs (seeds 1, 2) differ by (0.4, 0.1): sign-flip p 2/4 = 0.5.
// A design with one finished seed is not tested.
TEST(SweepStatistics, UnequalSeedsUseWelchAndOneSeedIsNotTested) {
  TempDir tmp("sweep_stats_welch");
  auto j = statsSweep({1, 2, 3}, true);
  const auto p = plan(tmp, j);
  finish(p, p.trials[0], 0.5);
  finish(p, p.trials[1], 0.6);
  finish(p, p.trials[2], 0.7);
  finish(p, p.trials[3], 0.9);
  finish(p, p.trials[4], 0.7);
  finish(p, p.trials[6], 0.9);  // mhsa-lr2: one seed
  const auto r = buildReport(p);
  const auto& c = *r.designs[1].comparison;
  EXPECT_FALSE(c.paired);
  EXPECT_EQ(c.pairs, 2);
  EXPECT_NEAR(c.difference, 0.2, 1e-12);
  EXPECT_NEAR(c.welch_t, std::sqrt(3.0), 1e-9);
  EXPECT_NEAR(c.welch_df, (0.04 / 3) * (0.04 / 3) / (0.0001 + (0.01 / 3) * (0.01 / 3) / 2), 1e-9);
  const double half = (c.ci_high - c.ci_low) / 2;
  EXPECT_NEAR(c.ci_low + half, 0.2, 1e-12);  // centred on the difference of means
  EXPECT_DOUBLE_EQ(*c.sign_flip_p, 0.5);
  EXPECT_EQ(c.decided_by, "welch");
  EXPECT_EQ(c.verdict, "no difference established at n = 2 and 3");
  const auto& one = *r.designs[2].comparison;
  EXPECT_FALSE(one.tested);
  EXPECT_EQ(one.verdict, "not tested at n = 1 and 3 (two finished seeds of each design are needed)");
  EXPECT_EQ(r.comparisons_tested, 1);  // Holm's family: the tested comparisons only
  EXPECT_NE(formatReport(r, "md").find("| mhsa-lr2 | mhsa | 1 vs 3 (1 paired) | – | – | 1.00 | – | – | not tested"), std::string::npos)
      << formatReport(r, "md");
}

// Two axes: each design is compared with the baseline design of the same learning rate.
TEST(SweepStatistics, EachDesignMeetsTheBaselineWithItsOtherLabels) {
  TempDir tmp("sweep_stats_axes");
  auto j = statsSweep({1, 2});
  j["axes"].push_back({{"path", "train.lr"}, {"values", {0.001, 0.002}}});
  j["baseline"] = {{"axis", "design"}, {"label", "thsa"}};
  const auto p = plan(tmp, j);
  for (const auto& t : p.trials) finish(p, t, 1.0 + 0.1 * double(t.index));
  const auto r = buildReport(p);
  ASSERT_EQ(r.designs.size(), 4u);
  EXPECT_EQ(r.designs[0].design, "mhsa · 0.001");
  ASSERT_TRUE(r.designs[0].comparison);
  EXPECT_EQ(r.designs[0].comparison->baseline, "thsa · 0.001");
  EXPECT_EQ(r.designs[1].comparison->baseline, "thsa · 0.002");
  EXPECT_TRUE(r.designs[2].is_baseline);
  EXPECT_TRUE(r.designs[3].is_baseline);
  // Trials in grid order, seeds innermost: mhsa · 0.001 is (1.0, 1.1), mhsa · 0.002 (1.2, 1.3),
  // thsa · 0.001 (1.4, 1.5), thsa · 0.002 (1.6, 1.7). Each comparison: paired differences (-0.4,
  // -0.4), constant, so the paired interval is [-0.4, -0.4]. Welch: s^2 = 0.005 each, se =
  // sqrt(0.0025 + 0.0025), t = -0.4 / sqrt(0.005) = -sqrt(32), df = 2; p = 1 - sqrt(32)/sqrt(34) =
  // 0.0298575 (two pairs: Welch decides). Holm over the two equal p's: 2p = 0.059715 for both, above
  // 0.05: "no difference established at n = 2".
  const double p2 = 1 - std::sqrt(32.0) / std::sqrt(34.0);
  for (const std::size_t i : {0u, 1u}) {
    const auto& c = *r.designs[i].comparison;
    EXPECT_TRUE(c.paired);
    EXPECT_NEAR(c.difference, -0.4, 1e-12);
    EXPECT_NEAR(c.ci_low, -0.4, 1e-12);
    EXPECT_NEAR(c.ci_high, -0.4, 1e-12);
    EXPECT_NEAR(c.welch_t, -std::sqrt(32.0), 1e-9);
    EXPECT_NEAR(c.welch_df, 2, 1e-9);
    EXPECT_NEAR(c.welch_p, p2, 1e-9);
    EXPECT_NEAR(c.p_holm, 2 * p2, 1e-9);
    EXPECT_EQ(c.verdict, "no difference established at n = 2");
  }
  EXPECT_EQ(r.comparisons_tested, 2);
}

// The figure lists at most six verdicts above its panels, then how many more.
TEST(SweepStatistics, TheFigureCapsItsVerdictLines) {
  SweepReport r;
  r.name = "many";
  r.metric = "loss";
  r.split = "validation";
  for (int i = 0; i < 9; ++i) {
    DesignSummary d;
    d.design = std::string(1, 'd') + char('0' + i);  // (not "d" + to_string: GCC 12 warns there once inlined)
    d.attention_parameters = 1000 + 10 * i;
    d.trials = d.finished = 2;
    d.mean = 1.0 + 0.01 * i, d.std = 0.01, d.ci_low = d.mean - 0.1, d.ci_high = d.mean + 0.1;
    if (i == 0) {
      d.is_baseline = true;
    } else {
      d.comparison = DesignComparison{};
      d.comparison->baseline = "d0";
      d.comparison->verdict = "no difference established at n = 2";
    }
    r.designs.push_back(d);
  }
  const auto svg = reportFigureSvg(r, "parameters");
  EXPECT_NE(svg.find(">d6: no difference established at n = 2</text>"), std::string::npos);
  EXPECT_EQ(svg.find(">d7: "), std::string::npos);
  EXPECT_NE(svg.find(">… and 2 more (see the report)</text>"), std::string::npos) << svg;
  // Seven lines and the heading: the panels start 16 * 8 + 6 = 134 below 50 and are as much shorter.
  EXPECT_NE(svg.find("<rect x='80' y='184' width='470' height='266'"), std::string::npos);
  // The panels' turned labels stay beside their 266 px: at 7.2 px a character the curve panel's
  // "loss (validation), mean over the seeds at each step" (366 px) reached 50 px above its panel,
  // over the last verdict line (seen in the TPA table's figure); it is two lines now.
  const std::string open = "rotate(-90)' text-anchor='middle'>";
  std::vector<std::string> labels;
  for (auto at = svg.find(open); at != std::string::npos; at = svg.find(open, at + 1)) {
    const auto from = at + open.size();
    const auto end = svg.find("</text>", from);
    if (end == std::string::npos) break;
    labels.emplace_back(svg.data() + from, svg.data() + end);
  }
  ASSERT_EQ(labels.size(), 4u) << svg;
  for (const auto& l : labels) EXPECT_LE(7.2 * double(l.size()), 266.0) << l;
  EXPECT_EQ(labels[2], "loss (validation),");
  EXPECT_EQ(labels[3], "mean over the seeds at each step");
}

TEST(SweepStatistics, TheFileKeysAreCheckedAndWrittenOnlyWhenGiven) {
  auto j = statsSweep({1, 2});
  const auto plain = sweepFromJson(j.dump());
  EXPECT_FALSE(plain.baseline);
  EXPECT_EQ(sweepToJson(plain).find("\"alpha\""), std::string::npos);
  EXPECT_EQ(sweepToJson(plain).find("\"baseline\""), std::string::npos);
  j["baseline"] = "thsa";
  j["alpha"] = 0.01;
  const auto s = sweepFromJson(j.dump());
  ASSERT_TRUE(s.baseline);
  EXPECT_EQ(s.baseline->axis, "design");
  EXPECT_EQ(s.baseline->label, "thsa");
  EXPECT_EQ(s.alpha, 0.01);
  const auto again = sweepFromJson(sweepToJson(s));
  EXPECT_EQ(again.baseline->label, "thsa");
  EXPECT_EQ(again.alpha, 0.01);
  j["baseline"] = "gqa";
  j["alpha"] = 0.7;
  const auto e = errorOf([&] { sweepFromJson(j.dump()); });
  EXPECT_NE(e.find("baseline: 'gqa' is not a value of axis 'design' (its values: mhsa, thsa)"), std::string::npos) << e;
  EXPECT_NE(e.find("alpha: must be in (0, 0.5], e.g. 0.05 or 0.01; got 0.7"), std::string::npos) << e;
  j["baseline"] = {{"axis", "colour"}, {"label", "mhsa"}};
  j["alpha"] = "small";
  const auto e2 = errorOf([&] { sweepFromJson(j.dump()); });
  EXPECT_NE(e2.find("baseline.axis: 'colour' is not one of the sweep's axes"), std::string::npos) << e2;
  EXPECT_NE(e2.find("alpha: must be a number"), std::string::npos) << e2;
  // Without a "baseline", the parameter match's reference is the baseline.
  auto m = statsSweep({1});
  m["match_parameters"] = {{"axis", "design"}, {"reference", "thsa"}, {"solve", "rank"}, {"tolerance", 0.5}};
  const auto ms = sweepFromJson(m.dump());
  EXPECT_EQ(baselineOf(ms)->label, "thsa");
}

}  // namespace
}  // namespace tensorscope::model_core
