// Sweep files, their expansion, the sweep directory and reports (issue 14; model_core/sweep.h).
// Torch-free code: the trials' results here come from metrics logs written by hand, so the
// aggregate numbers are checked against values computed from the equations of mean and std.
#include <gtest/gtest.h>
#include <sys/file.h>
#include <fcntl.h>
#include <unistd.h>

#include <cmath>
#include <fstream>
#include <functional>
#include <set>
#include <nlohmann/json.hpp>

#include "error_of.h"
#include "files/atomic_file.h"
#include "files/read_file.h"
#include "model_core/sweep.h"
#include "spec/cost_model.h"
#include "../training/training_test_util.h"

namespace tensorscope::model_core {
namespace {

using nlohmann::json;
using test::errorOf;
using testing::TempDir;
using testing::tinyRun;

json baseConfig() { return json::parse(runConfigToJson(tinyRun("mhsa", 20))); }

/// MHSA against dense THSA (the Tuformer comparison) and two learning rates, two seeds.
json designSweep() {
  return {{"format", "tensorscope.sweep"},
          {"version", 1},
          {"name", "design space"},
          {"base", baseConfig()},
          {"axes",
           {{{"name", "design"},
             {"values",
              {{{"label", "mhsa"}, {"set", {{"model.attention.variant", "mhsa"}, {"model.attention.core", nullptr},
                                            {"model.attention.sizes.R", 16}}}},
               {{"label", "thsa"},
                {"set", {{"model.attention.variant", "thsa"}, {"model.attention.core", {{"preset", "thsa"}}},
                         {"model.attention.sizes.R", 16}}}}}}},
            {{"path", "train.lr"}, {"values", {0.001, 0.002}}}}},
          {"seeds", {1, 2}},
          {"budget", {{"steps", 12}}},
          {"metric", "accuracy"}};
}

TEST(SweepFile, ExpandsTheGridWithSeedsInnermostAndTheBudgetApplied) {
  const auto sweep = sweepFromJson(designSweep().dump());
  const auto trials = expandSweep(sweep);
  ASSERT_EQ(trials.size(), 8u);
  EXPECT_EQ(trials[0].name, "000-mhsa-0.001-s1");
  EXPECT_EQ(trials[1].name, "001-mhsa-0.001-s2");
  EXPECT_EQ(trials[2].name, "002-mhsa-0.002-s1");
  EXPECT_EQ(trials[7].name, "007-thsa-0.002-s2");
  EXPECT_EQ(trials[7].design, "thsa · 0.002");
  for (const auto& t : trials) {
    EXPECT_EQ(t.config.train.steps, 12);
    EXPECT_EQ(t.config.train.seed, t.seed);
    EXPECT_EQ(t.config.train.lr, t.labels[1].second == "0.001" ? 0.001 : 0.002);
    EXPECT_EQ(t.config.model.attention[0].variant, t.labels[0].second == "mhsa" ? spec::Variant::Mhsa : spec::Variant::Thsa);
    EXPECT_EQ(t.attention_parameters, attentionParameters(t.config));
    // The cost column: 3x the cost model's forward FLOPs of each layer.
    const double fwd = spec::estimateCost(t.config.model.attention[0], t.config.train.batch,
                                          modelSequenceLength(t.config)).forward_flops;
    EXPECT_NEAR(t.attention_gflop_per_step, 3 * 2 * fwd / 1e9, 1e-12);
  }
  // The dense core adds R² = 256 parameters per layer to MHSA's.
  EXPECT_EQ(trials[4].attention_parameters - trials[0].attention_parameters, 2 * 16 * 16);
}

TEST(SweepFile, TheParameterMatchSolvesTheHeadSizeWithinTheTolerance) {
  auto j = designSweep();
  j["match_parameters"] = {{"axis", "design"}, {"reference", "mhsa"}, {"solve", "head_size"}, {"tolerance", 0.2}};
  const auto trials = expandSweep(sweepFromJson(j.dump()));
  ASSERT_EQ(trials.size(), 8u);
  for (std::size_t i = 4; i < 8; ++i) {
    const auto& t = trials[i];
    const auto ref = trials[i - 4].attention_parameters;
    EXPECT_LE(std::abs(double(t.attention_parameters - ref)) / double(ref), 0.2) << t.name;
    EXPECT_EQ(t.matched, "D=" + std::to_string(t.config.model.attention[0].sizes.D));
    EXPECT_EQ(t.config.model.attention[0].sizes.R, 2 * t.config.model.attention[0].sizes.D);  // R = H·D kept
    // No other head size comes closer (the solver's claim, checked by brute force here).
    for (int D = 1; D <= 32; ++D) {
      auto c = t.config;
      c.model.attention[0].sizes.D = D;
      c.model.attention[0].sizes.R = 2 * D;
      c.model.attention[0].core = spec::makeCorePreset("thsa", 2, D);
      EXPECT_GE(std::llabs(attentionParameters(c) - ref), std::llabs(t.attention_parameters - ref)) << "D=" << D;
    }
  }
  EXPECT_TRUE(trials[0].matched.empty());
  // A tolerance no head size meets is refused with the closest candidate and the gap.
  j["match_parameters"]["tolerance"] = 0.0001;
  const auto e = errorOf([&] { expandSweep(sweepFromJson(j.dump())); });
  EXPECT_NE(e.find("trials 004-thsa-0.001-s1, 005-thsa-0.001-s2, 006-thsa-0.002-s1 and 1 more (4 trials): the closest head_size"),
            std::string::npos) << e;
  EXPECT_NE(e.find("the tolerance is 0.01%"), std::string::npos) << e;
}

TEST(SweepFile, EveryProblemIsNamedWithItsField) {
  auto j = designSweep();
  j["colour"] = "red";
  j["axes"][1]["path"] = "train..lr";
  j["axes"][0]["values"][1]["label"] = "mhsa";
  j["seeds"] = {1, 1};
  j["metric"] = "perplexity";
  j["budget"] = {{"steps", 0}};
  j["match_parameters"] = {{"axis", "size"}, {"reference", "mhsa"}};
  const auto e = errorOf([&] { sweepFromJson(j.dump()); });
  for (const char* part :
       {"colour: unknown field \"colour\"", "axes[1].path: 'train..lr' has an empty field name", "'mhsa' labels two values",
        "seeds[1]: repeats seed 1", "metric: must be loss, accuracy or exact_match; got 'perplexity'",
        "budget.steps: must be in [1, 2^40]", "match_parameters.axis: 'size' is not one of the sweep's axes"})
    EXPECT_NE(e.find(part), std::string::npos) << part << "\n" << e;

  EXPECT_NE(errorOf([] { sweepFromJson("{\"format\": \"tensorscope.session\", \"version\": 1}"); }).find("a sweep file starts"),
            std::string::npos);
  EXPECT_NE(errorOf([] { sweepFromJson("{\"format\": "); }).find("malformed JSON"), std::string::npos);
  auto noBase = designSweep();
  noBase.erase("base");
  EXPECT_NE(errorOf([&] { sweepFromJson(noBase.dump()); }).find("give the base run config inline"), std::string::npos);
  auto badBase = designSweep();
  badBase["base"]["train"]["lr"] = "fast";
  EXPECT_NE(errorOf([&] { sweepFromJson(badBase.dump()); }).find("train.lr: must be a number"), std::string::npos);
  // exact_match is a question-answer metric; a split must be one the task evaluates on.
  auto lm = designSweep();
  lm["base"]["task"] = {{"name", "char_lm"}, {"seq_len", 24}};
  lm["metric"] = "exact_match";
  EXPECT_NE(errorOf([&] { sweepFromJson(lm.dump()); }).find("exact_match is measured on question-answer tasks"),
            std::string::npos);
  auto split = designSweep();
  split["metric"] = {{"name", "loss"}, {"split", "extrapolation"}};
  EXPECT_NE(errorOf([&] { sweepFromJson(split.dump()); }).find("task copy evaluates on validation, not 'extrapolation'"),
            std::string::npos);
  // A grid beyond the bound is refused before it is expanded.
  auto big = designSweep();
  json many = json::array();
  for (int i = 0; i < 100; ++i) many.push_back(i + 1);
  big["seeds"] = many;
  big["axes"][1]["values"] = json::array();
  for (int i = 0; i < 50; ++i) big["axes"][1]["values"].push_back(0.001 * (i + 1));
  EXPECT_NE(errorOf([&] { sweepFromJson(big.dump()); }).find("expand to more than 4096 trials"), std::string::npos);
}

TEST(SweepFile, AValueThatBreaksTheConfigIsRefusedWithItsTrial) {
  auto j = designSweep();
  j["axes"][1] = {{"path", "train.batch"}, {"values", {4, -1}}};
  const auto e = errorOf([&] { expandSweep(sweepFromJson(j.dump())); });
  // Said once for the four trials with the bad value, not four times.
  EXPECT_NE(e.find("trials 002-mhsa--1-s1, 003-mhsa--1-s2, 006-thsa--1-s1 and 1 more (4 trials): invalid run config"),
            std::string::npos) << e;
  EXPECT_NE(e.find("train.batch"), std::string::npos) << e;
}

TEST(SweepFile, PathsSetEveryLayerOrOneAndNullRemoves) {
  json c = baseConfig();
  const json layer = c["model"]["attention"][0];
  c["model"]["attention"] = json::array({layer, layer});
  setConfigPath(c, "model.attention.causal", false);
  EXPECT_FALSE(c["model"]["attention"][0]["causal"].get<bool>());
  EXPECT_FALSE(c["model"]["attention"][1]["causal"].get<bool>());
  setConfigPath(c, "model.attention[1].causal", true);
  EXPECT_FALSE(c["model"]["attention"][0]["causal"].get<bool>());
  EXPECT_TRUE(c["model"]["attention"][1]["causal"].get<bool>());
  setConfigPath(c, "model.attention.causal", nullptr);
  EXPECT_FALSE(c["model"]["attention"][0].contains("causal"));
  setConfigPath(c, "train.new_object.x", 3);  // intermediate objects are made (the config reader judges them)
  EXPECT_EQ(c["train"]["new_object"]["x"], 3);
  EXPECT_NE(errorOf([&] { setConfigPath(c, "model.attention[7].causal", true); }).find("has no element 7"), std::string::npos);
  EXPECT_NE(errorOf([&] { setConfigPath(c, "train.lr.x", 1); }).find("is not an object"), std::string::npos);
  EXPECT_NE(errorOf([&] { setConfigPath(c, "a[x]", 1); }).find("the index must be a number"), std::string::npos);
}

TEST(SweepDirectory, ThePlanIsWrittenOnceAndReadBackChecked) {
  TempDir tmp("sweep_dir");
  const auto sweep = sweepFromJson(designSweep().dump());
  const auto trials = expandSweep(sweep);
  const std::string dir = tmp.path("sw");
  writeSweepDirectory(dir, sweep, trials);
  writeSweepDirectory(dir, sweep, trials);  // the same plan again: nothing changes
  const auto plan = readSweepPlan(dir);
  ASSERT_EQ(plan.trials.size(), trials.size());
  EXPECT_EQ(runConfigToJson(readRunConfig(plan.trialDir(plan.trials[5]) + "/run.json")), runConfigToJson(trials[5].config));
  // Another plan into the same directory would mix trials: refused.
  auto other = designSweep();
  other["seeds"] = {1, 2, 3};
  const auto s2 = sweepFromJson(other.dump());
  EXPECT_NE(errorOf([&] { writeSweepDirectory(dir, s2, expandSweep(s2)); }).find("holds another plan"), std::string::npos);
  // A hand-edited trial config is refused rather than trained.
  auto edited = trials[3].config;
  edited.train.lr = 0.5;
  files::writeFileAtomically(plan.trialDir(plan.trials[3]) + "/run.json", runConfigToJson(edited));
  EXPECT_NE(errorOf([&] { readSweepPlan(dir); }).find("differs from the plan"), std::string::npos);
  EXPECT_NE(errorOf([&] { readSweepPlan(tmp.path()); }).find("holds no sweep plan"), std::string::npos);
  std::filesystem::create_directories(tmp.path("full"));
  std::ofstream(tmp.path("full/x")) << "x";
  EXPECT_NE(errorOf([&] { writeSweepDirectory(tmp.path("full"), sweep, trials); }).find("is not empty"), std::string::npos);
}

/// A metrics log with eval records of `values` at steps 10, 20, … and train records with tokens/s.
void writeMetrics(const std::string& runDir, const std::vector<double>& values, double tokensPerSecond) {
  std::filesystem::create_directories(runDir);
  std::ofstream f(runDir + "/metrics.jsonl");
  for (std::size_t i = 0; i < values.size(); ++i) {
    const int step = int(10 * (i + 1));
    f << json{{"kind", "train"}, {"step", step}, {"loss", 1.0}, {"tokens_per_second", tokensPerSecond},
              {"elapsed_seconds", 2.0 * step}}.dump() << "\n";
    f << json{{"kind", "eval"}, {"step", step}, {"split", "validation"}, {"loss", 2.0 - values[i]}, {"accuracy", values[i]}}
             .dump()
      << "\n";
  }
}

TEST(SweepReport, MeansAndSampleDeviationsOverSeedsPerDesign) {
  TempDir tmp("sweep_report");
  auto j = designSweep();
  j["axes"].erase(1);
  j["seeds"] = {1, 2, 3};
  const auto sweep = sweepFromJson(j.dump());
  const auto trials = expandSweep(sweep);
  const std::string dir = tmp.path("sw");
  writeSweepDirectory(dir, sweep, trials);
  const auto plan = readSweepPlan(dir);
  // mhsa seeds end at 0.5, 0.6, 0.7 (best 0.8 at step 20 in seed 1); thsa seed 3 is still pending.
  const std::vector<std::vector<double>> logs = {{0.2, 0.8, 0.5}, {0.3, 0.4, 0.6}, {0.1, 0.2, 0.7}, {0.5, 0.9}, {0.6, 0.7}};
  for (std::size_t i = 0; i < logs.size(); ++i) {
    const auto& t = plan.trials[i];
    writeMetrics(plan.runDir(t), logs[i], 1000.0 * double(i + 1));
    auto r = summariseTrialRun(plan.runDir(t), sweep.metric, "validation");
    r.status = "finished";
    files::writeFileAtomically(plan.trialDir(t) + "/result.json", trialResultToJson(r));
  }
  const auto report = buildReport(plan);
  ASSERT_EQ(report.designs.size(), 2u);
  const auto& m = report.designs[0];
  EXPECT_EQ(m.design, "mhsa");
  EXPECT_EQ(m.finished, 3);
  EXPECT_NEAR(m.mean, 0.6, 1e-12);
  EXPECT_NEAR(m.std, 0.1, 1e-12);  // sqrt(((-.1)² + 0 + .1²) / 2)
  EXPECT_NEAR(m.best_mean, (0.8 + 0.6 + 0.7) / 3, 1e-12);
  EXPECT_NEAR(m.best_step, (20 + 30 + 30) / 3.0, 1e-12);
  EXPECT_NEAR(m.tokens_per_second, 2000, 1e-9);
  const auto& t = report.designs[1];
  EXPECT_EQ(t.trials, 3);
  EXPECT_EQ(t.finished, 2);
  EXPECT_NEAR(t.mean, 0.8, 1e-12);
  EXPECT_NEAR(t.std, std::sqrt(0.02), 1e-12);
  EXPECT_EQ(report.trials[5].second.state, TrialState::Pending);
  EXPECT_EQ(report.trials[0].second.result->wall_seconds, 60);

  const auto md = formatReport(report, "md");
  EXPECT_NE(md.find("| mhsa | " + std::to_string(m.attention_parameters) + " | 3/3 | 0.600 ± 0.100 | 0.700 | 27 | 2000 |"),
            std::string::npos) << md;
  EXPECT_NE(md.find("| 005-thsa-s3 | pending | 0 | – | – |"), std::string::npos) << md;
  const auto csv = formatReport(report, "csv");
  // The old columns, then the statistics' (issue 37): the interval of the mean, and mhsa is the baseline.
  EXPECT_NE(csv.find("\nmhsa," + std::to_string(m.attention_parameters) + ",3,3,0.6,0.1,0.7,27,2000,0.351586,0.848414,baseline,"),
            std::string::npos) << csv;
  const auto tex = formatReport(report, "latex");
  EXPECT_NE(tex.find("mhsa & " + std::to_string(m.attention_parameters) + " & 3 & $0.600 \\pm 0.100$ \\\\"), std::string::npos) << tex;
  const auto js = json::parse(formatReport(report, "json"));
  EXPECT_NEAR(js["designs"][1]["mean"].get<double>(), 0.8, 1e-12);
  EXPECT_EQ(js["trials"][5]["state"], "pending");
  EXPECT_NE(errorOf([&] { formatReport(report, "xlsx"); }).find("the formats are md, csv, latex and json"), std::string::npos);

  const auto svg = reportFigureSvg(plan, report, "design");
  EXPECT_EQ(svg.rfind("<?xml", 0), 0u);
  EXPECT_NE(svg.find(">mhsa</text>"), std::string::npos);
  EXPECT_NE(svg.find("training step"), std::string::npos);
  EXPECT_NE(svg.find("</svg>"), std::string::npos);
  EXPECT_NE(errorOf([&] { reportFigureSvg(plan, report, "colour"); }).find("this sweep has: parameters, design"),
            std::string::npos);
}

TEST(SweepStatus, PendingInterruptedRunningAndEndedComeFromTheFiles) {
  TempDir tmp("sweep_status");
  auto j = designSweep();
  j["axes"].erase(1);
  j["seeds"] = {1};
  const auto sweep = sweepFromJson(j.dump());
  writeSweepDirectory(tmp.path("sw"), sweep, expandSweep(sweep));
  const auto plan = readSweepPlan(tmp.path("sw"));
  const auto& t = plan.trials[0];
  EXPECT_EQ(trialStatus(plan, t).state, TrialState::Pending);
  writeMetrics(plan.runDir(t), {0.1, 0.2}, 10);
  std::ofstream(plan.runDir(t) + "/config.json") << runConfigToJson(t.config);
  EXPECT_EQ(trialStatus(plan, t).state, TrialState::Interrupted);
  EXPECT_EQ(trialStatus(plan, t).step, 20);
  {  // a process holding the trial's lock is training it
    const int fd = ::open((plan.trialDir(t) + "/lock").c_str(), O_CREAT | O_RDWR, 0644);
    ASSERT_EQ(::flock(fd, LOCK_EX | LOCK_NB), 0);
    EXPECT_EQ(trialStatus(plan, t).state, TrialState::Running);
    ::close(fd);
  }
  EXPECT_EQ(trialStatus(plan, t).state, TrialState::Interrupted);
  TrialResult r;
  r.status = "diverged";
  files::writeFileAtomically(plan.trialDir(t) + "/result.json", trialResultToJson(r));
  EXPECT_EQ(trialStatus(plan, t).state, TrialState::Diverged);
  // A damaged result makes the trial failed (not the whole sweep unreadable), with its path,
  // the reason and the remedy.
  files::writeFileAtomically(plan.trialDir(t) + "/result.json", "{\"format\": \"tensorscope.trial_result\", \"version\": 1, \"status\": \"won\"}");
  const auto damaged = trialStatus(plan, t);
  EXPECT_EQ(damaged.state, TrialState::Failed);
  EXPECT_NE(damaged.damaged.find("result.json"), std::string::npos) << damaged.damaged;
  EXPECT_NE(damaged.damaged.find("status: must be finished, diverged or failed; got 'won'"), std::string::npos) << damaged.damaged;
  EXPECT_NE(damaged.damaged.find("--retry-failed"), std::string::npos) << damaged.damaged;
  EXPECT_NE(errorOf([] { parseTrialResult("[]", "r.json"); }).find("not a trial result"), std::string::npos);
}

TEST(SweepSlurmJobs, TheRecordIsWrittenAndReadBackAndDamageIsRefused) {
  TempDir tmp("sweep_slurm");
  EXPECT_TRUE(readSlurmJobs(tmp.path()).empty());
  writeSlurmJobs(tmp.path(), {{"41", {0, 1, 2}, "a.sbatch"}, {"42", {2}, "b.sbatch"}});
  const auto jobs = readSlurmJobs(tmp.path());
  ASSERT_EQ(jobs.size(), 2u);
  EXPECT_EQ(jobs[1].id, "42");
  EXPECT_EQ(jobs[0].indices, (std::vector<std::int64_t>{0, 1, 2}));
  const auto e = errorOf([] {
    parseSlurmJobs(R"({"format": "tensorscope.slurm_jobs", "version": 1, "jobs": [{"job_id": "4;2", "indices": [-1]}]})",
                   "slurm.json");
  });
  EXPECT_NE(e.find("jobs[0].job_id: must be Slurm's job id (digits)"), std::string::npos) << e;
  EXPECT_NE(e.find("jobs[0].indices: holds -1, not a trial index"), std::string::npos) << e;
  EXPECT_NE(errorOf([] { parseSlurmJobs("{}", "slurm.json"); }).find("not a record of Slurm jobs"), std::string::npos);
}

/// A planned sweep of `seeds` seeds per design (mhsa and thsa) in tmp/sw, read back.
SweepPlan plannedSweep(const TempDir& tmp, const std::vector<int>& seeds, const std::string& name = "design space") {
  auto j = designSweep();
  j["axes"].erase(1);
  j["seeds"] = seeds;
  j["name"] = name;
  const auto sweep = sweepFromJson(j.dump());
  writeSweepDirectory(tmp.path("sw"), sweep, expandSweep(sweep));
  return readSweepPlan(tmp.path("sw"));
}

void finishTrial(const SweepPlan& plan, const Trial& t, const std::vector<double>& values) {
  writeMetrics(plan.runDir(t), values, 1000);
  auto r = summariseTrialRun(plan.runDir(t), plan.sweep.metric, "validation");
  r.status = "finished";
  files::writeFileAtomically(plan.trialDir(t) + "/result.json", trialResultToJson(r));
}

TEST(SweepReport, OneFinishedSeedHasNoDeviation) {
  TempDir tmp("sweep_one_seed");
  const auto plan = plannedSweep(tmp, {1, 2});
  finishTrial(plan, plan.trials[0], {0.25, 0.5});                     // mhsa: one seed of two
  finishTrial(plan, plan.trials[2], {0.5, 0.6});                      // thsa: both seeds
  finishTrial(plan, plan.trials[3], {0.5, 0.8});
  const auto report = buildReport(plan);
  EXPECT_FALSE(report.designs[0].hasStd());
  EXPECT_TRUE(report.designs[1].hasStd());
  const auto md = formatReport(report, "md");
  EXPECT_NE(md.find("| 1/2 | 0.500 ± – |"), std::string::npos) << md;
  EXPECT_EQ(md.find("± 0.000"), std::string::npos) << md;
  EXPECT_NE(md.find("| 2/2 | 0.700 ± 0.141 |"), std::string::npos) << md;
  const auto tex = formatReport(report, "latex");
  EXPECT_NE(tex.find("& 1 & $0.500 \\pm$ -- \\\\"), std::string::npos) << tex;
  const auto csv = formatReport(report, "csv");
  EXPECT_NE(csv.find("\nmhsa," + std::to_string(report.designs[0].attention_parameters) + ",2,1,0.5,,"), std::string::npos) << csv;
  const auto js = json::parse(formatReport(report, "json"));
  EXPECT_TRUE(js["designs"][0]["std"].is_null());
  EXPECT_NEAR(js["designs"][1]["std"].get<double>(), std::sqrt(0.02), 1e-12);
  // The figure draws no error bar for the single seed: one bar (3 lines) for thsa only.
  const auto svg = reportFigureSvg(plan, report, "design");
  std::size_t bars = 0;
  for (auto at = svg.find("stroke-width='1.5'/>"); at != std::string::npos; at = svg.find("stroke-width='1.5'/>", at + 1)) ++bars;
  EXPECT_EQ(bars, 1u) << svg;
}

TEST(SweepStatus, ResultFieldsAreRangeChecked) {
  const auto base = json::parse(trialResultToJson([] {
    TrialResult r;
    r.status = "finished";
    r.steps = 100;
    r.best_step = 50;
    r.final_metric = 0.5;
    r.best_metric = 0.6;
    r.wall_seconds = 3;
    r.final_eval = {{"validation", {{"loss", 1.5}, {"accuracy", 0.5}}}};
    return r;
  }()));
  EXPECT_NO_THROW(parseTrialResult(base.dump(), "r.json", "accuracy"));
  const std::vector<std::pair<std::function<void(json&)>, std::string>> bad = {
      {[](json& j) { j["final_metric"] = 1.7e308; }, "final_metric: must be an accuracy in [0, 1]"},
      {[](json& j) { j["best_metric"] = -0.5; }, "best_metric: must be an accuracy in [0, 1]"},
      {[](json& j) { j["steps"] = -5; }, "steps: must be in [0, 2^40]"},
      {[](json& j) { j["best_step"] = 1000000000000000; }, "best_step: must be in [-1, steps = 100]"},
      {[](json& j) { j["wall_seconds"] = -1; }, "wall_seconds: must be in [0, 1e9]"},
      {[](json& j) { j["tokens_per_second"] = 1e300; }, "tokens_per_second: must be in [0, 1e12]"},
      {[](json& j) { j["message"] = std::string(20000, 'x'); }, "message: is longer than 4096 characters"},
      {[](json& j) { j["where"] = std::string(400, 'x'); }, "where: is longer than 300 characters"},
      {[](json& j) { j["final_eval"]["validation"]["accuracy"] = 2; }, "final_eval.validation.accuracy: must be in [0, 1]"},
      {[](json& j) { j["final_eval"]["validation"]["loss"] = -1; }, "final_eval.validation.loss: must be in [0, 1e9]"},
      {[](json& j) { j["final_eval"]["validation"] = 3; }, "final_eval.validation: must be an object"},
  };
  for (const auto& [edit, want] : bad) {
    auto j = base;
    edit(j);
    const auto e = errorOf([&] { parseTrialResult(j.dump(), "r.json", "accuracy"); });
    EXPECT_NE(e.find(want), std::string::npos) << want << "\n" << e;
    EXPECT_LT(e.size(), 600u) << e.substr(0, 600);
  }
  auto loss = base;
  loss["final_metric"] = 7.5;  // a loss above 1 is a loss
  loss["best_metric"] = 7.0;
  EXPECT_NO_THROW(parseTrialResult(loss.dump(), "r.json", "loss"));
  loss["final_metric"] = 1e300;
  EXPECT_NE(errorOf([&] { parseTrialResult(loss.dump(), "r.json", "loss"); }).find("final_metric: must be a loss in [0, 1e9]"),
            std::string::npos);
}

TEST(SweepReport, ADamagedResultIsNamedAndTheRestIsReported) {
  TempDir tmp("sweep_damaged");
  const auto plan = plannedSweep(tmp, {1, 2});
  finishTrial(plan, plan.trials[0], {0.25, 0.5});
  finishTrial(plan, plan.trials[1], {0.25, 0.7});
  finishTrial(plan, plan.trials[2], {0.5, 0.6});
  // Trial 3: accuracy 1.7e308 (once "inf ± inf" and an SVG with -nan); trial 2: truncated.
  auto r = json::parse(files::readBoundedFile(plan.trialDir(plan.trials[2]) + "/result.json"));
  r["final_metric"] = 1.7e308;
  files::writeFileAtomically(plan.trialDir(plan.trials[3]) + "/result.json", r.dump());
  files::writeFileAtomically(plan.trialDir(plan.trials[2]) + "/result.json", r.dump().substr(0, 40));
  const auto report = buildReport(plan);
  EXPECT_EQ(report.designs[0].finished, 2);
  EXPECT_NEAR(report.designs[0].mean, 0.6, 1e-12);
  EXPECT_EQ(report.designs[1].finished, 0);
  const auto md = formatReport(report, "md");
  EXPECT_EQ(md.find("inf"), std::string::npos) << md;
  EXPECT_NE(md.find("002-thsa-s1"), std::string::npos) << md;
  EXPECT_NE(md.find("result.json is damaged"), std::string::npos) << md;
  EXPECT_NE(md.find("tensorscope sweep run " + plan.dir + " --retry-failed"), std::string::npos) << md;
  const auto svg = reportFigureSvg(plan, report, "design");
  EXPECT_EQ(svg.find("nan"), std::string::npos) << svg;
  EXPECT_EQ(svg.find("inf"), std::string::npos) << svg;
  // A metrics log with absurd values cannot put non-finite coordinates into the curves either.
  std::ofstream(plan.runDir(plan.trials[0]) + "/metrics.jsonl", std::ios::app)
      << R"({"kind": "eval", "step": 30, "split": "validation", "loss": 1e308, "accuracy": 1e308})" << "\n";
  const auto svg2 = reportFigureSvg(plan, buildReport(plan), "parameters");
  EXPECT_EQ(svg2.find("nan"), std::string::npos) << svg2;
  EXPECT_EQ(svg2.find("inf"), std::string::npos) << svg2;
}

TEST(SweepFile, ControlCharactersAreRefusedAndEverythingPrintedIsEscaped) {
  auto j = designSweep();
  j["name"] = "\x1b[2Jx\ny";
  j["axes"][0]["values"][0]["label"] = "m\x1b[1m\nl";
  j["axes"][1]["name"] = "lr\r";
  const auto e = errorOf([&] { sweepFromJson(j.dump()); });
  EXPECT_NE(e.find("name: holds a control character (U+001B)"), std::string::npos) << e;
  EXPECT_NE(e.find("axes[0].values[0].label: holds a control character (U+001B)"), std::string::npos) << e;
  EXPECT_NE(e.find("axes[1].name: holds a control character (U+000D)"), std::string::npos) << e;
  EXPECT_EQ(e.find('\x1b'), std::string::npos) << e;  // the message itself is safe to print
  EXPECT_EQ(displayText("a\x1b[1m\nb\x7f\xc2\x9b" "c·"), "a\\x1b[1m\\nb\\x7f\\u009bc·");
  // LaTeX's special characters, all of them.
  auto tex = designSweep();
  tex["name"] = "100% of a_b";
  tex["axes"][0]["values"][0]["label"] = "a\\b^c~d&$#{}";
  TempDir tmp("sweep_escape");
  const auto sweep = sweepFromJson(tex.dump());
  writeSweepDirectory(tmp.path("sw"), sweep, expandSweep(sweep));
  const auto plan = readSweepPlan(tmp.path("sw"));
  const auto report = buildReport(plan);
  const auto latex = formatReport(report, "latex");
  EXPECT_NE(latex.find("a\\textbackslash{}b\\textasciicircum{}c\\textasciitilde{}d\\&\\$\\#\\{\\} · 0.001"),
            std::string::npos) << latex;
  EXPECT_NE(latex.find("% 100\\% of a\\_b:"), std::string::npos) << latex;
}

TEST(SweepFile, OneConfigProblemInManyTrialsIsSaidOnce) {
  auto j = designSweep();
  j["axes"] = json::array({{{"path", "model.attention.variant"}, {"values", {-2}}}});  // one bad value
  j["seeds"] = json::array();
  for (int i = 0; i < 20; ++i) j["seeds"].push_back(i + 1);  // in 20 trials
  const auto e = errorOf([&] { expandSweep(sweepFromJson(j.dump())); });
  std::size_t n = 0;
  for (auto at = e.find("must be a string"); at != std::string::npos; at = e.find("must be a string", at + 1)) ++n;
  EXPECT_EQ(n, 1u) << e;
  EXPECT_EQ(e.find("missing"), std::string::npos) << e;  // one problem per field
  EXPECT_NE(e.find("20 trials"), std::string::npos) << e;
  EXPECT_LT(e.size(), 1500u) << e;
}

TEST(SweepFile, AHugeConfigGivesABoundedMessage) {
  auto c = baseConfig();
  c["model"]["attention"] = json::array();
  for (int i = 0; i < 100000; ++i) c["model"]["attention"].push_back(i);
  const auto e = errorOf([&] { runConfigFromJson(c.dump()); });
  EXPECT_LT(e.size(), 4000u) << e.substr(0, 4000);
  EXPECT_NE(e.find("more problems (100"), std::string::npos) << e.substr(0, 4000);
  auto s = designSweep();
  s["base"] = c;
  const auto se = errorOf([&] { sweepFromJson(s.dump()); });
  EXPECT_LT(se.size(), 5000u) << se.substr(0, 5000);
}

TEST(SweepDirectory, LongLabelsGiveBoundedTrialNamesAndNothingIsCreatedForAPathTooLong) {
  auto j = designSweep();
  j["axes"] = json::array();
  for (int a = 0; a < 4; ++a) {
    json values = json::array();
    for (int v = 0; v < 2; ++v)
      values.push_back({{"label", std::string(60, char('a' + a)) + std::to_string(v)}, {"set", {{"train.warmup", v}}}});
    j["axes"].push_back({{"name", "axis" + std::to_string(a)}, {"values", values}});
  }
  j["seeds"] = {1};
  const auto sweep = sweepFromJson(j.dump());
  const auto trials = expandSweep(sweep);
  ASSERT_EQ(trials.size(), 16u);
  std::set<std::string> names;
  for (const auto& t : trials) {
    EXPECT_LE(t.name.size(), std::size_t(kMaxTrialNameBytes)) << t.name;
    EXPECT_EQ(t.name.substr(t.name.size() - 3), "-s1") << t.name;
    names.insert(t.name);
  }
  EXPECT_EQ(names.size(), trials.size());
  TempDir tmp("sweep_long");
  writeSweepDirectory(tmp.path("sw"), sweep, trials);
  EXPECT_EQ(readSweepPlan(tmp.path("sw")).trials.size(), 16u);
  // A sweep folder whose trial paths would pass PATH_MAX is refused before anything is made.
  std::string deep = tmp.path("deep");
  while (deep.size() < 4000) deep += "/" + std::string(200, 'd');
  const auto e = errorOf([&] { writeSweepDirectory(deep, sweep, trials); });
  EXPECT_NE(e.find("too long"), std::string::npos) << e;
  EXPECT_FALSE(std::filesystem::exists(tmp.path("deep")));
}

TEST(SweepDirectory, ThePlanIsReadWithoutExpandingAgainAndEditsAreStillRefused) {
  TempDir tmp("sweep_cache");
  const auto plan = plannedSweep(tmp, {1, 2});
  const auto again = readSweepPlan(plan.dir);
  ASSERT_EQ(again.trials.size(), plan.trials.size());
  for (std::size_t i = 0; i < plan.trials.size(); ++i) {
    EXPECT_EQ(again.trials[i].name, plan.trials[i].name);
    EXPECT_EQ(again.trials[i].labels, plan.trials[i].labels);
    EXPECT_EQ(again.trials[i].design, plan.trials[i].design);
    EXPECT_EQ(again.trials[i].attention_parameters, plan.trials[i].attention_parameters);
    EXPECT_EQ(again.trials[i].attention_gflop_per_step, plan.trials[i].attention_gflop_per_step);
    EXPECT_EQ(runConfigToJson(again.trials[i].config), runConfigToJson(plan.trials[i].config));
  }
  EXPECT_TRUE(std::filesystem::exists(plan.dir + "/plan.check"));
  // An edited plan.json is refused as before, cache or not.
  auto p = json::parse(files::readBoundedFile(plan.dir + "/plan.json"));
  p["trials"][1]["seed"] = 7;
  files::writeFileAtomically(plan.dir + "/plan.json", p.dump(2));
  EXPECT_NE(errorOf([&] { readSweepPlan(plan.dir); }).find("does not match sweep.json"), std::string::npos);
}

}  // namespace
}  // namespace tensorscope::model_core
