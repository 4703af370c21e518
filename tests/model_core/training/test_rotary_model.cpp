// Rotary positions as a model option (`model.positions` "rotary" / "rotary_interleaved";
// docs/attention-variants.md §9): the run configuration accepts them for the layers that take them
// and names the layer and the reason otherwise; the model has no position table then, every block
// turns its queries and keys, and it trains.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "model_core/run_config.h"
#include "model_core/trainer.h"
#include "training/training_session.h"
#include "training/transformer.h"
#include "training_test_util.h"

using namespace tensorscope::model_core;
using tensorscope::model_core::testing::tinyRun;

namespace {

bool mentions(const std::vector<std::string>& problems, const std::string& text) {
  for (const auto& p : problems)
    if (p.find(text) != std::string::npos) return true;
  return false;
}

TEST(RotaryModel, TheRunConfigurationAcceptsTheLayersThatTakeRotaryAndNamesTheOthers) {
  for (const char* positions : {"rotary", "rotary_interleaved"})
    for (const char* preset : {"mhsa", "thsa", "skip_left", "tp", "gqa", "talking_heads", "gated", "diff"}) {
      auto c = tinyRun(preset, 2);
      c.model.positions = positions;
      if (std::string(preset) == "diff") c.model.attention[0].sizes.H = 1;  // 2·H·D = F
      EXPECT_TRUE(validateRunConfig(c).empty()) << preset << " " << positions << ": " << validateRunConfig(c).front();
    }
  auto mixed = tinyRun("mhsa", 2);
  mixed.model.positions = "rotary";
  auto linear = tinyRun("thsa_linear", 2).model.attention[0];
  mixed.model.attention = {mixed.model.attention[0], linear};
  const auto problems = validateRunConfig(mixed);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].find("model.positions: rotary at model.attention[1]: thsa_linear takes no rotary positions"),
            std::string::npos)
      << problems[0];

  auto roles = tinyRun("tp", 2);
  roles.model.positions = "rotary";
  roles.model.tp_role_embedding = true;
  EXPECT_TRUE(mentions(validateRunConfig(roles), "model.tp_role_embedding: binds each symbol's role to its position"));

  auto unknown = tinyRun("mhsa", 2);
  unknown.model.positions = "alibi";
  EXPECT_TRUE(mentions(validateRunConfig(unknown), "\"rotary\" or \"rotary_interleaved\"; got \"alibi\""));

  // The setting round-trips through the run configuration file.
  auto c = tinyRun("mhsa", 2);
  c.model.positions = "rotary_interleaved";
  EXPECT_EQ(runConfigFromJson(runConfigToJson(c)).model.positions, "rotary_interleaved");
}

TEST(RotaryModel, TheModelHasNoPositionTableAndEveryBlockTurnsItsQueriesAndKeys) {
  for (const char* positions : {"rotary", "rotary_interleaved"}) {
    auto c = tinyRun("mhsa", 2);
    c.model.positions = positions;
    TrainingSession session(c);
    for (const auto& w : session.model()->namedWeights()) {
      EXPECT_NE(w.name, "pos.weight");
      EXPECT_EQ(w.name.find("sinusoid"), std::string::npos);
    }
    for (const auto& b : session.model()->buffers(true)) EXPECT_NE(b.numel(), 24 * 16) << "a position table";
    ASSERT_EQ(session.model()->blocks().size(), 2u);
    for (const auto& block : session.model()->blocks()) {
      EXPECT_TRUE(block->attention()->rotary().on);
      EXPECT_EQ(block->attention()->rotary().pairs,
                std::string(positions) == "rotary" ? RotaryPairs::Half : RotaryPairs::Interleaved);
    }
    // The turn reaches the logits: the same weights without it give other logits (token 0 aside,
    // whose angle is 0 in every layer).
    const auto tokens = torch::tensor({3, 7, 1, 4, 4, 9}, torch::kLong).view({1, 6});
    torch::NoGradGuard noGrad;
    const auto turned = session.model()->forward(tokens);
    for (const auto& block : session.model()->blocks()) block->attention()->setRotary(Rotary{});
    const auto unturned = session.model()->forward(tokens);
    EXPECT_LT((turned[0][0] - unturned[0][0]).abs().max().item<double>(), 1e-6);
    EXPECT_GT((turned - unturned).abs().max().item<double>(), 1e-4);
    EXPECT_EQ(estimateModelValues(c, session.task().vocabulary().size()),
              [&] {
                std::int64_t n = 0;
                for (const auto& p : session.model()->parameters(true)) n += p.numel();
                for (const auto& b : session.model()->buffers(true)) n += b.numel();
                return n;
              }());
  }
}

TEST(RotaryModel, TheInspectorShowsNoDiagramValuesForARotaryLayerAndSaysWhy) {
  // The tensor diagram has no rotary turn yet: its values would not be the run's, so none are given.
  auto c = tinyRun("mhsa", 2);
  c.model.positions = "rotary";
  TrainingSession session(c);
  try {
    session.inspectNetwork(0);
    ADD_FAILURE() << "a rotary layer's diagram values were given";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("rotary positions (model.positions \"rotary\")"), std::string::npos) << e.what();
  }
  const InspectionSnapshot snap = session.inspect("", 0);  // the maps, without the diagram's values
  EXPECT_EQ(snap.network, nullptr);
  EXPECT_EQ(snap.maps.size(), 2u);
  auto learned = tinyRun("mhsa", 2);
  TrainingSession plain(learned);
  EXPECT_NE(plain.inspect("", 0).network, nullptr);
}

TEST(RotaryModel, ARotaryModelTrainsAndItsLossFalls) {
  auto c = tinyRun("mhsa", 30);
  c.model.positions = "rotary";
  c.train.lr = 3e-3;
  TrainingSession session(c);
  const double first = session.trainStep(c.train.lr).first;
  double last = first;
  for (int i = 0; i < 29; ++i) last = session.trainStep(c.train.lr).first;
  EXPECT_TRUE(std::isfinite(last));
  EXPECT_LT(last, first);
}

}  // namespace
