// The diagram's values of a trained model's layer (model_core/network_values.h): x is what enters
// that layer's attention inside the model, so the diagram's output equals the layer's output in the
// model's own forward; a training run sends them with its inspections when asked.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "model_core/network_values.h"
#include "model_core/trainer.h"
#include "training/training_session.h"
#include "training_test_util.h"

namespace tensorscope::model_core {
namespace {

using testing::TempDir;
using testing::tinyRun;

at::Tensor tensorOf(const HostTensor& h) { return at::tensor(h.values, at::kFloat).reshape(h.shape); }

struct Inspections : ProgressSink {
  std::vector<InspectionSnapshot> got;
  std::vector<std::string> messages;
  void onInspection(const InspectionSnapshot& s) override { got.push_back(s); }
  void onMessage(const std::string& m) override { messages.push_back(m); }
};

TEST(RunNetworkValues, TheDiagramOfALayerComputesThatLayerInsideTheModel) {
  TempDir dir("run_network_values");
  for (const char* preset : {"thsa", "tp"}) {
    SCOPED_TRACE(preset);
    const auto config = tinyRun(preset, 4);
    const std::string run = dir.path(preset);
    TrainerControl control;
    Inspections sink;
    train(config, run, control, sink);
    for (int layer : {0, 1}) {
      // A typed question, which the model answers: the tokens are the question and the answer.
      const auto v = runNetworkValues(run, layer, "012");
      EXPECT_EQ(v.layer, layer);
      EXPECT_EQ(v.step, 4);
      ASSERT_GE(v.tokens.size(), 5u);  // markers around the question, then the answer
      EXPECT_EQ(v.tokens[1] + v.tokens[2] + v.tokens[3], "012");
      // The same model, its own forward: the layer's input and output.
      TrainingSession session(config);
      session.loadWeights(run);
      session.model()->eval();
      at::NoGradGuard noGrad;
      std::vector<AttentionOutput> outs;
      const auto& vocab = session.task().vocabulary().tokens;
      std::vector<int64_t> idList;
      for (const auto& t : v.tokens)
        idList.push_back(std::find(vocab.begin(), vocab.end(), t) - vocab.begin());
      const auto ids = at::tensor(idList, at::kLong).view({1, static_cast<int64_t>(idList.size())});
      session.model()->forward(ids, {}, &outs);
      const auto& out = outs.at(static_cast<size_t>(layer));
      for (const auto& n : v.network.nodes)
        if (n.binding == "x") EXPECT_TRUE(at::allclose(tensorOf(*v.find(n.id)), out.input, 1e-6, 1e-6)) << n.id;
      EXPECT_TRUE(at::allclose(tensorOf(*v.find(v.network.output)), out.y, 1e-5, 1e-5));
    }
    try {
      runNetworkValues(run, 2, "");
      FAIL() << "layer 2 of a two-layer model was accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("not layer 2"), std::string::npos) << e.what();
    }
  }
}

TEST(RunNetworkValues, ATrainingRunSendsTheChosenLayerWithItsInspections) {
  TempDir dir("run_network_values_live");
  auto config = tinyRun("thsa", 8);
  TrainerControl control;
  control.setNetworkLayer(1);
  control.setProbe("01");
  Inspections sink;
  train(config, dir.path("run"), control, sink);
  ASSERT_FALSE(sink.got.empty());
  EXPECT_TRUE(sink.messages.empty()) << sink.messages.front();
  for (const auto& s : sink.got) {
    ASSERT_NE(s.network, nullptr) << "step " << s.step;
    EXPECT_EQ(s.network->layer, 1);
    EXPECT_EQ(s.network->step, s.step);
    ASSERT_GE(s.network->tokens.size(), 4u);  // markers around the question, then the answer
    EXPECT_EQ(s.network->tokens[1] + s.network->tokens[2], "01");
    EXPECT_EQ(s.network->tokens, s.probe_tokens);
    // The layer's learned core as the inspection reports it is the diagram's C.
    const auto& core = s.cores.at(1);
    const HostTensor* c = nullptr;
    for (const auto& n : s.network->network.nodes)
      if (n.binding == "core") c = s.network->find(n.id);
    ASSERT_NE(c, nullptr);
    EXPECT_EQ(c->values, core.values);
  }
  // A layer the model lacks is said, and the inspections still come (without values).
  TrainerControl wrong;
  wrong.setNetworkLayer(5);
  Inspections refused;
  train(config, dir.path("wrong"), wrong, refused);
  ASSERT_FALSE(refused.got.empty());
  for (const auto& s : refused.got) EXPECT_EQ(s.network, nullptr);
  ASSERT_FALSE(refused.messages.empty());
  EXPECT_NE(refused.messages.front().find("not layer 5"), std::string::npos) << refused.messages.front();
  // Without a layer asked for, inspections carry no diagram values.
  TrainerControl plain;
  Inspections none;
  train(config, dir.path("plain"), plain, none);
  ASSERT_FALSE(none.got.empty());
  for (const auto& s : none.got) EXPECT_EQ(s.network, nullptr);
}

}  // namespace
}  // namespace tensorscope::model_core
