// The causal dimension-wise kernel alone (kernels/dimwise_causal.h, issue 38): forward and backward
// timed apart, no projections, no autograd, no LibTorch, so that two builds of the kernel can be
// compared by alternating their binaries (bench/README.md, issue 38) without the layer's GEMMs and
// allocator in the spread. Prints one JSON document: the median, minimum and spread of each pass
// over the timed repetitions, the row-operations build, and a checksum of the outputs.
//
//   dimwise_kernel_bench [--B 32] [--N 128] [--d 128] [--c 2] [--reps 30] [--threads 2]
//
// Inputs: q, k, v ~ N(0, 1), filters ~ N(0, 0.01), ∂O ~ N(0, 1), on 64-byte boundaries as LibTorch
// allocates them. Threads: std::thread, one contiguous range of items each (what at::parallel_for
// gives the kernel in the layer).
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "kernels/dimwise_causal.h"
#include "kernels/line_aligned.h"
#include "kernels/row_ops.h"

using namespace tensorscope::model_core::kernels;

namespace {

using Buffer = LineVector<float>;

nlohmann::json summary(std::vector<double> ms) {
  std::sort(ms.begin(), ms.end());
  const double median = ms[ms.size() / 2];
  return {{"median_ms", median}, {"min_ms", ms.front()}, {"max_ms", ms.back()},
          {"spread", ms.back() / ms.front()}};
}

}  // namespace

int main(int argc, char** argv) {
  int64_t B = 32, N = 128, d = 128, c = 2;
  int reps = 30, threads = 2;
  for (int i = 1; i < argc; i += 2) {
    const std::string a = argv[i];
    if (i + 1 == argc) {
      std::cerr << "dimwise_kernel_bench: " << a << " needs a value\n";
      return 2;
    }
    const long long v = std::atoll(argv[i + 1]);
    if (a == "--B") B = v;
    else if (a == "--N") N = v;
    else if (a == "--d") d = v;
    else if (a == "--c") c = v;
    else if (a == "--reps") reps = int(v);
    else if (a == "--threads") threads = int(v);
    else {
      std::cerr << "dimwise_kernel_bench: unknown option " << a << "\n";
      return 2;
    }
  }
  if (B < 1 || N < 1 || d < 1 || c < 1 || reps < 1 || threads < 1) {
    std::cerr << "dimwise_kernel_bench: every size, --reps and --threads must be at least 1\n";
    return 2;
  }
  std::mt19937 rng(1);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  Buffer qkv(size_t(B * N * 3 * d)), W(size_t(c * d * d)), O(size_t(B * N * c * d)), lse(size_t(B * N * d)),
      dO(size_t(B * N * c * d)), dqkv(size_t(B * N * 3 * d)), dW(size_t(c * d * d));
  for (auto& x : qkv) x = normal(rng);
  for (auto& x : W) x = 0.1f * normal(rng);
  for (auto& x : dO) x = normal(rng);
  DimwiseCausalProblem<float> p;
  p.B = B, p.N = N, p.d = d, p.c = c, p.qkv = qkv.data(), p.W = W.data();
  Buffer states(size_t(B * p.checkpoints() * d * d));
  const Parallel par{[threads](int64_t count, const RangeBody& body) {
                       std::vector<std::thread> pool;
                       for (int t = 1; t < threads; ++t)
                         pool.emplace_back([&, t] { body(count * t / threads, count * (t + 1) / threads); });
                       body(0, count / threads);
                       for (auto& th : pool) th.join();
                     },
                     threads};
  std::vector<double> forward, backward;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    dimwiseCausalForward(p, O.data(), lse.data(), states.data(), par);
    const auto t1 = std::chrono::steady_clock::now();
    dimwiseCausalBackward(p, lse.data(), states.data(), O.data(), dO.data(), dqkv.data(), dW.data(), par);
    const auto t2 = std::chrono::steady_clock::now();
    forward.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    backward.push_back(std::chrono::duration<double, std::milli>(t2 - t1).count());
  }
  double checksum = 0;
  for (float x : O) checksum += x;
  for (float x : dqkv) checksum += x;
  for (float x : dW) checksum += x;
  const nlohmann::json doc = {{"benchmark", "dimwise_kernel"},
                              {"isa", rowOpsIsa()},
                              {"B", B}, {"N", N}, {"d", d}, {"c", c}, {"threads", threads}, {"reps", reps},
                              {"forward", summary(forward)},
                              {"backward", summary(backward)},
                              {"checksum", checksum}};
  std::cout << doc.dump(2) << "\n";
  return 0;
}
