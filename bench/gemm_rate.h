#pragma once
// The GEMM rate of this machine, measured in the benchmark's own process and thread setting, so
// that kernels are reported as a fraction of what the BLAS reaches in the same run.

#include <torch/types.h>

#include <algorithm>
#include <chrono>
#include <vector>

namespace tensorscope::bench {

/// Median GFLOP/s of a float32 [n×n]·[n×n] product (torch::mm, LibTorch's BLAS, intra-op threads)
/// over `rounds` timed products after two warm-up ones.
inline double measureGemmGflops(int64_t n = 1024, int rounds = 9) {
  const auto a = torch::randn({n, n}), b = torch::randn({n, n});
  auto c = torch::empty({n, n});
  torch::mm_out(c, a, b);
  torch::mm_out(c, a, b);
  std::vector<double> rates;
  for (int i = 0; i < rounds; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    torch::mm_out(c, a, b);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    rates.push_back(2.0 * double(n) * double(n) * double(n) / s / 1e9);
  }
  std::sort(rates.begin(), rates.end());
  return rates[rates.size() / 2];
}

}  // namespace tensorscope::bench
