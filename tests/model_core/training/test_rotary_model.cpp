// Rotary positions as a model option (`model.positions` "rotary" / "rotary_interleaved";
// docs/attention-variants.md §9): the run configuration accepts them for the layers that take them
// and names the layer and the reason otherwise; the model has no position table then, every block
// turns its queries and keys, and it trains.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "diagram/network_evaluator.h"
#include "model_core/network_values.h"
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

TEST(RotaryModel, TheInspectorShowsTheDiagramValuesOfARotaryLayerAndTheyAreTheLayers) {
  // The diagram of a rotary layer carries the turns of its queries and keys (R^Q, R^K; §9), so the
  // values the Inspector shows are the run's: x is what enters the layer inside the model and the
  // diagram's y is the layer's output in the model's own forward. The same diagram without the turns
  // gives another y (negative control).
  for (const char* positions : {"rotary", "rotary_interleaved"})
    for (const char* preset : {"mhsa", "thsa", "gqa"}) {
      SCOPED_TRACE(std::string(preset) + " " + positions);
      auto c = tinyRun(preset, 2);
      c.model.positions = positions;
      TrainingSession session(c);
      for (int layer : {0, 1}) {
        const NetworkValues v = session.inspectNetwork(layer);
        int turns = 0;
        for (const auto& n : v.network.nodes)
          if (n.binding.rfind("rotary_turn:" + std::string(std::string(positions) == "rotary" ? "half" : "interleaved"), 0) == 0)
            ++turns;
        EXPECT_EQ(turns, 2);
        session.model()->eval();
        torch::NoGradGuard noGrad;
        const auto& vocab = session.task().vocabulary().tokens;
        std::vector<int64_t> ids;
        for (const auto& t : v.tokens) ids.push_back(std::find(vocab.begin(), vocab.end(), t) - vocab.begin());
        std::vector<AttentionOutput> outs;
        session.model()->forward(torch::tensor(ids, torch::kLong).view({1, static_cast<int64_t>(ids.size())}), {}, &outs);
        session.model()->train();
        const auto& out = outs.at(static_cast<size_t>(layer));
        const auto& xs = *v.find("x_q");
        EXPECT_TRUE(torch::allclose(torch::tensor(xs.values, torch::kFloat).reshape(xs.shape), out.input, 1e-6, 1e-6));
        const auto& ys = *v.find(v.network.output);
        const auto y = torch::tensor(ys.values, torch::kFloat).reshape(ys.shape);
        EXPECT_TRUE(torch::allclose(y, out.y, 1e-5, 1e-5)) << (y - out.y).abs().max().item<double>();
        const auto attention = session.model()->blocks()[static_cast<size_t>(layer)]->attention();
        NetworkValues plain;
        evaluateNetworkValues(attention->spec(), attention->namedWeights(), out.input, plain);
        const auto& ps = *plain.find(plain.network.output);
        EXPECT_GT((torch::tensor(ps.values, torch::kFloat).reshape(ps.shape) - out.y).abs().max().item<double>(), 1e-4);
      }
      const InspectionSnapshot snap = session.inspect("", 0);  // the maps and the diagram's values
      ASSERT_NE(snap.network, nullptr);
      EXPECT_EQ(snap.maps.size(), 2u);
    }
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
