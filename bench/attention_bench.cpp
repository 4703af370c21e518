// Layer benchmark (issue 3): forward+backward time and peak tensor memory per attention variant,
// and the N-scaling of dimwise against mhsa. Prints one JSON document on stdout.
//
//   attention_bench [--quick] [--threads T] [--min-seconds S] [--causal] [--only NAME[,NAME...]]
//                   [--device cpu|cuda]
//
// `--only multilinear_scaling` (issue 38): the block-term layer on its CPU formulation (no T) and
// on the T-materialising one side by side, and its N-scaling to the largest N whose Wo fits
// (runMultilinear).
//
// `--only mla_inputs` (issue 41): MLA's absorbed-order inputs (the W^UK products, the latent's
// RMSNorm and the rotary turns) on the fused function and on its ATen formulation side by side.
//
// `--only dimwise_causal` (issue 38): the causal dimwise layer on its fused kernel and on its ATen
// formulation side by side, with the full dimwise and causal MHSA layers of the same run, and the
// causal layer's N-scaling (runDimwiseCausal).
//
// Layer rows (runVariants): every layer preset (the modern designs of contract §8 among them:
// mqa, gqa, talking_heads, gated, gated_headwise, diff, mla, tpa, mta, collaborative), mla_absorbed (MLA in the
// absorbed order) and mhsa_rotary (mhsa with rotary positions, the model option of §9, half-split
// pairs, base 10000); each row's `rotary` says whether its queries and keys are turned.
//
// The N-scaling parts live in attention_bench_scaling.cpp; attention_bench.h holds what both share.
//
// Sizes: B=32, N=128, F=128, H=4, D=32, R=128 (multilinear at N=32); scaling at B=4, N=256..4096
// (..16384 on CUDA). Peak memory is exact CPU tensor storage (CpuMemoryTracker), or on CUDA the
// caching allocator's allocated bytes on device 0, above what was live before the step.
//
// --device cuda (issue 16): modules and inputs on CUDA device 0, every timed region between two
// synchronisations, the GEMM rate from cuBLAS (float32 8192³, plus a bf16 one for reference). The
// fused kernels are CPU-only: there every layer takes its ATen formulation and the `kernel` part is
// skipped. The `brnm` part (default on CUDA, `--only brnm` on the CPU) grows N for the head-mixing
// THSA cores, whose ATen formulation keeps [B, R, N, M] tensors, until the device runs out of memory.
#include <ATen/Parallel.h>
#include <nlohmann/json.hpp>
#include <torch/csrc/autograd/autograd.h>
#include <torch/types.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <limits>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "attention/attention_module.h"
#include "attention/cuda_attention.h"
#include "attention/fused_attention.h"
#include "attention/mla.h"
#include "attention/rotary.h"
#include "attention_bench.h"
#include "build_config.h"
#include "gemm_rate.h"
#include "model_core/blas_kernels.h"
#include "model_core/memory_guard.h"
#include "model_core/memory_tracker.h"
#include "model_core/runtime.h"
#include "spec/cost_model.h"
#include "spec/design_baseline.h"

#if TS_TORCH_HAS_CUDA_BUILD
#include <c10/cuda/CUDACachingAllocator.h>
#endif

using namespace tensorscope;
using Clock = std::chrono::steady_clock;

namespace tensorscope::bench {

namespace {

/// Waits for the work queued on the GPU when the benchmark runs there (CUDA launches return at once,
/// so a clock read without it measures the launches, not the work).
void sync(const Config& cfg) {
  if (cfg.gpu()) model_core::synchronizeGpu();
}

/// Peak tensor bytes during `f` above what was live before it: exact CPU tensor storage
/// (CpuMemoryTracker), or on CUDA the caching allocator's allocated bytes on device 0.
template <typename F>
double peakBytesAbove(const Config& cfg, F&& f) {
  if (cfg.gpu()) {
    model_core::synchronizeGpu();
    const double before = model_core::gpuTensorBytes().current;
    model_core::resetGpuPeak();
    f();
    model_core::synchronizeGpu();
    return model_core::gpuTensorBytes().peak - before;
  }
  const auto before = model_core::CpuMemoryTracker::currentBytes();
  model_core::CpuMemoryTracker::resetPeak();
  f();
  return double(model_core::CpuMemoryTracker::peakBytes() - before);
}

/// Whether `e` reports an allocation that did not fit on the device: the CUDA caching allocator's
/// "CUDA out of memory", a plain CUDA "out of memory" error, or cuBLAS failing to allocate its
/// workspace (CUBLAS_STATUS_ALLOC_FAILED) when the allocator holds nearly all of the device.
bool isOutOfMemory(const std::exception& e) {
  const std::string what = errorMessage(e);
  return what.find("out of memory") != std::string::npos || what.find("CUBLAS_STATUS_ALLOC_FAILED") != std::string::npos;
}

/// After an out-of-memory error: the failed step's tensors are gone with the frames that held them;
/// this also hands the allocator's cached blocks back to the driver (CUDA builds only).
void releaseCachedGpuMemory() {
#if TS_TORCH_HAS_CUDA_BUILD
  c10::cuda::CUDACachingAllocator::emptyCache();
#endif
}

}  // namespace

/// Times forward+backward of `module` on x [B, N, F], both on cfg.device, until cfg.minSeconds have
/// passed (>= 3 steps).
Measure measure(model_core::AttentionModule& module, int64_t B, int64_t N, const Config& cfg) {
  module->to(cfg.device);
  module->train();
  const auto x = torch::randn({B, N, module->spec().sizes.F}, torch::TensorOptions().device(cfg.device));
  auto step = [&] {
    const auto y = module->forward(x, {}).y;
    y.square().mean().backward();
  };
  step();  // warm-up: first-touch allocations, OpenMP pool (on CUDA: kernels loaded, allocator cache)
  module->zero_grad();
  Measure m;
  m.peak_bytes = peakBytesAbove(cfg, step);
  sync(cfg);
  const auto t0 = Clock::now();
  double elapsed = 0;
  while (m.steps < 3 || elapsed < cfg.minSeconds) {
    step();
    ++m.steps;
    sync(cfg);
    elapsed = std::chrono::duration<double>(Clock::now() - t0).count();
  }
  m.seconds_per_step = elapsed / m.steps;
  return m;
}

/// An exception's message without LibTorch's C++ backtrace (c10::Error appends one to what()).
std::string errorMessage(const std::exception& e) {
  if (const auto* c10 = dynamic_cast<const c10::Error*>(&e)) return c10->what_without_backtrace();
  return e.what();
}

/// measure() of a fresh module for spec `s` at batch B, or nothing when the step does not fit in
/// memory (the module and every tensor of the failed step are freed first). Other errors propagate.
std::optional<Measure> measureUnlessOutOfMemory(const spec::AttentionSpec& s, int64_t B, int64_t N, const Config& cfg) {
  try {
    torch::manual_seed(0);
    auto module = model_core::makeAttentionModule(s);
    return measure(module, B, N, cfg);
  } catch (const std::exception& e) {
    if (!isOutOfMemory(e)) throw;
  }
  releaseCachedGpuMemory();
  return std::nullopt;
}

model_core::Rotary rowRotary(const std::string& row) {
  return model_core::rotaryFromPositions(row == "mhsa_rotary" ? "rotary" : "none");
}

spec::AttentionSpec layer(const std::string& preset, int F, int H, int D, int R, int N) {
  // mla_absorbed: the mla preset in the absorbed order (on the CPU the grouped fused kernel).
  // mhsa_rotary: the mhsa preset; the rotary turn is the model's option, set on the module
  // (rowRotary), not a field of the spec.
  auto s = spec::makeSpecPreset(preset == "mla_absorbed" ? "mla" : preset == "mhsa_rotary" ? "mhsa" : preset);
  if (preset == "mla_absorbed") s.slots.latent.order = spec::LatentOrder::Absorbed;
  s.sizes.F = F;
  s.sizes.seq_len = N;
  if (s.core) {
    const std::string core = s.core->preset;
    if (core == "heads_only" || core == "trainable_heads_only") {
      H = R;  // D = 1 heads at the same width
      D = 1;
    }
    s.sizes.H = H;
    s.sizes.D = D;
    s.sizes.R = H * D;
    s.core = spec::makeCorePreset(core, H, D);
  } else {
    // Differential attention at the paper's match (as train_bench): half the heads, each with two
    // maps of size D and a value head of 2D.
    if (s.slots.differential) H /= 2;
    s.sizes.H = H;
    s.sizes.D = D;
    s.sizes.R = R;
  }
  // Collaborative's shared key space and MLA's latent in their presets' proportions at this size
  // (as train_bench and the explorer's Cost rows).
  spec::keepPresetProportions(s);
  return s;
}

}  // namespace tensorscope::bench

namespace {

using namespace tensorscope::bench;

nlohmann::json runVariants(const Config& cfg) {
  const int64_t B = cfg.quick ? 2 : 32, N = cfg.quick ? 16 : 128;
  const int F = cfg.quick ? 32 : 128, H = 4, D = cfg.quick ? 8 : 32, R = H * D;
  const int64_t Nml = cfg.quick ? 8 : 32;
  const std::vector<std::string> presets = {"mhsa", "fixed_head", "tp", "core:mhsa", "skip_left", "skip_right",
                                            "trainable_heads_only", "heads_only", "single_head", "thsa",
                                            "low_rank", "thsa_linear", "multilinear", "dimwise", "tpa", "tpa_kv_only",
                                            "mqa", "gqa", "talking_heads", "gated", "gated_headwise", "diff",
                                            "mla", "mla_absorbed", "mta", "collaborative", "mhsa_rotary"};
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& p : presets) {
    if (!cfg.wants(p)) continue;
    const int64_t n = p == "multilinear" ? Nml : N;
    auto s = layer(p, F, H, D, R, int(n));
    s.causal = cfg.causal;
    if (p == "fixed_head") s.sizes.D = 2 * D;  // d_p twice the prevalent F/H
    torch::manual_seed(0);
    auto module = model_core::makeAttentionModule(s);
    // Rotary positions (contract §9) as a model with `model.positions` "rotary" sets them on each
    // layer (transformer.cpp); the cost model counts no turn (elementwise, O(B·N·R)).
    const auto rotary = rowRotary(p);
    module->setRotary(rotary);
    const auto m = measure(module, B, n, cfg);
    const auto cost = spec::estimateCost(s, B, n);
    nlohmann::json row = {{"name", p},
                          {"variant", std::string(spec::toString(s.variant))},
                          {"rotary", rotary.on},
                          {"B", B},
                          {"N", n},
                          {"F", s.sizes.F},
                          {"H", s.sizes.H},
                          {"D", s.sizes.D},
                          {"R", s.sizes.R},
                          {"parameters", module->trainableParameterCount()},
                          {"fwd_bwd_ms", m.seconds_per_step * 1e3},
                          {"steps_timed", m.steps},
                          {"peak_tensor_mb", m.peak_bytes / 1048576.0},
                          {"model_forward_gflop", cost.forward_flops / 1e9},
                          {"model_activation_mb", cost.activation_bytes / 1048576.0}};
    if (!cfg.causal) {
      // Rate on the cost model's forward FLOPs (backward counted as twice the forward; exp and
      // recomputation not counted), against the GEMM rate measured in this run. Full layers only:
      // the cost model counts every query-key pair, which a causal layer does not need.
      const double gflops = 3.0 * cost.forward_flops / m.seconds_per_step / 1e9;
      row["achieved_gflops"] = gflops;
      row["fraction_of_gemm"] = gflops / cfg.gemmGflops;
    }
    if (p == "thsa") {
      // The naive dense THSA keeps B·R·N·M logits and B·R·N·M probabilities per layer (float32).
      const double naive = 2.0 * double(B) * s.sizes.R * double(n) * double(n) * 4.0;
      row["naive_BRNM_bound_mb"] = naive / 1048576.0;
      row["peak_over_naive_bound"] = m.peak_bytes / naive;
    }
    rows.push_back(row);
    std::cerr << "  " << p << ": " << row["fwd_bwd_ms"].get<double>() << " ms, "
              << row["peak_tensor_mb"].get<double>() << " MB\n";
  }
  return rows;
}

/// Median seconds of `f` over at least `minSeconds` (>= 5 runs) after one warm-up run.
template <typename F>
double medianSeconds(F&& f, double minSeconds) {
  f();
  std::vector<double> times;
  const auto t0 = Clock::now();
  while (times.size() < 5 || std::chrono::duration<double>(Clock::now() - t0).count() < minSeconds) {
    const auto s = Clock::now();
    f();
    times.push_back(std::chrono::duration<double>(Clock::now() - s).count());
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

/// The attention core alone (no projections), q, k, v given: Tensorscope's fused CPU kernel against
/// the same math in ATen operations, written as the PyTorch export (and a PyTorch user) writes it:
/// matmul(q, kᵀ)·scale, masked_fill of the future, softmax, matmul(P, v), heads split and merged.
nlohmann::json runKernel(const Config& cfg) {
  const int64_t B = cfg.quick ? 2 : 32, N = cfg.quick ? 16 : 128, H = 4, D = cfg.quick ? 8 : 32;
  const double scale = 1.0 / std::sqrt(double(D));
  nlohmann::json rows = nlohmann::json::array();
  for (bool causal : {true, false}) {
    torch::manual_seed(1);
    const auto base = torch::randn({B, N, 3, H, D});
    const auto G = torch::randn({B, N, H, D});
    const auto future = torch::ones({N, N}, torch::kBool).triu(1);
    auto fused = [&](bool backward) {
      const auto qkv = base.detach().requires_grad_(backward);
      const auto o = model_core::fusedAttention(qkv, scale, causal).o;
      if (backward) (o * G).sum().backward();
    };
    auto aten = [&](bool backward) {
      const auto qkv = base.detach().requires_grad_(backward);
      const auto q = qkv.select(2, 0).transpose(1, 2), k = qkv.select(2, 1).transpose(1, 2),
                 v = qkv.select(2, 2).transpose(1, 2);  // [B, H, N, D]
      auto s = torch::matmul(q, k.transpose(-2, -1)) * scale;
      if (causal) s = s.masked_fill(future, -std::numeric_limits<float>::infinity());
      const auto o = torch::matmul(torch::softmax(s, -1), v).transpose(1, 2).reshape({B, N, H * D});
      if (backward) (o.view({B, N, H, D}) * G).sum().backward();
    };
    nlohmann::json row = {{"B", B}, {"N", N}, {"H", H}, {"D", D}, {"causal", causal}};
    for (bool backward : {false, true}) {
      const std::string what = backward ? "fwd_bwd_ms" : "fwd_ms";
      const double f = medianSeconds([&] { fused(backward); }, cfg.minSeconds) * 1e3;
      const double a = medianSeconds([&] { aten(backward); }, cfg.minSeconds) * 1e3;
      row["fused_" + what] = f;
      row["aten_" + what] = a;
      row[std::string("aten_over_fused_") + (backward ? "fwd_bwd" : "fwd")] = a / f;
    }
    std::cerr << "  kernel " << (causal ? "causal" : "full") << ": fused " << row["fused_fwd_bwd_ms"].get<double>()
              << " ms, ATen " << row["aten_fwd_bwd_ms"].get<double>() << " ms (fwd+bwd)\n";
    rows.push_back(row);
  }
  return rows;
}

/// MLA's absorbed-order inputs (model_core::mlaAbsorbedInputs: the W^UK products, the latent's
/// RMSNorm, both rotary turns, the key and value) on the fused function against its ATen
/// formulation (mlaAbsorbedInputsAten: split, einsum, rmsNorm, the ATen turn, cat), in the benchmark
/// layer's proportions (D = 32: L = 64, r = 16) from the stacked projection [B, N, H·(D + r) + L + r].
nlohmann::json runMlaInputs(const Config& cfg) {
  const int64_t B = cfg.quick ? 2 : 32, N = cfg.quick ? 16 : 128, H = 4, D = cfg.quick ? 8 : 32, L = 2 * D, r = D / 2;
  torch::manual_seed(1);
  const auto base = torch::randn({B, N, H * (D + r) + L + r});
  const auto wUK = torch::randn({H, D, L}) * 0.1, g = torch::ones({L});
  const auto Gq = torch::randn({B, N, H, L + r}), Gk = torch::randn({B, N, 1, L + r}), Gv = torch::randn({B, N, 1, L});
  const auto run = [&](bool fusedPath, bool backward) {
    const auto proj = base.detach().requires_grad_(backward);
    const auto w = wUK.detach().requires_grad_(backward), gw = g.detach().requires_grad_(backward);
    const auto in = fusedPath ? model_core::mlaAbsorbedInputs(proj, torch::Tensor(), w, gw, r, 1e-6, 1e4)
                              : model_core::mlaAbsorbedInputsAten(proj, torch::Tensor(), w, gw, r, 1e-6, 1e4);
    if (backward) torch::autograd::backward({in.query, in.key, in.value}, {Gq, Gk, Gv});
  };
  nlohmann::json row = {{"B", B}, {"N", N}, {"H", H}, {"D", D}, {"L", L}, {"r", r}};
  for (bool backward : {false, true}) {
    const std::string what = backward ? "fwd_bwd_ms" : "fwd_ms";
    // Alternating rounds, each path's median of its own rounds (the machine drifts between them).
    std::vector<double> f, a;
    for (int round = 0; round < 5; ++round) {
      f.push_back(medianSeconds([&] { run(true, backward); }, cfg.minSeconds / 5) * 1e3);
      a.push_back(medianSeconds([&] { run(false, backward); }, cfg.minSeconds / 5) * 1e3);
    }
    std::sort(f.begin(), f.end());
    std::sort(a.begin(), a.end());
    row["fused_" + what] = f[2];
    row["aten_" + what] = a[2];
    row[std::string("aten_over_fused_") + (backward ? "fwd_bwd" : "fwd")] = a[2] / f[2];
    // The W^UK products (2·B·N·H·D·L forward, twice that backward) at the fused time, against the
    // GEMM rate measured at start-up (gemm_gflops): the row work adds no FLOPs worth counting.
    const double gflop = 2.0 * double(B * N * H * D * L) * (backward ? 3.0 : 1.0) * 1e-9;
    row["fused_" + std::string(backward ? "fwd_bwd" : "fwd") + "_gflops"] = gflop / (f[2] * 1e-3);
  }
  row["gemm_gflops"] = cfg.gemmGflops;
  std::cerr << "  mla inputs: fused " << row["fused_fwd_bwd_ms"].get<double>() << " ms, ATen "
            << row["aten_fwd_bwd_ms"].get<double>() << " ms (fwd+bwd)\n";
  return row;
}

}  // namespace

int main(int argc, char** argv) {
  model_core::startWithBestBlasKernels(argv);  // the best OpenBLAS kernels for this CPU (issue 40)
  Config cfg;
  const char* usage =
      "usage: attention_bench [--quick] [--threads T] [--min-seconds S] [--causal] [--only NAME[,NAME...]]\n"
      "                       [--device cpu|cuda] [--max-n N]\n"
      "       (names: the layer presets (mqa, gqa, talking_heads, gated, gated_headwise, diff, mla, mta\n"
      "        among them; mla_absorbed: MLA in the absorbed order; mhsa_rotary: mhsa with rotary\n"
      "        positions, the model option), kernel for the attention kernel alone, mla_inputs for\n"
      "        MLA's absorbed-order inputs fused against ATen, scaling for\n"
      "        the dimwise/mhsa N-scaling part, dimwise_causal for the causal dimwise layer fused\n"
      "        against ATen (and its N-scaling), thsa_scaling for dense and linear THSA against N,\n"
      "        brnm for the head-mixing cores against N up to the device's memory; brnm runs by\n"
      "        default on cuda only; gemm for float32 GEMM 2048^3 against float64, only when named;\n"
      "        multilinear_scaling for the block-term layer blocked against materialised and its\n"
      "        N-scaling up to the largest N whose Wo fits (--max-n caps it), only when named)\n";
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--quick")) cfg.quick = true;
    else if (!std::strcmp(argv[i], "--threads") && i + 1 < argc) cfg.threads = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--min-seconds") && i + 1 < argc) cfg.minSeconds = std::atof(argv[++i]);
    else if (!std::strcmp(argv[i], "--causal")) cfg.causal = true;
    else if (!std::strcmp(argv[i], "--max-n") && i + 1 < argc) cfg.maxN = std::max<int64_t>(64, std::atoll(argv[++i]));
    else if (!std::strcmp(argv[i], "--only") && i + 1 < argc) {
      std::stringstream list(argv[++i]);
      for (std::string name; std::getline(list, name, ',');)
        if (!name.empty()) cfg.only.push_back(name);
    } else if (!std::strcmp(argv[i], "--device") && i + 1 < argc) {
      const std::string device = argv[++i];
      if (device == "cuda") {
        cfg.device = torch::Device(torch::kCUDA, 0);  // device 0: the one gpuTensorBytes() reports
      } else if (device != "cpu") {
        std::cerr << usage;
        return 2;
      }
    } else {
      std::cerr << usage;
      return 2;
    }
  }
  if (cfg.quick) cfg.minSeconds = 0.0;
  model_core::configureThreads(cfg.threads);
  model_core::CpuMemoryTracker::install();
  const auto info = model_core::runtimeInfo();
  if (cfg.gpu() && !info.cuda_available) {
    std::cerr << "attention_bench: --device cuda, but no CUDA device is usable: LibTorch " << info.torch_version
              << (info.cuda_built ? " is a CUDA build and sees no device (driver, CUDA_VISIBLE_DEVICES?)"
                                  : " is a CPU-only build")
              << ". Run without --device cuda to measure on the CPU.\n";
    return 2;
  }
  nlohmann::json doc;
  try {
    doc["benchmark"] = "attention_layers";
    doc["quick"] = cfg.quick;
    doc["machine"] = {{"torch", info.torch_version},
                      {"device", cfg.gpu() ? "cuda" : "cpu"},
                      {"threads", info.intra_op_threads},
                      {"blas", info.blas},
                      {"blas_coretype", info.blas_coretype},
                      {"blas_kernels", info.blas_kernels}};
    if (cfg.gpu()) {
      doc["machine"]["gpu_total_gb"] = model_core::gpuMemory().total_bytes / 1073741824.0;
      doc["machine"]["cuda_attention"] = model_core::cudaAttentionPath();
    }
    const int64_t gemmN = bench::defaultGemmSize(cfg.device);
    cfg.gemmGflops = bench::measureGemmGflops(cfg.device);
    doc["gemm_gflops"] = cfg.gemmGflops;
    std::cerr << "GEMM (" << gemmN << "^3, float32, this process, " << (cfg.gpu() ? "cuda" : "cpu")
              << "): " << cfg.gemmGflops << " GFLOP/s\n";
    if (cfg.gpu()) {
      // The fractions of GEMM below stay against float32 (the layers run in float32); bf16 is where
      // the tensor cores peak, for scale.
      doc["gemm_n"] = gemmN;
      doc["gemm_bf16_gflops"] = bench::measureGemmGflops(cfg.device, torch::kBFloat16);
      std::cerr << "GEMM (" << gemmN << "^3, bf16): " << doc["gemm_bf16_gflops"].get<double>() << " GFLOP/s\n";
    }
    if (cfg.named("gemm")) {
      // Issue 40's comparison of OpenBLAS core types (bench/blas_coretypes.sh): float32 2048³, and
      // how far its result is from float64's (a wrong kernel shows here before anywhere else).
      const int64_t n = 2048;
      const auto a = torch::randn({n, n}, torch::TensorOptions().device(cfg.device));
      const auto b = torch::randn({n, n}, torch::TensorOptions().device(cfg.device));
      const auto exact = torch::mm(a.to(torch::kDouble), b.to(torch::kDouble));
      const double difference = ((torch::mm(a, b).to(torch::kDouble) - exact).abs().max() / exact.abs().max()).item<double>();
      doc["gemm_2048"] = {{"gflops", bench::measureGemmGflops(cfg.device, torch::kFloat, n)},
                          {"max_difference_to_float64_relative_to_max", difference}};
      std::cerr << "GEMM (2048^3, float32): " << doc["gemm_2048"]["gflops"].get<double>()
                << " GFLOP/s, relative difference to float64 " << difference << "\n";
    }
    std::cerr << "layers:\n";
    doc["layers"] = runVariants(cfg);
    doc["causal"] = cfg.causal;
    if (cfg.wants("kernel")) {
      if (cfg.gpu()) {
        doc["kernel"] = {{"skipped", "the fused attention kernel (model_core::fusedAttention) is CPU-only"}};
      } else {
        std::cerr << "attention kernel:\n";
        doc["kernel"] = runKernel(cfg);
      }
    }
    if (cfg.wants("mla_inputs")) {
      if (cfg.gpu()) {
        doc["mla_inputs"] = {{"skipped", "the fused MLA inputs function is CPU-only; CUDA runs the ATen formulation"}};
      } else {
        std::cerr << "MLA absorbed inputs, fused against ATen:\n";
        doc["mla_inputs"] = runMlaInputs(cfg);
      }
    }
    if (cfg.wants("dimwise_causal")) {
      if (cfg.gpu()) {
        doc["dimwise_causal"] = {{"skipped", "the fused dimwise kernel is CPU-only; CUDA runs the ATen formulation"}};
      } else {
        std::cerr << "causal dimwise, fused against ATen:\n";
        doc["dimwise_causal"] = runDimwiseCausal(cfg);
      }
    }
    if (cfg.named("multilinear_scaling")) {
      if (cfg.gpu()) {
        doc["multilinear_scaling"] = {{"skipped", "the blocked multilinear formulation is the CPU path; CUDA forms T"}};
      } else {
        std::cerr << "multilinear (block-term), blocked against materialised, and its N-scaling:\n";
        doc["multilinear_scaling"] = runMultilinear(cfg);
      }
    }
    if (cfg.wants("scaling")) {
      std::cerr << "N scaling:\n";
      doc["scaling"] = runScaling(cfg);
    }
    if (cfg.wants("thsa_scaling")) {
      std::cerr << "THSA N scaling:\n";
      doc["thsa_scaling"] = runThsaScaling(cfg);
    }
    if (cfg.gpu() ? cfg.wants("brnm") : cfg.named("brnm")) {
      std::cerr << "head-mixing cores against N (brnm):\n";
      doc["brnm"] = runBrnm(cfg);
    }
    doc["gemm_gflops_end"] = bench::measureGemmGflops(cfg.device);
  } catch (const std::exception& e) {
    // What was measured so far still goes out (a CUDA error can end a long run near its end).
    doc["error"] = errorMessage(e);
    std::cerr << "attention_bench: " << doc["error"].get<std::string>() << "\n";
    std::cout << doc.dump(2) << std::endl;
    return 1;
  }
  std::cout << doc.dump(2) << std::endl;
  return 0;
}
