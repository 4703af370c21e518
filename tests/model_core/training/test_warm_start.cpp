// Forking a run: snapshots of its checkpoint, its learned core as an editable spec, and a new run
// that starts from the checkpoint's weights with the edited core.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <map>

#include "files/read_file.h"
#include "model_core/run_directory.h"
#include "model_core/safetensors.h"
#include "model_core/run_files.h"
#include "model_core/trainer.h"
#include "spec/slot_values.h"
#include "training_test_util.h"

using namespace tensorscope;
using namespace tensorscope::model_core;
using tensorscope::model_core::testing::checkpointFile;
using tensorscope::model_core::testing::TempDir;
using tensorscope::model_core::testing::tinyRun;

namespace {

struct Messages : ProgressSink {
  std::vector<std::string> lines;
  void onMessage(const std::string& m) override { lines.push_back(m); }
};

/// name -> values of a weights file.
std::map<std::string, std::vector<double>> weightsOf(const std::string& path) {
  std::map<std::string, std::vector<double>> out;
  for (const auto& [name, t] : readSafetensors(path).tensors) {
    EXPECT_EQ(t.dtype, DType::F32) << name;
    std::vector<float> f(t.bytes.size() / sizeof(float));
    std::memcpy(f.data(), t.bytes.data(), t.bytes.size());
    out[name] = std::vector<double>(f.begin(), f.end());
  }
  return out;
}

/// Trains `c` into `dir` and returns nothing; a checkpoint exists afterwards.
void trainRun(const RunConfig& c, const std::string& dir) {
  TrainerControl control;
  ProgressSink quiet;
  train(c, dir, control, quiet);
}

/// Builds the run without taking a step: the checkpoint holds exactly the initial weights.
std::vector<std::string> initialiseOnly(const RunConfig& c, const std::string& dir, const WarmStart& warm) {
  TrainerControl control;
  control.requestStop();
  Messages sink;
  const auto r = train(c, dir, control, sink, false, -1, warm);
  EXPECT_EQ(r.steps_done, 0);
  return sink.lines;
}

}  // namespace

TEST(WarmStart, ForkStartsFromTheCheckpointWithTheEditedCore) {
  for (const char* preset : {"skip_right", "thsa"}) {
    SCOPED_TRACE(preset);
    TempDir dir(std::string("warm_fork_") + preset);
    const auto parent = tinyRun(preset, 8);
    trainRun(parent, dir.path("parent"));

    EXPECT_EQ(snapshotCheckpoint(dir.path("parent"), dir.path("snap")), 8);
    for (const char* f : {"model.safetensors", "config.json", "trainer_state.json"})
      EXPECT_TRUE(std::filesystem::exists(dir.path("snap/") + f)) << f;
    const auto snap = weightsOf(dir.path("snap/model.safetensors"));
    EXPECT_EQ(snap, weightsOf(checkpointFile(dir.path("parent"), "model.safetensors")));

    // The learned core of layer 0 in the parent's structure.
    auto learned = learnedCoreSpec(dir.path("snap"), 0);
    const auto& original = *parent.model.attention[0].core;
    EXPECT_EQ(learned.structure, original.structure);
    EXPECT_EQ(learned.preset, "custom");
    std::vector<double>* editable = nullptr;
    if (learned.structure == spec::CoreStructure::Dense) {
      EXPECT_EQ(learned.dense_values, snap.at("blocks.0.attn.core"));
      EXPECT_EQ(learned.trainable_mask, original.trainable_mask);
      editable = &learned.dense_values;
    } else {
      EXPECT_EQ(learned.a.kind, spec::FactorKind::Trainable);
      // Saved as float32; the spec holds the same numbers as doubles.
      EXPECT_EQ(learned.a.values, snap.at("blocks.0.attn.core.A"));
      EXPECT_NE(learned.a.values, original.a.values) << "training did not move A";
      editable = &learned.a.values;
    }

    // Edit one value and fork.
    (*editable)[1] = 0.5;
    auto fork = parent;
    fork.model.attention[0].core = learned;
    const auto lines = initialiseOnly(fork, dir.path("fork"), {dir.path("snap"), true});
    ASSERT_FALSE(lines.empty());
    EXPECT_NE(lines.front().find("started from"), std::string::npos) << lines.front();
    EXPECT_NE(lines.front().find("(step 8)"), std::string::npos) << lines.front();

    const auto forked = weightsOf(checkpointFile(dir.path("fork"), "model.safetensors"));
    for (const char* name : {"embed.weight", "pos.weight", "blocks.0.attn.wq.weight", "blocks.1.attn.wo.weight",
                             "blocks.1.fc1.weight", "blocks.0.ln1.weight", "ln_f.bias"})
      EXPECT_EQ(forked.at(name), snap.at(name)) << name;
    const std::string coreName =
        learned.structure == spec::CoreStructure::Dense ? "blocks.0.attn.core" : "blocks.0.attn.core.A";
    EXPECT_NE(forked.at(coreName), snap.at(coreName)) << "the edited core was overwritten by the checkpoint";
    EXPECT_FLOAT_EQ(static_cast<float>(forked.at(coreName)[1]), 0.5f);

    const auto init = nlohmann::json::parse(files::readWholeFile(dir.path("fork/init.json")));
    EXPECT_EQ(init.at("format"), "tensorscope.warm_start");
    EXPECT_EQ(init.at("source_step"), 8);
    EXPECT_GT(init.at("loaded").size(), 10u);
    EXPECT_FALSE(init.at("from_config").empty());
    EXPECT_TRUE(init.at("fresh").empty());
    // The typed record reads what the trainer wrote, field for field, and writes it back the same.
    const auto record = parseWarmStartRecord(files::readWholeFile(dir.path("fork/init.json")), "init.json");
    EXPECT_EQ(record.source_step, 8);
    EXPECT_EQ(record.loaded.size(), init.at("loaded").size());
    EXPECT_EQ(parseWarmStartRecord(warmStartRecordToJson(record), "again"), record);
  }
}

TEST(WarmStart, ARecordOfAnotherKindOrWithBadFieldsIsRefusedWithTheReason) {
  const auto refusal = [](const std::string& text) {
    try {
      parseWarmStartRecord(text, "RUN/init.json");
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  const std::string head = R"({"format": "tensorscope.warm_start", "version": 1, "source": "/runs/a")";
  EXPECT_EQ(refusal(head + "}"), "accepted");
  EXPECT_NE(refusal("{\"format\": \"x\"}").find("RUN/init.json: not a tensorscope.warm_start record"), std::string::npos);
  EXPECT_NE(refusal("{").find("RUN/init.json is damaged"), std::string::npos);
  EXPECT_NE(refusal(head + R"(, "source_step": -7})").find("source_step"), std::string::npos);
  EXPECT_NE(refusal(head + R"(, "loaded": [1, 2]})").find("loaded: must be an array of tensor names"),
            std::string::npos);
  EXPECT_NE(refusal(head + R"(, "extra": 1})").find("extra"), std::string::npos);
  EXPECT_NE(refusal(R"({"format": "tensorscope.warm_start", "version": 1})").find("source"), std::string::npos);
}

TEST(WarmStart, CoresCanComeFromTheCheckpointAndMismatchedShapesStartFresh) {
  TempDir dir("warm_shapes");
  const auto parent = tinyRun("skip_right", 4);
  trainRun(parent, dir.path("parent"));
  auto wider = parent;
  wider.model.ffn_multiplier = 3;  // fc1/fc2 change shape; everything else fits
  initialiseOnly(wider, dir.path("child"), {dir.path("parent"), /*cores_from_config=*/false});
  const auto src = weightsOf(checkpointFile(dir.path("parent"), "model.safetensors"));
  const auto child = weightsOf(checkpointFile(dir.path("child"), "model.safetensors"));
  EXPECT_EQ(child.at("blocks.0.attn.core.A"), src.at("blocks.0.attn.core.A"));  // taken over this time
  EXPECT_EQ(child.at("blocks.1.attn.wk.weight"), src.at("blocks.1.attn.wk.weight"));
  EXPECT_NE(child.at("blocks.0.fc1.weight").size(), src.at("blocks.0.fc1.weight").size());
  const auto init = nlohmann::json::parse(files::readWholeFile(dir.path("child/init.json")));
  const auto fresh = init.at("fresh").get<std::vector<std::string>>();
  EXPECT_EQ(fresh.size(), 6u);  // fc1.weight, fc1.bias and fc2.weight of both layers (fc2.bias keeps F)
  EXPECT_NE(std::find(fresh.begin(), fresh.end(), "blocks.0.fc1.weight"), fresh.end());
}

TEST(WarmStart, PreciseErrors) {
  TempDir dir("warm_errors");
  std::filesystem::create_directories(dir.path("empty"));
  try {
    snapshotCheckpoint(dir.path("empty"), dir.path("snap"));
    FAIL() << "expected an error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("holds no checkpoint"), std::string::npos) << e.what();
  }
  trainRun(tinyRun("mhsa", 2), dir.path("mhsa"));
  EXPECT_THROW(learnedCoreSpec(dir.path("mhsa"), 0), std::invalid_argument);  // no THSA core
  trainRun(tinyRun("skip_left", 2), dir.path("thsa"));
  EXPECT_NO_THROW(learnedCoreSpec(dir.path("thsa"), 1));
  EXPECT_THROW(learnedCoreSpec(dir.path("thsa"), 2), std::invalid_argument);  // two layers only
  // A warm start is for new runs; a resumed run continues its own checkpoint.
  TrainerControl control;
  ProgressSink quiet;
  EXPECT_THROW(train(tinyRun("mhsa", 4), dir.path("mhsa"), control, quiet, true, -1, {dir.path("thsa"), true}),
               std::invalid_argument);
}

TEST(WarmStart, AForkWhoseDesignDrawsCPrimeStartsFromTheDrawnValues) {
  // A mixing the fork's design draws (an edit of C′ in the Design dock) comes from the config; the
  // one it leaves at its default comes from the checkpoint, as every other trained weight does.
  TempDir dir("warm_fork_cprime");
  auto parent = tinyRun("talking_heads", 8);
  trainRun(parent, dir.path("parent"));
  snapshotCheckpoint(dir.path("parent"), dir.path("snap"));
  const auto snap = weightsOf(dir.path("snap/model.safetensors"));
  ASSERT_NE(snap.at("blocks.0.attn.mix_post"), (std::vector<double>{1, 0, 0, 1})) << "training did not move C′";
  auto fork = parent;
  auto& s = fork.model.attention[0];
  s.slots.post_mixing = spec::canonicalMixing({0.25, 0.75, 0.5, 0.5}, {1, 0, 1, 1}, 2);
  initialiseOnly(fork, dir.path("fork"), {dir.path("snap"), true});
  const auto forked = weightsOf(checkpointFile(dir.path("fork"), "model.safetensors"));
  for (const char* layer : {"blocks.0.attn.", "blocks.1.attn."}) {
    EXPECT_EQ(forked.at(std::string(layer) + "mix_post"), (std::vector<double>{0.25, 0.75, 0.5, 0.5})) << layer;
    EXPECT_EQ(forked.at(std::string(layer) + "mix_pre"), snap.at(std::string(layer) + "mix_pre")) << layer;
  }
  const auto record = parseWarmStartRecord(files::readWholeFile(dir.path("fork/init.json")), "init.json");
  EXPECT_NE(std::find(record.from_config.begin(), record.from_config.end(), "blocks.1.attn.mix_post"),
            record.from_config.end());
  EXPECT_EQ(std::find(record.from_config.begin(), record.from_config.end(), "blocks.1.attn.mix_pre"),
            record.from_config.end());
  // Trained on: the frozen entry stays as drawn (AdamW's weight decay included), the others move.
  fork.train.weight_decay = 0.5;
  trainRun(fork, dir.path("trained"));
  const auto trained = weightsOf(checkpointFile(dir.path("trained"), "model.safetensors")).at("blocks.0.attn.mix_post");
  EXPECT_EQ(trained[1], 0.75) << "the frozen entry moved";
  EXPECT_NE(trained[0], 0.25) << "the trained entries did not move";
}
