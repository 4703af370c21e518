#pragma once
// Device-parametrised tests (issue 16): a suite instantiated with TS_ALL_DEVICES runs once on the
// CPU and once on cuda:0; where LibTorch has no usable CUDA device the CUDA instance is skipped
// with the reason (a CPU-only LibTorch such as Debian's, or no device), so CI stays green without a
// GPU and scripts/gpu-check.sh runs them for real on one.

#include <gtest/gtest.h>
#include <torch/cuda.h>
#include <torch/types.h>

#include <ostream>
#include <string>

#include "model_core/runtime.h"

namespace tensorscope::test {

enum class TestDevice { Cpu, Cuda };

inline torch::Device torchDevice(TestDevice d) {
  return d == TestDevice::Cuda ? torch::Device(torch::kCUDA, 0) : torch::Device(torch::kCPU);
}

/// Why the CUDA instances cannot run here, or "" when they can.
inline std::string cudaUnavailableReason() {
  if (torch::cuda::is_available()) return "";
  const auto info = model_core::runtimeInfo();
  return info.cuda_built ? "LibTorch " + info.torch_version + " has CUDA but no CUDA device is usable"
                         : "LibTorch " + info.torch_version + " is a CPU-only build (no CUDA)";
}

/// How gtest and ctest print the parameter ("cpu", "cuda" rather than the enum's bytes).
inline void PrintTo(TestDevice d, std::ostream* os) { *os << (d == TestDevice::Cuda ? "cuda" : "cpu"); }

/// Parameter names for the instances: .../cpu and .../cuda.
inline std::string deviceParamName(const ::testing::TestParamInfo<TestDevice>& info) {
  return info.param == TestDevice::Cuda ? "cuda" : "cpu";
}

/// A fixture whose tests run once per device; SetUp skips the CUDA instance with the reason.
class DeviceTest : public ::testing::TestWithParam<TestDevice> {
 protected:
  void SetUp() override {
    if (GetParam() == TestDevice::Cuda)
      if (const std::string why = cudaUnavailableReason(); !why.empty()) GTEST_SKIP() << "CUDA test skipped: " << why;
  }
  torch::Device device() const { return torchDevice(GetParam()); }
  bool onCuda() const { return GetParam() == TestDevice::Cuda; }
};

}  // namespace tensorscope::test

/// Instantiates a DeviceTest-derived suite for the CPU and CUDA.
#define TS_ALL_DEVICES(Suite)                                                                                \
  INSTANTIATE_TEST_SUITE_P(Devices, Suite,                                                                  \
                           ::testing::Values(::tensorscope::test::TestDevice::Cpu,                          \
                                             ::tensorscope::test::TestDevice::Cuda),                        \
                           ::tensorscope::test::deviceParamName)
