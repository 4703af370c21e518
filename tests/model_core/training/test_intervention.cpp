// Issue 36: an intervention on a trained run's weights. A row of talking heads' post-softmax mixing
// C′ (mix_post) is set to zero in a fork's starting snapshot; the parent's files never change; the
// fork starts from exactly those weights (that row 0, everything else the parent's) and trains on.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>

#include "files/read_file.h"
#include "model_core/intervention.h"
#include "model_core/run_directory.h"
#include "model_core/safetensors.h"
#include "model_core/trainer.h"
#include "training_test_util.h"

using namespace tensorscope;
using namespace tensorscope::model_core;
using tensorscope::model_core::testing::checkpointFile;
using tensorscope::model_core::testing::TempDir;
using tensorscope::model_core::testing::tinyRun;

namespace {

std::map<std::string, std::vector<float>> weightsAt(const std::string& path) {
  std::map<std::string, std::vector<float>> out;
  for (const auto& [name, t] : readSafetensors(path).tensors) {
    std::vector<float> f(t.bytes.size() / sizeof(float));
    std::memcpy(f.data(), t.bytes.data(), t.bytes.size());
    out[name] = f;
  }
  return out;
}

struct Losses : ProgressSink {
  std::vector<double> values;
  void onMetrics(const MetricsSnapshot& m) override { values.push_back(m.loss); }
};

}  // namespace

TEST(Intervention, ZeroingARowOfCPrimeInAForkStartsTheForkWithThatHeadOff) {
  TempDir dir("intervention");
  const auto parent = tinyRun("talking_heads", 8);
  {
    TrainerControl control;
    ProgressSink quiet;
    train(parent, dir.path("parent"), control, quiet);
  }
  const std::string parentWeights = checkpointFile(dir.path("parent"), "model.safetensors");
  const auto before = weightsAt(parentWeights);
  const std::string name = "blocks.0.attn.mix_post";
  ASSERT_EQ(before.at(name).size(), 4u) << "H = 2: C′ is 2 x 2";
  EXPECT_TRUE(zeroMixingRows(dir.path("parent"), 0).empty()) << "training left no row at exactly 0";

  ASSERT_EQ(snapshotCheckpoint(dir.path("parent"), dir.path("snap")), 8);
  zeroMixingRow(dir.path("snap"), 0, "mix_post", 1);
  const auto edited = weightsAt(dir.path("snap/model.safetensors"));
  ASSERT_EQ(edited.size(), before.size());
  for (const auto& [n, v] : before) {
    if (n != name) {
      EXPECT_EQ(edited.at(n), v) << n << " changed";
      continue;
    }
    const auto& e = edited.at(n);
    EXPECT_EQ(e[0], v[0]);  // row 0 as trained
    EXPECT_EQ(e[1], v[1]);
    EXPECT_EQ(e[2], 0.0f);  // row 1 (head 1 receives nothing)
    EXPECT_EQ(e[3], 0.0f);
    EXPECT_NE(v[2] * v[2] + v[3] * v[3], 0.0f) << "the row was not already zero";
  }
  EXPECT_EQ(readSafetensors(dir.path("snap/model.safetensors")).metadata,
            readSafetensors(parentWeights).metadata) << "the checkpoint's step stays";
  EXPECT_EQ(zeroMixingRows(dir.path("snap"), 0), std::vector<std::string>{"mix_post[1]"});
  EXPECT_EQ(weightsAt(parentWeights), before) << "the parent's checkpoint is untouched";

  // The fork starts from the edited weights: before its first step its checkpoint has row 1 of C′
  // at zero and every other weight of the parent; then it trains on, its loss finite.
  {
    TrainerControl control;
    control.requestStop();
    ProgressSink quiet;
    EXPECT_EQ(train(parent, dir.path("fork"), control, quiet, false, -1, {dir.path("snap"), true}).steps_done, 0);
  }
  const auto start = weightsAt(checkpointFile(dir.path("fork"), "model.safetensors"));
  EXPECT_EQ(start.at(name), edited.at(name));
  EXPECT_EQ(start.at("blocks.0.attn.wq.weight"), before.at("blocks.0.attn.wq.weight"));
  EXPECT_EQ(zeroMixingRows(dir.path("fork"), 0), std::vector<std::string>{"mix_post[1]"});
  Losses losses;
  TrainerControl control;
  const auto r = train(parent, dir.path("fork"), control, losses, true);
  EXPECT_EQ(r.steps_done, 8);
  ASSERT_FALSE(losses.values.empty()) << "the fork's curve goes on";
  for (double l : losses.values) EXPECT_TRUE(std::isfinite(l));
  EXPECT_NE(weightsAt(checkpointFile(dir.path("fork"), "model.safetensors")).at(name)[2], 0.0f)
      << "training moves the zeroed row again (the head may come back)";
}

TEST(Intervention, RefusesARunsOwnFolderAndWhatDoesNotExist) {
  TempDir dir("intervention_refusals");
  auto parent = tinyRun("talking_heads", 4);
  {
    TrainerControl control;
    ProgressSink quiet;
    train(parent, dir.path("parent"), control, quiet);
  }
  const auto expectRefusal = [](const std::function<void()>& f, const std::string& words) {
    try {
      f();
      ADD_FAILURE() << "not refused: " << words;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
    }
  };
  expectRefusal([&] { zeroMixingRow(dir.path("parent"), 0, "mix_post", 0); }, "never a run's history");
  ASSERT_EQ(snapshotCheckpoint(dir.path("parent"), dir.path("snap")), 4);
  expectRefusal([&] { zeroMixingRow(dir.path("snap"), 0, "mix_post", 2); }, "rows 0..1");
  expectRefusal([&] { zeroMixingRow(dir.path("snap"), 0, "wq", 0); }, "mix_pre or mix_post");
  expectRefusal([&] { zeroMixingRow(dir.path("snap"), 5, "mix_post", 0); }, "layer 5 has no mix_post");
  expectRefusal([&] { zeroMixingRow(dir.path("nothing"), 0, "mix_post", 0); }, "holds no weights");
  // A design without talking heads has no C′.
  const auto mhsa = tinyRun("mhsa", 4);
  {
    TrainerControl control;
    ProgressSink quiet;
    train(mhsa, dir.path("mhsa"), control, quiet);
  }
  ASSERT_EQ(snapshotCheckpoint(dir.path("mhsa"), dir.path("mhsa_snap")), 4);
  expectRefusal([&] { zeroMixingRow(dir.path("mhsa_snap"), 0, "mix_post", 0); }, "has no blocks.0.attn.mix_post");
  EXPECT_TRUE(zeroMixingRows(dir.path("mhsa_snap"), 0).empty());
  EXPECT_TRUE(zeroMixingRows(dir.path("nothing"), 0).empty());
}
