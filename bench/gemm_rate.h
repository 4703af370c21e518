#pragma once
// The GEMM rate of this machine, measured in the benchmark's own process and thread setting (and on
// the benchmark's device), so that kernels are reported as a fraction of what the BLAS (or cuBLAS)
// reaches in the same run.

#include <torch/types.h>

#include <algorithm>
#include <chrono>
#include <vector>

#include "model_core/runtime.h"

namespace tensorscope::bench {

/// The default product size per device: 1024 on the CPU (the size of every CPU measurement so far),
/// 8192 on a GPU, where much smaller products leave most of an H100's 132 multiprocessors idle.
inline int64_t defaultGemmSize(const torch::Device& device) { return device.is_cuda() ? 8192 : 1024; }

/// Median GFLOP/s of an [n×n]·[n×n] product of `dtype` on `device` (torch::mm: LibTorch's BLAS with
/// its intra-op threads, or cuBLAS) over `rounds` timed products after two warm-up ones. n <= 0
/// picks defaultGemmSize(device). On a GPU every product is timed between two synchronisations
/// (kernel launches are asynchronous).
inline double measureGemmGflops(const torch::Device& device = torch::kCPU, torch::ScalarType dtype = torch::kFloat,
                                int64_t n = 0, int rounds = 9) {
  if (n <= 0) n = defaultGemmSize(device);
  const auto options = torch::TensorOptions().dtype(dtype).device(device);
  const auto a = torch::randn({n, n}, options), b = torch::randn({n, n}, options);
  auto c = torch::empty({n, n}, options);
  const bool gpu = device.is_cuda();
  torch::mm_out(c, a, b);  // warm-up: CUDA context, cuBLAS handle and workspace, BLAS threads
  torch::mm_out(c, a, b);
  std::vector<double> rates;
  for (int i = 0; i < rounds; ++i) {
    if (gpu) model_core::synchronizeGpu();
    const auto t0 = std::chrono::steady_clock::now();
    torch::mm_out(c, a, b);
    if (gpu) model_core::synchronizeGpu();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    rates.push_back(2.0 * double(n) * double(n) * double(n) / s / 1e9);
  }
  std::sort(rates.begin(), rates.end());
  return rates[rates.size() / 2];
}

}  // namespace tensorscope::bench
