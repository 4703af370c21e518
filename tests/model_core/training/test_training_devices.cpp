// Training on each device (issue 16), the CUDA instances skipped with the reason where no CUDA
// device is usable (tests/common/test_device.h): every variant trains there with the losses of the
// CPU run, checkpoints and resumes as the uninterrupted run does, and evaluates; the memory guard
// refuses a configuration that does not fit in GPU memory before allocating anything.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "model_core/memory_guard.h"
#include "model_core/run_directory.h"
#include "model_core/safetensors.h"
#include "model_core/snapshots.h"
#include "spec/attention_spec.h"
#include "model_core/trainer.h"
#include "error_of.h"
#include "test_device.h"
#include "training_test_util.h"

using namespace tensorscope::model_core;
using tensorscope::model_core::testing::checkpointFile;
using tensorscope::model_core::testing::TempDir;
using tensorscope::model_core::testing::tinyRun;
using tensorscope::test::DeviceTest;
using tensorscope::test::errorOf;

namespace {

struct LossRecorder : ProgressSink {
  std::vector<double> losses;
  void onMetrics(const MetricsSnapshot& m) override { losses.push_back(m.loss); }
};

/// Sets an environment variable for the scope, restoring what was there.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old, had_ = true;
    ::setenv(name, value, 1);
  }
  ~ScopedEnv() { had_ ? ::setenv(name_, old_.c_str(), 1) : ::unsetenv(name_); }

 private:
  const char* name_;
  std::string old_;
  bool had_ = false;
};

std::vector<double> trainLosses(RunConfig c, const std::string& device, const std::string& dir) {
  c.train.device = device;
  TrainerControl control;
  LossRecorder rec;
  const auto r = train(c, dir, control, rec);
  EXPECT_FALSE(r.diverged) << r.message;
  return rec.losses;
}

/// Largest |a - b| over the tensors of two weight files (+inf when their names or sizes differ).
double maxWeightDifference(const std::string& a, const std::string& b) {
  const auto fa = readSafetensors(a), fb = readSafetensors(b);
  if (fa.tensors.size() != fb.tensors.size()) return INFINITY;
  double worst = 0;
  for (const auto& [name, t] : fa.tensors) {
    const auto it = fb.tensors.find(name);
    if (it == fb.tensors.end()) return INFINITY;
    const auto va = toFloatVector(t), vb = toFloatVector(it->second);
    if (va.size() != vb.size()) return INFINITY;
    for (std::size_t i = 0; i < va.size(); ++i) worst = std::max(worst, double(std::abs(va[i] - vb[i])));
  }
  return worst;
}

class TrainingOnDevice : public DeviceTest {
 protected:
  std::string deviceName() const { return onCuda() ? "cuda" : "cpu"; }
};

}  // namespace

/// Trains `c` six steps on the CPU and on the device under test: the same losses to float32 drift,
/// and the device's run evaluates (its config names the device).
void expectTrainsAsOnTheCpu(RunConfig c, const std::string& name, const std::string& device, TempDir& dir) {
  SCOPED_TRACE(name);
  c.train.lr = 3e-3;
  const std::string run = dir.path(name + "_on_device");
  const auto cpu = trainLosses(c, "cpu", dir.path(name + "_reference"));
  const auto mine = trainLosses(c, device, run);
  ASSERT_EQ(mine.size(), 6u);
  ASSERT_EQ(cpu.size(), 6u);
  for (std::size_t i = 0; i < mine.size(); ++i) {
    ASSERT_TRUE(std::isfinite(mine[i])) << "step " << i + 1;
    // Same initial weights and batches; float32 sums in another order drift a little per step.
    EXPECT_NEAR(mine[i], cpu[i], 1e-4 * (1 + i) * std::abs(cpu[i])) << "step " << i + 1;
  }
  EXPECT_FALSE(evaluateRun(run).empty());
}

TEST_P(TrainingOnDevice, EveryVariantTrainsWithTheLossesOfTheCpuRun) {
  TempDir dir("train_devices_" + deviceName());
  for (const char* preset : {"mhsa", "fixed_head", "tp", "thsa", "skip_left", "skip_right", "low_rank",
                             "thsa_linear", "multilinear", "dimwise"})
    expectTrainsAsOnTheCpu(tinyRun(preset, 6), preset, deviceName(), dir);
}

// The modern designs of contract section 8 (MQA, GQA, talking heads, gates, differential, MLA, TPA,
// MTA) at the tiny run's sizes, with the latent, factor and head counts scaled down to fit them.
TEST_P(TrainingOnDevice, EveryModernDesignTrainsWithTheLossesOfTheCpuRun) {
  TempDir dir("train_designs_" + deviceName());
  int trained = 0;
  for (const std::string& design : tensorscope::spec::designPresetNames()) {
    auto c = tinyRun(design, 6);
    auto& s = c.model.attention.front();
    if (s.slots.differential) s.sizes.H = 1;  // two maps per head, value heads 2D wide: F = 2·H·D
    if (s.slots.latent.kv_rank > 0) s.slots.latent.kv_rank = 8, s.slots.latent.rope_dim = 4;
    expectTrainsAsOnTheCpu(c, design, deviceName(), dir);
    ++trained;
  }
  EXPECT_GE(trained, 10) << "the design presets shrank";
}

TEST_P(TrainingOnDevice, AResumedRunEndsWhereTheUninterruptedOneEnds) {
  TempDir dir("train_resume_" + deviceName());
  auto c = tinyRun("thsa", 12);
  c.train.device = deviceName();
  TrainerControl c1, c2, c3;
  LossRecorder r1, r2, r3;
  train(c, dir.path("straight"), c1, r1);
  train(c, dir.path("split"), c2, r2, false, 6);
  train(c, dir.path("split"), c3, r3, /*resume=*/true, 12);
  ASSERT_EQ(r3.losses.size(), 6u);
  // On the CPU resume is bit-identical (test_trainer); a GPU may reduce in another order after a
  // reload, so the weights agree to float32 rounding over six steps.
  const double tolerance = onCuda() ? 1e-5 : 0.0;
  EXPECT_LE(maxWeightDifference(checkpointFile(dir.path("straight"), "model.safetensors"),
                                checkpointFile(dir.path("split"), "model.safetensors")),
            tolerance);
  EXPECT_NEAR(r3.losses.back(), r1.losses.back(), onCuda() ? 1e-5 * std::abs(r1.losses.back()) : 0.0);
}

TS_ALL_DEVICES(TrainingOnDevice);

TEST(GpuMemoryGuard, OnTheCudaDeviceRefusesWhatDoesNotFitBeforeAllocating) {
  if (const auto why = tensorscope::test::cudaUnavailableReason(); !why.empty())
    GTEST_SKIP() << "CUDA test skipped: " << why << " (GpuMemoryGuard.RehearsedLimit runs everywhere)";
  const double freeBytes = availableGpuMemoryBytes();
  ASSERT_GT(freeBytes, 0) << "cudaMemGetInfo gave nothing on a machine with a CUDA device";
  TempDir dir("train_gpu_mem");
  auto c = tinyRun("multilinear", 1);  // its [B, N, N, N] tensor grows fastest
  c.task.seq_len = 512;
  c.model.attention[0].sizes.seq_len = 512;
  c.train.batch = 65536;
  c.train.device = "cuda";
  const ScopedEnv roomyHost("TENSORSCOPE_MEMORY_LIMIT", "1000000G");  // the host check must not decide
  TrainerControl control;
  LossRecorder rec;
  const std::string m = errorOf([&] { train(c, dir.path("run"), control, rec); });
  EXPECT_NE(m.find("of GPU memory; the GPU has"), std::string::npos) << m;
  EXPECT_TRUE(rec.losses.empty());
  // A configuration that fits trains.
  EXPECT_EQ(trainLosses(tinyRun("multilinear", 1), "cuda", dir.path("small")).size(), 1u);
}

// The GPU guard's arithmetic and message on any machine: a rehearsed GPU of 1 KiB refuses a run on
// "cuda" before anything asks for the device.
TEST(GpuMemoryGuard, RehearsedLimit) {
  const ScopedEnv limit("TENSORSCOPE_GPU_MEMORY_LIMIT", "1K");
  EXPECT_DOUBLE_EQ(availableGpuMemoryBytes(), 1024.0);
  TempDir dir("train_gpu_rehearsal");
  auto c = tinyRun("mhsa", 1);
  c.train.device = "cuda";
  TrainerControl control;
  LossRecorder rec;
  const std::string m = errorOf([&] { train(c, dir.path("run"), control, rec); });
  EXPECT_NE(m.find("on the GPU needs an estimated"), std::string::npos) << m;
  EXPECT_NE(m.find("the GPU has 0.00 GiB free"), std::string::npos) << m;
  EXPECT_NE(m.find("Reduce train.batch"), std::string::npos) << m;
  const ScopedEnv bad("TENSORSCOPE_GPU_MEMORY_LIMIT", "lots");
  const std::string malformed = errorOf([] { availableGpuMemoryBytes(); });
  EXPECT_NE(malformed.find("TENSORSCOPE_GPU_MEMORY_LIMIT must be a positive number"), std::string::npos) << malformed;
}
