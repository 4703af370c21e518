// The projections' float32 GEMM (kernels/gemm.h, issue 41): oneDNN's dnnl_sgemm, which linearMap runs
// the model's linear maps on, against the BLAS that ATen calls (OpenBLAS on a set-up machine), on the
// shapes of the reference training step (B·N = 4096 tokens, F = 128, FFN 4F, vocabulary 77): each
// map's forward y = x·Wᵀ, its ∂x = ∂y·W and its ∂W = ∂yᵀ·x. The two libraries alternate within every
// round (the VM's drift falls on both); the medians, minima and spread of the rounds, achieved
// GFLOP/s, and the step's GEMM time (every shape times its count in a 4-layer MHSA step) for each.
// Prints one JSON document. Measure on an otherwise idle machine. TENSORSCOPE_GEMM=blas leaves nothing
// to compare (the projection GEMM off, kernels/gemm.h): it exits 77.
//
//   projection_gemm_bench [--tokens 4096] [--F 128] [--rounds 9] [--reps 10] [--threads 0 (all)]
//                         [--only onednn|blas]   (one library alone: no alternation, for checking that
//                                                 alternating does not cost either one)
#include <ATen/Parallel.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "kernels/gemm.h"
#include "kernels/line_aligned.h"
#include "model_core/blas_kernels.h"
#include "model_core/runtime.h"

namespace {

using namespace tensorscope::model_core;

struct Shape {
  std::string name;
  int64_t in, out, perStep;  ///< a map in -> out, and how many such maps a 4-layer MHSA step runs
};

struct Pass {
  const char* name;
  bool ta, tb;  ///< C [m, n] = op(A)·op(B)
};

double seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

int main(int argc, char** argv) {
  startWithBestBlasKernels(argv);  // the OpenBLAS kernels ATen runs in every Tensorscope program (issue 40)
  int64_t T = 4096, F = 128;
  int rounds = 9, reps = 10, threads = 0;
  std::string only;
  for (int i = 1; i < argc; i += 2) {
    const std::string a = argv[i];
    if (i + 1 == argc) {
      std::cerr << "projection_gemm_bench: " << a << " needs a value\n";
      return 2;
    }
    const long long v = std::atoll(argv[i + 1]);
    if (a == "--only") only = argv[i + 1];
    else if (a == "--tokens") T = v;
    else if (a == "--F") F = v;
    else if (a == "--rounds") rounds = int(v);
    else if (a == "--reps") reps = int(v);
    else if (a == "--threads") threads = int(v);
    else {
      std::cerr << "projection_gemm_bench: unknown option " << a << "\n";
      return 2;
    }
  }
  if (!only.empty() && only != "onednn" && only != "blas") {
    std::cerr << "projection_gemm_bench: --only takes onednn or blas\n";
    return 2;
  }
  if (T < 1 || F < 1 || rounds < 1 || reps < 1 || threads < 0) {
    std::cerr << "projection_gemm_bench: --tokens, --F, --rounds and --reps must be at least 1\n";
    return 2;
  }
  configureThreads(threads);
  const auto& blas = kernels::blas();
  const auto& dnnl = kernels::projectionGemm();
  if (!blas.available() || !dnnl.available()) {
    std::cerr << "projection_gemm_bench: needs both GEMMs; BLAS: " << blas.source << "; oneDNN: " << dnnl.source << "\n";
    return 77;  // the smoke test's "skipped"
  }
  const std::vector<Shape> shapes = {{"qkv", F, 3 * F, 4}, {"out", F, F, 4}, {"ffn1", F, 4 * F, 4},
                                     {"ffn2", 4 * F, F, 4}, {"head", F, 77, 1}};
  const std::vector<Pass> passes = {{"forward", false, true}, {"dx", false, false}, {"dW", true, false}};
  std::mt19937 rng(1);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  nlohmann::json rows = nlohmann::json::array();
  std::vector<std::vector<double>> stepMs(2, std::vector<double>(size_t(rounds), 0.0));
  for (const auto& s : shapes) {
    // On 64-byte boundaries, as LibTorch allocates tensors (a misaligned C slows some kernels' stores).
    kernels::LineVector<float> x(size_t(T * s.in)), w(size_t(s.out * s.in)), g(size_t(T * s.out)),
        c(size_t(T * std::max(s.in, s.out)));
    for (auto* v : {&x, &w, &g})
      for (auto& e : *v) e = normal(rng);
    for (const auto& p : passes) {
      // forward: [T, out] = x·Wᵀ; dx: [T, in] = g·W; dW: [out, in] = gᵀ·x.
      const bool fwd = p.name[0] == 'f', dW = p.name[1] == 'W';
      const int64_t m = dW ? s.out : T, n = fwd ? s.out : s.in, k = fwd ? s.in : dW ? T : s.out;
      const float* A = fwd ? x.data() : g.data();
      const float* B = fwd ? w.data() : dW ? x.data() : w.data();
      const int64_t lda = fwd ? s.in : s.out, ldb = s.in;
      auto call = [&](int engine) {
        if (engine == 0) kernels::projectionSgemm(p.ta, p.tb, m, n, k, 1.0f, A, lda, B, ldb, 0.0f, c.data(), n);
        else kernels::gemm<float>(p.ta, p.tb, m, n, k, 1.0f, A, lda, B, ldb, 0.0f, c.data(), n);
      };
      std::vector<std::vector<double>> ms(2);
      const bool use[2] = {only != "blas", only != "onednn"};
      for (int e = 0; e < 2; ++e)
        if (use[e]) call(e);  // warm-up
      for (int r = 0; r < rounds; ++r)
        for (int e = 0; e < 2; ++e) {
          if (!use[e]) {
            ms[size_t(e)].push_back(0.0);
            continue;
          }
          const double t0 = seconds();
          for (int i = 0; i < reps; ++i) call(e);
          const double t = (seconds() - t0) * 1e3 / reps;
          ms[size_t(e)].push_back(t);
          stepMs[size_t(e)][size_t(r)] += t * double(s.perStep);
        }
      const double gflop = 2.0 * double(m) * double(n) * double(k) * 1e-9;
      nlohmann::json row = {{"shape", s.name}, {"pass", p.name}, {"m", m}, {"n", n}, {"k", k}};
      double medians[2] = {0.0, 0.0};
      for (int e = 0; e < 2; ++e) {
        if (!use[e]) continue;
        auto v = ms[size_t(e)];
        std::sort(v.begin(), v.end());
        medians[e] = v[v.size() / 2];
        row[e == 0 ? "onednn" : "blas"] = {{"median_ms", medians[e]}, {"min_ms", v.front()},
                                            {"spread", v.back() / v.front()}, {"gflops", gflop / (medians[e] * 1e-3)}};
      }
      if (use[0] && use[1]) row["blas_over_onednn"] = medians[1] / medians[0];
      rows.push_back(row);
    }
  }
  nlohmann::json step;
  for (int e = 0; e < 2; ++e) {
    if (only == (e == 0 ? "blas" : "onednn")) continue;
    auto v = stepMs[size_t(e)];
    std::sort(v.begin(), v.end());
    step[e == 0 ? "onednn_ms" : "blas_ms"] = {{"median", v[v.size() / 2]}, {"min", v.front()}, {"max", v.back()}};
  }
  if (only.empty()) {
    std::vector<double> ratio;
    for (int r = 0; r < rounds; ++r) ratio.push_back(stepMs[1][size_t(r)] / stepMs[0][size_t(r)]);
    std::sort(ratio.begin(), ratio.end());
    step["blas_over_onednn_per_round"] = {{"median", ratio[ratio.size() / 2]}, {"min", ratio.front()},
                                          {"max", ratio.back()}};
  }
  const auto info = runtimeInfo();
  nlohmann::json doc = {{"benchmark", "projection_gemm"},
                        {"tokens", T}, {"F", F}, {"rounds", rounds}, {"reps", reps}, {"only", only.empty() ? "both, alternating" : only},
                        {"threads", at::get_num_threads()},
                        {"onednn", dnnl.source}, {"blas", info.blas_kernels.empty() ? info.blas : info.blas_kernels},
                        {"shapes", rows}, {"step_gemms", step}};
  std::cout << doc.dump(2) << "\n";
  return 0;
}
