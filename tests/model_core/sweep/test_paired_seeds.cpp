// Paired seeds (issue 37): every design of a sweep sees, for one seed, the same training batches in
// the same order and the same evaluation set, so a report may pair its designs by seed. Proven on
// real training sessions of a sweep's trials: the data stream's state is derived from train.seed
// alone (TrainingSession: dataRng = seed * 0x9E3779B97F4A7C15 + 1), the model's initialisation has
// its own generator (torch::manual_seed), and the evaluation sets come from the task config.
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>

#include "model_core/sweep.h"
#include "training/training_session.h"
#include "../training/training_test_util.h"

namespace tensorscope::model_core {
namespace {

using nlohmann::json;
using testing::tinyRun;

struct DataSeen {
  std::vector<std::vector<std::int64_t>> batches;  ///< the inputs of each training step's batch
  std::vector<std::int64_t> eval_inputs;           ///< the first evaluation split's fixed set
  std::vector<std::int64_t> eval_targets;
};

/// Trains `steps` steps of a trial's config, recording the batch each step trained on: the batch
/// drawn from the data stream's state before the step, checked to be the one the step drew (the
/// state after the step is the state after drawing it).
DataSeen trainAndRecord(const RunConfig& config, int steps) {
  TrainingSession s(config);
  DataSeen seen;
  for (int k = 0; k < steps; ++k) {
    std::uint64_t state = s.dataRng();
    const auto b = s.task().tokenBatch(Split::Train, config.train.batch, state);
    seen.batches.push_back(b.inputs);
    s.trainStep(config.train.lr);
    EXPECT_EQ(s.dataRng(), state) << "step " << k << " drew another batch than the one recorded";
  }
  const auto eval = s.task().tokenEvalSet(s.evalSplits().front().first, config.train.eval_examples);
  seen.eval_inputs = eval.inputs;
  seen.eval_targets = eval.targets;
  return seen;
}

TEST(PairedSeeds, EveryDesignSeesTheSameBatchesAndEvaluationSetPerSeed) {
  // Two designs that differ in their attention (MHSA, dense THSA), their model initialisation and
  // even their learning rate; two seeds.
  const json j = {
      {"format", "tensorscope.sweep"},
      {"version", 1},
      {"name", "paired"},
      {"base", json::parse(runConfigToJson(tinyRun("mhsa", 3)))},
      {"axes",
       {{{"name", "design"},
         {"values",
          {{{"label", "mhsa"}, {"set", {{"model.attention.variant", "mhsa"}, {"model.attention.core", nullptr}}}},
           {{"label", "thsa"},
            {"set", {{"model.attention.variant", "thsa"}, {"model.attention.core", {{"preset", "thsa"}}},
                     {"model.attention.sizes.R", 16}, {"train.lr", 0.003}}}}}}}}},
      {"seeds", {1, 2}},
      {"metric", "loss"}};
  const auto trials = expandSweep(sweepFromJson(j.dump()));
  ASSERT_EQ(trials.size(), 4u);  // mhsa s1, mhsa s2, thsa s1, thsa s2
  std::map<std::pair<std::string, std::uint64_t>, DataSeen> seen;
  for (const auto& t : trials) seen[{t.design, t.seed}] = trainAndRecord(t.config, 3);
  for (const std::uint64_t seed : {1u, 2u}) {
    const auto& a = seen.at({"mhsa", seed});
    const auto& b = seen.at({"thsa", seed});
    ASSERT_EQ(a.batches.size(), 3u);
    EXPECT_EQ(a.batches, b.batches) << "seed " << seed << ": the designs trained on different batches";
    EXPECT_EQ(a.eval_inputs, b.eval_inputs) << "seed " << seed;
    EXPECT_EQ(a.eval_targets, b.eval_targets) << "seed " << seed;
    EXPECT_FALSE(a.eval_inputs.empty());
  }
  // Not vacuous: another seed is another batch order (the evaluation set is the task's, the same).
  EXPECT_NE(seen.at({"mhsa", 1}).batches, seen.at({"mhsa", 2}).batches);
  EXPECT_EQ(seen.at({"mhsa", 1}).eval_inputs, seen.at({"mhsa", 2}).eval_inputs);
}

}  // namespace
}  // namespace tensorscope::model_core
