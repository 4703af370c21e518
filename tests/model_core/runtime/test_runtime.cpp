#include <gtest/gtest.h>
#include <torch/version.h>

#include <cstdlib>
#include <thread>

#include "model_core/runtime.h"

using namespace tensorscope::model_core;

TEST(Runtime, DefaultsToAllHardwareThreads) {
  unsetenv("TENSORSCOPE_THREADS");
  const int n = configureThreads(0);
  EXPECT_EQ(n, static_cast<int>(std::thread::hardware_concurrency()));
  EXPECT_EQ(runtimeInfo().intra_op_threads, n);
}

TEST(Runtime, ExplicitChoiceWins) {
  setenv("TENSORSCOPE_THREADS", "2", 1);
  EXPECT_EQ(configureThreads(1), 1);
  EXPECT_EQ(configureThreads(0), 2);  // then the environment
  setenv("TENSORSCOPE_THREADS", "two", 1);
  EXPECT_THROW(configureThreads(0), std::invalid_argument);
  unsetenv("TENSORSCOPE_THREADS");
  configureThreads(0);
}

// Issue 18 item 12: `tensorscope train --threads 1` with a config saying threads: 0 ran on every core.
TEST(Runtime, CommandLineOverrideBeatsTheConfig) {
  unsetenv("TENSORSCOPE_THREADS");
  EXPECT_EQ(setThreadsOverride(1), 1);
  EXPECT_EQ(configureThreads(0), 1);  // a config's threads: 0 ("all cores")
  EXPECT_EQ(configureThreads(2), 1);  // and an explicit config value
  EXPECT_EQ(setThreadsOverride(0), static_cast<int>(std::thread::hardware_concurrency()));
  EXPECT_EQ(configureThreads(1), 1);  // cleared: the config speaks again
  configureThreads(0);
}

TEST(Runtime, ReportsLibTorchAndBlas) {
  const auto info = runtimeInfo();
  EXPECT_EQ(info.torch_version, TORCH_VERSION) << "the LibTorch the process runs is the one it was built against";
  EXPECT_FALSE(info.blas.empty());
  // A LibTorch that calls the system BLAS (Debian's): scripts/setup.sh installs libopenblas0-openmp
  // and selects it; reference BLAS is ~17x slower. The official 2.x builds carry MKL inside.
  if (info.blas.find("linked into LibTorch") == std::string::npos) {
    EXPECT_TRUE(info.blas_is_openblas) << info.blas;
  }
  EXPECT_EQ(info.default_device, info.cuda_available ? "cuda:0" : "cpu");
  const auto text = describeRuntime(info);
  EXPECT_NE(text.find("threads: "), std::string::npos);
}

TEST(Runtime, AllocatorKeepsFreedMemoryAfterConfiguration) {
#if defined(__SANITIZE_ADDRESS__)
  // AddressSanitizer replaces malloc: glibc's mallopt settings do not exist there (it returns 0).
  GTEST_SKIP() << "glibc's allocator is replaced by AddressSanitizer's in this build";
#endif
  configureThreads(0);
  EXPECT_TRUE(tuneAllocator());  // glibc accepted every setting
  const auto info = runtimeInfo();
  EXPECT_NE(info.allocator.find("keeping freed memory"), std::string::npos) << info.allocator;
  EXPECT_NE(describeRuntime(info).find("allocator: "), std::string::npos);
}

#include <ATen/ATen.h>

#include "model_core/memory_tracker.h"

TEST(CpuMemoryTracker, CountsTensorStorageExactly) {
  CpuMemoryTracker::install();
  const auto before = CpuMemoryTracker::currentBytes();
  CpuMemoryTracker::resetPeak();
  {
    auto t = at::empty({1024, 1024}, at::kFloat);  // 4 MiB
    EXPECT_GE(CpuMemoryTracker::currentBytes() - before, 4 << 20);
    EXPECT_LT(CpuMemoryTracker::currentBytes() - before, (4 << 20) + 65536);
  }
  EXPECT_EQ(CpuMemoryTracker::currentBytes(), before);
  EXPECT_GE(CpuMemoryTracker::peakBytes() - before, 4 << 20);
}
