// The trainer end to end on tiny runs: checkpoints, bit-identical resume, divergence, stop, pause.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "files/atomic_file.h"
#include "files/read_file.h"
#include "model_core/inspection_files.h"
#include "model_core/run_config.h"
#include "model_core/run_directory.h"
#include "model_core/safetensors.h"
#include "model_core/snapshots.h"
#include "model_core/trainer.h"
#include "training/training_session.h"
#include "training_test_util.h"
#include "test_paths.h"

using namespace tensorscope::model_core;
using tensorscope::model_core::testing::checkpointFile;
using tensorscope::model_core::testing::TempDir;
using tensorscope::model_core::testing::tinyRun;

namespace {

struct Recorder : ProgressSink {
  std::vector<MetricsSnapshot> metrics;
  std::vector<EvalSnapshot> evals;
  std::vector<InspectionSnapshot> inspections;
  std::vector<std::int64_t> checkpoints;
  std::function<void(const MetricsSnapshot&)> hook;
  void onMetrics(const MetricsSnapshot& m) override {
    metrics.push_back(m);
    if (hook) hook(m);
  }
  void onEval(const EvalSnapshot& e) override { evals.push_back(e); }
  void onInspection(const InspectionSnapshot& s) override { inspections.push_back(s); }
  void onCheckpoint(std::int64_t step, const std::string&) override { checkpoints.push_back(step); }
  std::vector<std::string> messages;
  void onMessage(const std::string& m) override { messages.push_back(m); }
};

/// Polls `done` (the recorder fills from the trainer thread) for up to 2 s.
template <typename F>
void waitUntil(F done) {
  for (int i = 0; i < 200 && !done(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
}

std::string fileBytes(const std::string& p) { return tensorscope::files::readWholeFile(p); }

/// The run's current checkpoint holds finite weights only.
void expectFiniteCheckpoint(const std::string& run) {
  for (const auto& [name, t] : readSafetensors(checkpointFile(run, "model.safetensors")).tensors)
    for (float v : toFloatVector(t)) ASSERT_TRUE(std::isfinite(v)) << name;
}

}  // namespace

// What the views get, copied out of the model by one converter (io/host_tensor_torch.h): a core
// is [R, R], and TP roles are one row of D values per non-padding probe token, each labelled, for
// every head of every layer.
TEST(Trainer, InspectionHoldsCoresAndOneRoleRowPerProbeTokenForEveryHead) {
  TrainingSession thsa(tinyRun("thsa", 1));
  const auto a = thsa.inspect();
  ASSERT_EQ(a.cores.size(), 2u);  // two layers
  EXPECT_EQ(a.cores[0].shape, (std::vector<std::int64_t>{16, 16}));
  EXPECT_EQ(a.cores[0].values.size(), 256u);
  EXPECT_TRUE(a.roles.empty());
  EXPECT_NE(a.probe.find("example 0"), std::string::npos) << a.probe;
  TrainingSession tp(tinyRun("tp", 1));
  const auto b = tp.inspect();
  EXPECT_TRUE(b.cores.empty());
  ASSERT_EQ(b.roles.size(), 4u);  // 2 layers x 2 heads
  for (int layer = 0; layer < 2; ++layer)
    for (int head = 0; head < 2; ++head) {
      const RoleVectors* r = b.rolesOf(layer, head);
      ASSERT_NE(r, nullptr) << layer << "," << head;
      ASSERT_GT(r->vectors.rows(), 0);
      EXPECT_EQ(r->vectors.cols(), 8);  // D
      EXPECT_EQ(r->vectors.values.size(), static_cast<std::size_t>(r->vectors.rows()) * 8);
      EXPECT_EQ(b.role_tokens.size(), static_cast<std::size_t>(r->vectors.rows()));
    }
  EXPECT_NE(b.rolesOf(0, 0)->vectors.values, b.rolesOf(0, 1)->vectors.values) << "heads have their own roles";
  EXPECT_EQ(b.role_labels.size(), b.role_tokens.size());
  EXPECT_NE(b.role_probe.find("8 "), std::string::npos) << b.role_probe;
  for (const auto& t : b.role_tokens) EXPECT_NE(t, "<pad>");
}

// The head mixings and MTA kernels travel with every inspection (issue 36: C′ live while training),
// copied from the model at the inspection's step. The oracle is the checkpoint written at that same
// step, read back from its safetensors file: every named weight of every layer equal, and only the
// weights a layer has.
TEST(Trainer, InspectionsCarryTheHeadMixingsAndMtaKernelsAsTheCheckpointHasThem) {
  for (const char* preset : {"talking_heads", "mta", "mhsa"}) {
    SCOPED_TRACE(preset);
    TempDir dir(std::string("train_slot_weights_") + preset);
    auto c = tinyRun(preset, 4);
    c.train.lr = 0.05;  // moves the weights off their identity start within four steps
    TrainerControl control;
    Recorder rec;
    const auto result = train(c, dir.path("run"), control, rec);
    ASSERT_FALSE(result.diverged) << result.message;
    ASSERT_FALSE(rec.inspections.empty());
    const auto& last = rec.inspections.back();
    ASSERT_EQ(last.step, 4);
    ASSERT_EQ(last.slot_weights.size(), 2u) << "one entry per layer";
    const auto file = readSafetensors(checkpointFile(dir.path("run"), "model.safetensors"));
    for (int layer = 0; layer < 2; ++layer) {
      std::vector<std::string> expected;
      for (const auto& name : slotWeightNames())
        if (file.tensors.count("blocks." + std::to_string(layer) + ".attn." + name)) expected.push_back(name);
      std::vector<std::string> got;
      for (const auto& w : last.slot_weights[size_t(layer)]) {
        got.push_back(w.name);
        const auto& t = file.tensors.at("blocks." + std::to_string(layer) + ".attn." + w.name);
        EXPECT_EQ(w.value.shape, t.shape) << w.name;
        EXPECT_EQ(w.value.values, toFloatVector(t)) << w.name;
      }
      EXPECT_EQ(got, expected) << "layer " << layer;
      if (std::string(preset) == "mhsa") EXPECT_TRUE(got.empty());
      if (std::string(preset) == "talking_heads") {
        EXPECT_EQ(got, (std::vector<std::string>{"mix_post", "mix_pre"}));
        // Trained, not the identity it starts as.
        const auto& v = last.slot_weights[size_t(layer)][0].value.values;
        ASSERT_EQ(v.size(), 4u);
        EXPECT_GT(std::abs(v[0] - 1.0f) + std::abs(v[1]) + std::abs(v[2]) + std::abs(v[3] - 1.0f), 1e-4);
      }
      if (std::string(preset) == "mta")
        EXPECT_EQ(got, (std::vector<std::string>{"mix_post", "mix_pre", "mta_kernel", "mta_kernel_after_sm"}));
    }
  }
}

// A typed probe: the question of a question-answer task, which the model answers, so that the maps
// cover question and answer; a probe the model cannot read is refused with the reason.
TEST(Trainer, InspectsATypedProbe) {
  TrainingSession s(tinyRun("mhsa", 1));
  const auto snap = s.inspect("0123");
  ASSERT_GE(snap.probe_tokens.size(), 6u);
  EXPECT_EQ(std::vector<std::string>(snap.probe_tokens.begin(), snap.probe_tokens.begin() + 6),
            (std::vector<std::string>{"<bos>", "0", "1", "2", "3", "<sep>"}));
  EXPECT_LE(snap.probe_tokens.size(), 24u);
  EXPECT_EQ(snap.probe.rfind("\u201c0123\u201d \u2192 \u201c", 0), 0u) << snap.probe;
  ASSERT_EQ(snap.maps.size(), 2u);
  const auto n = static_cast<std::int64_t>(snap.probe_tokens.size());
  EXPECT_EQ(snap.maps[0].at(0).shape, (std::vector<std::int64_t>{n, n}));
  const auto refusal = [&](const std::string& probe) {
    try {
      s.inspect(probe);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(refusal("01x").find("cannot be read by this model"), std::string::npos) << refusal("01x");
  EXPECT_NE(refusal(std::string(30, '1')).find("context of 24"), std::string::npos) << refusal(std::string(30, '1'));
  // The model still trains after a refusal (inspect leaves evaluation mode however it ends).
  EXPECT_TRUE(s.model()->is_training());
}

// While paused, an inspection with a typed probe comes at once; a probe the model cannot read
// brings the default back with a message.
TEST(Trainer, InspectsOnRequestWithTheProbeEvenWhilePaused) {
  TempDir dir("train_probe_request");
  auto c = tinyRun("mhsa", 6);
  c.train.inspect_interval = 100;  // no scheduled inspection before the end
  TrainerControl control;
  control.pause();
  Recorder rec;
  std::thread worker([&] { train(c, dir.path("run"), control, rec); });
  control.step();
  waitUntil([&] { return !rec.metrics.empty(); });
  control.requestInspection("01");
  waitUntil([&] { return !rec.inspections.empty(); });
  ASSERT_EQ(rec.inspections.size(), 1u);
  EXPECT_EQ(rec.inspections[0].step, 1);
  EXPECT_EQ(rec.inspections[0].probe.rfind("\u201c01\u201d", 0), 0u) << rec.inspections[0].probe;
  control.requestInspection("zz");
  waitUntil([&] { return rec.inspections.size() >= 2; });
  ASSERT_EQ(rec.inspections.size(), 2u);
  EXPECT_NE(rec.inspections[1].probe.find("example 0"), std::string::npos) << "the default probe again";
  ASSERT_FALSE(rec.messages.empty());
  EXPECT_NE(rec.messages.back().find("probe zz"), std::string::npos) << rec.messages.back();
  EXPECT_EQ(control.probe(), "");
  EXPECT_EQ(rec.metrics.size(), 1u) << "serving the requests must not take a step";
  control.resume();
  worker.join();
  EXPECT_EQ(rec.inspections.size(), 3u);  // and the last step's
  // Requested inspections stay out of the stable rank history; the final one is in it.
  EXPECT_EQ(readInspectionHistory(dir.path("run")).steps, (std::vector<std::int64_t>{6}));
}

TEST(Trainer, WritesARunDirectoryAndLearns) {
  TempDir dir("train_basic");
  auto c = tinyRun("mhsa", 40);
  c.train.lr = 3e-3;
  TrainerControl control;
  Recorder rec;
  const auto r = train(c, dir.path("run"), control, rec);
  EXPECT_EQ(r.steps_done, 40);
  EXPECT_FALSE(r.diverged);
  for (const char* f : {"config.json", "checkpoint.json", "latest/model.safetensors", "latest/optimizer.safetensors",
                        "latest/trainer_state.json", "latest/manifest.json", "metrics.jsonl", "metrics.csv",
                        "run_status.json"})
    EXPECT_TRUE(std::filesystem::exists(dir.path("run/") + f)) << f;
  ASSERT_EQ(rec.metrics.size(), 40u);
  EXPECT_LT(rec.metrics.back().loss, rec.metrics.front().loss) << "loss did not fall";
  ASSERT_FALSE(rec.evals.empty());
  EXPECT_GE(rec.evals.back().exact_match, 0.0);  // copy is a question-answer task
  ASSERT_FALSE(rec.inspections.empty());
  EXPECT_EQ(rec.inspections.back().maps.size(), 2u);          // two layers
  EXPECT_EQ(rec.inspections.back().maps[0].size(), 2u);       // two heads
  EXPECT_EQ(rec.inspections.back().maps[0][0].shape, (std::vector<std::int64_t>{24, 24}));
  // The run config reads back, and evaluation of the run directory works.
  EXPECT_NO_THROW(readRunConfig(dir.path("run/config.json")));
  EXPECT_FALSE(evaluateRun(dir.path("run")).empty());
}

TEST(Trainer, ResumeIsBitIdentical) {
  TempDir dir("train_resume");
  const auto c = tinyRun("skip_right", 12);
  TrainerControl c1, c2, c3;
  Recorder r1, r2, r3;
  train(c, dir.path("straight"), c1, r1);
  train(c, dir.path("split"), c2, r2, false, 6);
  train(c, dir.path("split"), c3, r3, /*resume=*/true, 12);
  EXPECT_TRUE(fileBytes(checkpointFile(dir.path("straight"), "model.safetensors")) == fileBytes(checkpointFile(dir.path("split"), "model.safetensors")))
      << "weights differ after resume";
  EXPECT_TRUE(fileBytes(checkpointFile(dir.path("straight"), "optimizer.safetensors")) == fileBytes(checkpointFile(dir.path("split"), "optimizer.safetensors")))
      << "optimizer state differs after resume";
  ASSERT_EQ(r3.metrics.size(), 6u);
  EXPECT_EQ(r3.metrics.front().step, 7);
  EXPECT_DOUBLE_EQ(r3.metrics.back().loss, r1.metrics.back().loss);
}

TEST(Trainer, RefusesToOverwriteARunAndToResumeNothing) {
  TempDir dir("train_refuse");
  const auto c = tinyRun("mhsa", 2);
  TrainerControl control;
  Recorder rec;
  train(c, dir.path("run"), control, rec);
  EXPECT_THROW(train(c, dir.path("run"), control, rec), std::invalid_argument);
  EXPECT_THROW(train(c, dir.path("empty"), control, rec, true), std::invalid_argument);
}

TEST(Trainer, DivergenceStopsAndKeepsTheLastGoodCheckpoint) {
  TempDir dir("train_nan");
  auto c = tinyRun("mhsa", 40);
  c.train.checkpoint_interval = 5;
  TrainerControl control;
  control.injectNonFiniteLossAt(13);  // NaN loss and gradients at step 13
  Recorder rec;
  const auto r = train(c, dir.path("run"), control, rec);
  ASSERT_TRUE(r.diverged) << "expected the divergence guard to stop the run";
  EXPECT_NE(r.message.find("diverged at step 13"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("last good checkpoint (step 10)"), std::string::npos) << r.message;
  EXPECT_EQ(r.steps_done, 12);
  // The files hold the step-10 checkpoint, untouched by the two good steps after it.
  const auto header = readSafetensorsHeader(checkpointFile(dir.path("run"), "model.safetensors"));
  EXPECT_EQ(header.metadata.at("step"), "10");
  expectFiniteCheckpoint(dir.path("run"));
  EXPECT_NE(fileBytes(dir.path("run/run_status.json")).find("\"diverged\""), std::string::npos);
}

TEST(Trainer, StopTakesEffectWithinOneStep) {
  TempDir dir("train_stop");
  const auto c = tinyRun("mhsa", 1000);
  TrainerControl control;
  Recorder rec;
  rec.hook = [&](const MetricsSnapshot& m) {
    if (m.step == 3) control.requestStop();
  };
  const auto r = train(c, dir.path("run"), control, rec);
  EXPECT_TRUE(r.stopped_early);
  EXPECT_EQ(r.steps_done, 3);
  EXPECT_NE(fileBytes(dir.path("run/run_status.json")).find("\"stopped\""), std::string::npos);
}

TEST(Trainer, PauseSingleStepResume) {
  TempDir dir("train_pause");
  const auto c = tinyRun("mhsa", 6);
  TrainerControl control;
  control.pause();
  Recorder rec;
  std::thread worker([&] { train(c, dir.path("run"), control, rec); });
  control.step();
  waitUntil([&] { return !rec.metrics.empty(); });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(rec.metrics.size(), 1u) << "a single step while paused";
  control.resume();
  worker.join();
  EXPECT_EQ(rec.metrics.size(), 6u);
}

TEST(Trainer, WritesACheckpointOnRequestEvenWhilePaused) {
  TempDir dir("train_ckpt_request");
  auto c = tinyRun("mhsa", 6);
  c.train.checkpoint_interval = 100;  // no scheduled checkpoint before the end
  TrainerControl control;
  control.pause();
  Recorder rec;
  std::thread worker([&] { train(c, dir.path("run"), control, rec); });
  control.step();
  waitUntil([&] { return !rec.metrics.empty(); });
  control.requestCheckpoint();
  waitUntil([&] { return !rec.checkpoints.empty(); });
  ASSERT_EQ(rec.checkpoints.size(), 1u);
  EXPECT_EQ(rec.checkpoints.front(), 1);
  EXPECT_EQ(rec.metrics.size(), 1u) << "serving the request must not take a step";
  EXPECT_NE(fileBytes(checkpointFile(dir.path("run"), "trainer_state.json")).find("\"step\": 1"), std::string::npos);
  control.resume();
  worker.join();
  EXPECT_EQ(rec.metrics.size(), 6u);
}

TEST(Trainer, RefusesAConfigurationThatDoesNotFitInMemory) {
  TempDir dir("train_mem");
  auto c = tinyRun("multilinear", 1);
  c.task.seq_len = 512;
  c.model.attention[0].sizes.seq_len = 512;
  // The largest batch the config accepts: the logits alone (B·N·256 values, three copies) need
  // about 100 GB. (Multilinear no longer keeps a B·N³ tensor, so its layers alone would fit.)
  c.train.batch = 65536;
  TrainerControl control;
  Recorder rec;
  try {
    train(c, dir.path("run"), control, rec);
    FAIL() << "expected a refusal";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("GiB"), std::string::npos) << e.what();
  }
}

TEST(RunConfig, RoundTripAndPreciseErrors) {
  const auto c = tinyRun("thsa", 5);
  const auto back = runConfigFromJson(runConfigToJson(c));
  EXPECT_EQ(runConfigToJson(back), runConfigToJson(c));
  auto bad = c;
  bad.model.attention[0].causal = false;
  bad.model.d_model = 32;
  bad.train.lr = -1;
  const auto problems = validateRunConfig(bad);
  auto has = [&](const std::string& s) {
    for (const auto& p : problems)
      if (p.find(s) != std::string::npos) return true;
    return false;
  };
  EXPECT_TRUE(has("needs causal attention"));
  EXPECT_TRUE(has("must equal model.d_model = 32"));
  EXPECT_TRUE(has("train.lr"));
  EXPECT_THROW(runConfigFromJson(R"({"format":"tensorscope.run_config","version":1,"trian":{}})"), std::invalid_argument);
}

TEST(RunConfig, ImageTasksCountPatchTokensNotSeqLen) {
  // A Fashion-MNIST classifier sees (28/patch)² tokens whatever task.seq_len says: multilinear,
  // which fixes N when built, is checked against that, and so is the memory estimate.
  auto c = tinyRun("multilinear", 5);
  c.task.name = "fashion_mnist";
  c.task.patch = 7;
  c.task.seq_len = 24;
  c.model.kind = "encoder_classifier";
  c.model.attention[0].causal = false;
  EXPECT_EQ(modelSequenceLength(c), 16);
  c.model.attention[0].sizes.seq_len = 24;
  const auto problems = validateRunConfig(c);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems.front().find("number of patch tokens (28/7)² = 16; got 24"), std::string::npos) << problems.front();
  c.model.attention[0].sizes.seq_len = 16;
  EXPECT_TRUE(validateRunConfig(c).empty());
  auto longer = c;
  longer.task.seq_len = 4096;  // ignored by the image model
  EXPECT_DOUBLE_EQ(estimateTrainingMemory(longer), estimateTrainingMemory(c));
}

TEST(RunConfig, EveryShippedExampleIsValid) {
  const std::filesystem::path dir = std::filesystem::path(ts_test::testDataDir()) / ".." / ".." / "resources" / "examples";
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().extension() != ".json") continue;
    EXPECT_NO_THROW(readRunConfig(e.path().string())) << e.path();
    ++n;
  }
  EXPECT_GE(n, 6) << "examples cover every task";
}

// Issue 18, "runs that never lie": each case below was reproduced on the earlier trainer first.

namespace {

/// A run directory in the layout before checkpoint directories (the files at its top), built
/// from a real run's current checkpoint, so a test can hand the trainer a crafted trainer state.
std::string topLevelRun(TempDir& dir, const std::string& from, const std::string& name) {
  const std::string out = dir.path(name);
  std::filesystem::create_directories(out);
  for (const char* f : {"model.safetensors", "optimizer.safetensors", "trainer_state.json"})
    std::filesystem::copy_file(checkpointFile(from, f), out + "/" + f);
  std::filesystem::copy_file(from + "/config.json", out + "/config.json");
  return out;
}

std::string replaced(std::string text, const std::string& what, const std::string& with) {
  const auto at = text.find(what);
  EXPECT_NE(at, std::string::npos) << what;
  if (at != std::string::npos) text.replace(at, what.size(), with);
  return text;
}

}  // namespace

TEST(Trainer, ResumeValidatesTheTrainerStateAgainstItsCheckpoint) {
  TempDir dir("train_state");
  const auto c = tinyRun("mhsa", 4);
  TrainerControl control;
  Recorder rec;
  train(c, dir.path("run"), control, rec);
  const std::string state = fileBytes(checkpointFile(dir.path("run"), "trainer_state.json"));
  const struct {
    std::string what, with, expect;
  } cases[] = {
      {"\"step\": 4", "\"step\": 100000", "says step 100000: the files are not one checkpoint"},
      {"\"step\": 4", "\"step\": 3", "optimizer_step: is 4, outside [0, 3]"},  // would replay a step
      {"\"step\": 4", "\"step\": 9223372036854775807", "step: is 9223372036854775807, outside"},
      {"\"optimizer_step\": 4", "\"optimizer_step\": -1", "optimizer_step: is -1, outside [0, 4]"},
      {"\"data_rng\": \"", "\"data_rng\": \"x", "data_rng: must be a decimal unsigned 64-bit integer"},
      {"\"format\": \"tensorscope.trainer_state\"", "\"format\": \"other\"", "\"format\" must be"},
      {"\"version\": 1", "\"version\": 2", "\"version\" must be 1"},
  };
  int i = 0;
  for (const auto& k : cases) {
    SCOPED_TRACE(k.with);
    const std::string run = topLevelRun(dir, dir.path("run"), "crafted" + std::to_string(i++));
    tensorscope::files::writeFileAtomically(run + "/trainer_state.json", replaced(state, k.what, k.with));
    try {
      train(c, run, control, rec, true, 8);
      ADD_FAILURE() << "resumed a checkpoint whose trainer state lies";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(k.expect), std::string::npos) << e.what();
    }
  }
  // The untouched state resumes.
  const std::string good = topLevelRun(dir, dir.path("run"), "untouched");
  EXPECT_EQ(train(c, good, control, rec, true, 6).steps_done, 6);
}

TEST(Trainer, NonFiniteWeightsNeverReachACheckpoint) {
  // eps 1e-300 is 0 in float32: weights whose gradients vanish get 0/0 = NaN from the update,
  // though the loss and the gradient norm stay finite.
  TempDir dir("train_eps");
  auto c = tinyRun("mhsa", 20);
  c.train.eps = 1e-300;
  c.train.checkpoint_interval = 1;
  TrainerControl control;
  Recorder rec;
  const auto r = train(c, dir.path("run"), control, rec);
  ASSERT_TRUE(r.diverged) << r.message;
  EXPECT_NE(r.message.find("non-finite"), std::string::npos) << r.message;
  expectFiniteCheckpoint(dir.path("run"));
  EXPECT_NE(fileBytes(dir.path("run/run_status.json")).find("\"diverged\""), std::string::npos);
}

// A resume of a folder that is not there is refused and leaves no empty folder (the explorer calls
// train() directly, without the command line's own check).
TEST(Trainer, ResumingAMissingFolderIsRefusedAndCreatesNothing) {
  TempDir dir("train_missing");
  TrainerControl control;
  Recorder rec;
  const std::string run = dir.path("gone");
  try {
    train(tinyRun("mhsa", 2), run, control, rec, true);
    ADD_FAILURE() << "resumed a folder that does not exist";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("does not exist"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(std::filesystem::exists(run));
}

TEST(Trainer, ADirectoryWithoutACompleteCheckpointRestartsAndADamagedLogLineDoesNotBlockResume) {
  TempDir dir("train_restart");
  const auto c = tinyRun("mhsa", 6);
  TrainerControl control;
  Recorder rec;
  // What a kill during the first checkpoint leaves: no pointer, a staging directory, a temporary file.
  const std::string run = dir.path("run");
  std::filesystem::create_directories(run + "/checkpoints/.stage-12345");
  tensorscope::files::writeFileAtomically(run + "/checkpoints/.stage-12345/model.safetensors", "half a file");
  tensorscope::files::writeFileAtomically(run + "/.model.safetensors.tmp42", "litter");
  tensorscope::files::writeFileAtomically(run + "/metrics.jsonl", "{\"kind\": \"train\", \"step\": 1}\n");
  try {
    train(c, run, control, rec, true);
    ADD_FAILURE() << "resumed a run that never committed a checkpoint";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("holds no complete checkpoint to resume"), std::string::npos) << e.what();
  }
  EXPECT_EQ(train(c, run, control, rec, false, 3).steps_done, 3) << "--config … --out restarts it";
  EXPECT_FALSE(std::filesystem::exists(run + "/checkpoints/.stage-12345"));
  EXPECT_FALSE(std::filesystem::exists(run + "/.model.safetensors.tmp42"));
  // A damaged line inside the log is never parsed by a resume: the log is cut to its checkpoint's length.
  std::string log = fileBytes(run + "/metrics.jsonl");
  ASSERT_GT(log.size(), 10u);
  log[2] = '#';
  std::ofstream(run + "/metrics.jsonl", std::ios::binary | std::ios::trunc) << log;
  EXPECT_EQ(train(c, run, control, rec, true).steps_done, 6);
  EXPECT_EQ(fileBytes(run + "/metrics.jsonl").substr(0, 3), log.substr(0, 3));
}

TEST(Trainer, ResumeFallsBackToThePreviousCheckpointWhenTheCurrentIsDamaged) {
  TempDir dir("train_fallback");
  auto c = tinyRun("mhsa", 8);
  c.train.checkpoint_interval = 2;
  TrainerControl control;
  Recorder straight, first, second;
  train(c, dir.path("straight"), control, straight);
  train(c, dir.path("split"), control, first, false, 6);  // checkpoints of steps 4 (previous) and 6
  std::string weights = fileBytes(checkpointFile(dir.path("split"), "model.safetensors"));
  weights[weights.size() - 1] ^= 0x5a;  // a flipped bit in the last weight
  std::ofstream(checkpointFile(dir.path("split"), "model.safetensors"), std::ios::binary | std::ios::trunc) << weights;
  const auto r = train(c, dir.path("split"), control, second, true);
  EXPECT_EQ(r.steps_done, 8);
  bool told = false;
  for (const auto& m : second.messages)
    told = told || (m.find("does not match its manifest's digest") != std::string::npos &&
                    m.find("using the checkpoint of step 4") != std::string::npos);
  EXPECT_TRUE(told) << "the fallback is reported with its reason";
  ASSERT_FALSE(second.metrics.empty());
  EXPECT_EQ(second.metrics.front().step, 5) << "resumed from step 4";
  EXPECT_TRUE(fileBytes(checkpointFile(dir.path("straight"), "model.safetensors")) ==
              fileBytes(checkpointFile(dir.path("split"), "model.safetensors")))
      << "the resumed run ends where the straight one does";
}
