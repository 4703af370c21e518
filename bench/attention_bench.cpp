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
// `--only dimwise_causal` (issue 38): the causal dimwise layer on its fused kernel and on its ATen
// formulation side by side, with the full dimwise and causal MHSA layers of the same run, and the
// causal layer's N-scaling (runDimwiseCausal).
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
#include "build_config.h"
#include "gemm_rate.h"
#include "model_core/blas_kernels.h"
#include "model_core/memory_guard.h"
#include "model_core/memory_tracker.h"
#include "model_core/runtime.h"
#include "spec/cost_model.h"

#if TS_TORCH_HAS_CUDA_BUILD
#include <c10/cuda/CUDACachingAllocator.h>
#endif

using namespace tensorscope;
using Clock = std::chrono::steady_clock;

namespace {

struct Config {
  bool quick = false;
  double minSeconds = 1.0;
  int threads = 0;
  bool causal = false;                 ///< causal layers (decoder-style masks) instead of full ones
  std::vector<std::string> only;       ///< layer names to run; "scaling" selects the N-scaling part
  torch::Device device = torch::kCPU;  ///< where modules, inputs and the GEMM run (--device)
  double gemmGflops = 0;               ///< measured at start-up, in this process, on `device` (float32)
  int64_t maxN = 65536;                ///< the largest N of the `brnm` part (--max-n)
  bool wants(const std::string& name) const { return only.empty() || named(name); }
  bool named(const std::string& name) const { return std::find(only.begin(), only.end(), name) != only.end(); }
  bool gpu() const { return device.is_cuda(); }
};

struct Measure {
  double seconds_per_step = 0;
  double peak_bytes = 0;
  int steps = 0;
};

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

spec::AttentionSpec layer(const std::string& preset, int F, int H, int D, int R, int N) {
  // mla_absorbed: the mla preset in the absorbed order (on the CPU the grouped fused kernel).
  auto s = spec::makeSpecPreset(preset == "mla_absorbed" ? "mla" : preset);
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
  // MLA in its preset's proportions at this head size (as train_bench): a latent of 2D, a rotary
  // part of D/2 (even).
  if (s.slots.latent.enabled()) {
    s.slots.latent.kv_rank = 2 * D;
    s.slots.latent.rope_dim = 2 * std::max(1, D / 4);
  }
  return s;
}

nlohmann::json runVariants(const Config& cfg) {
  const int64_t B = cfg.quick ? 2 : 32, N = cfg.quick ? 16 : 128;
  const int F = cfg.quick ? 32 : 128, H = 4, D = cfg.quick ? 8 : 32, R = H * D;
  const int64_t Nml = cfg.quick ? 8 : 32;
  const std::vector<std::string> presets = {"mhsa", "fixed_head", "tp", "core:mhsa", "skip_left", "skip_right",
                                            "trainable_heads_only", "heads_only", "single_head", "thsa",
                                            "low_rank", "thsa_linear", "multilinear", "dimwise", "tpa", "tpa_kv_only",
                                            "mqa", "gqa", "diff", "mla", "mla_absorbed"};
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& p : presets) {
    if (!cfg.wants(p)) continue;
    const int64_t n = p == "multilinear" ? Nml : N;
    auto s = layer(p, F, H, D, R, int(n));
    s.causal = cfg.causal;
    if (p == "fixed_head") s.sizes.D = 2 * D;  // d_p twice the prevalent F/H
    torch::manual_seed(0);
    auto module = model_core::makeAttentionModule(s);
    const auto m = measure(module, B, n, cfg);
    const auto cost = spec::estimateCost(s, B, n);
    nlohmann::json row = {{"name", p},
                          {"variant", std::string(spec::toString(s.variant))},
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

/// Points of one N-scaling series, and the first N whose step did not fit in memory (0: none).
struct Series {
  nlohmann::json points = nlohmann::json::array();
  int64_t oomAt = 0;
};

/// Time and peak memory against N for one layer preset at batch B (forward + backward). The series
/// ends at the first N that runs out of memory (on CUDA, where the ATen formulations keep N² maps).
Series scalingSeries(const Config& cfg, const std::string& p, const std::vector<int64_t>& Ns, int64_t B,
                     bool causal) {
  const int F = cfg.quick ? 32 : 128, H = 4, D = cfg.quick ? 8 : 32;
  Series out;
  for (int64_t n : Ns) {
    auto s = layer(p, F, H, D, H * D, int(n));
    s.causal = causal;
    const auto m = measureUnlessOutOfMemory(s, B, n, cfg);
    if (!m) {
      out.oomAt = n;
      std::cerr << "  scaling " << p << (causal ? " causal" : " full") << " N=" << n << ": out of memory\n";
      break;
    }
    out.points.push_back(
        {{"N", n}, {"fwd_bwd_ms", m->seconds_per_step * 1e3}, {"peak_tensor_mb", m->peak_bytes / 1048576.0}});
    std::cerr << "  scaling " << p << (causal ? " causal" : " full") << " N=" << n << ": "
              << m->seconds_per_step * 1e3 << " ms, " << m->peak_bytes / 1048576.0 << " MB\n";
  }
  return out;
}

/// Puts a series into `out` under `key` (and `key`_oom_at when it ran out of memory).
void putSeries(nlohmann::json& out, const std::string& key, const Series& series) {
  out[key] = series.points;
  if (series.oomAt) out[key + "_oom_at"] = series.oomAt;
}

/// Ratio of the last point's field to the first's, and the same for N (linear: equal ratios); null
/// for a series that ran out of memory before its second point.
nlohmann::json growth(const nlohmann::json& pts, const char* field) {
  if (pts.size() < 2) return nullptr;
  const auto& a = pts.front();
  const auto& b = pts.back();
  return {{"N_ratio", b["N"].get<double>() / a["N"].get<double>()},
          {std::string(field) + "_ratio", b[field].get<double>() / a[field].get<double>()}};
}

/// Dense THSA against N (memory must grow linearly: no [B, R, N, N] tensor) and linear THSA up to
/// N = 4096 (16384 on CUDA), causal and full (time and memory linear), beside MHSA at the same sizes.
/// On CUDA dense THSA takes its ATen formulation, whose memory grows as N² (the `brnm` part follows
/// it to the device's limit).
nlohmann::json runThsaScaling(const Config& cfg) {
  nlohmann::json out = nlohmann::json::object();
  const int64_t B = cfg.quick ? 1 : 4;
  const std::vector<int64_t> dense = cfg.quick ? std::vector<int64_t>{32, 64} : std::vector<int64_t>{128, 256, 512, 1024};
  std::vector<int64_t> linear = cfg.quick ? std::vector<int64_t>{64, 128} : std::vector<int64_t>{256, 512, 1024, 2048, 4096};
  if (cfg.gpu() && !cfg.quick) linear.insert(linear.end(), {8192, 16384});
  out["B"] = B;
  putSeries(out, "thsa_causal", scalingSeries(cfg, "thsa", dense, B, true));
  out["thsa_causal_memory_growth"] = growth(out["thsa_causal"], "peak_tensor_mb");
  for (bool causal : {true, false}) {
    const std::string tag = causal ? "causal" : "full";
    putSeries(out, "thsa_linear_" + tag, scalingSeries(cfg, "thsa_linear", linear, B, causal));
    out["thsa_linear_" + tag + "_time_growth"] = growth(out["thsa_linear_" + tag], "fwd_bwd_ms");
    out["thsa_linear_" + tag + "_memory_growth"] = growth(out["thsa_linear_" + tag], "peak_tensor_mb");
  }
  return out;
}

nlohmann::json runScaling(const Config& cfg) {
  const int64_t B = cfg.quick ? 1 : 4;
  std::vector<int64_t> Ns = cfg.quick ? std::vector<int64_t>{64, 128, 256} : std::vector<int64_t>{256, 512, 1024, 2048, 4096};
  if (cfg.gpu() && !cfg.quick) Ns.insert(Ns.end(), {8192, 16384});
  nlohmann::json out = nlohmann::json::object();
  for (const std::string p : {"dimwise", "mhsa"}) putSeries(out, p, scalingSeries(cfg, p, Ns, B, false));
  auto at = [&](const std::string& p, int64_t n) {
    for (const auto& pt : out[p])
      if (pt["N"] == n) return pt["fwd_bwd_ms"].get<double>();
    return 0.0;
  };
  if (!cfg.quick) {
    const double ratio = at("dimwise", 4096) / at("dimwise", 512);
    out["dimwise_time_ratio_4096_over_512"] = ratio;
    out["linear_expectation"] = 8.0;
    out["dimwise_linear_within_25pct"] = ratio >= 6.0 && ratio <= 10.0;
    out["mhsa_time_ratio_4096_over_512"] = at("mhsa", 4096) / at("mhsa", 512);
  }
  out["B"] = B;
  return out;
}

/// Causal dimension-wise attention (issue 38): the layer on the fused kernel (kernels/dimwise_causal.h)
/// and on its ATen formulation (prefix sums over [B, N, d, d]; setFusedAttentionEnabled(false)) side
/// by side at B=32, N=128, F=128, d=R=128, beside the full dimwise layer and the causal MHSA layer
/// of the same run (the issue's targets are ratios to both); achieved GFLOP/s on the cost model's
/// causal forward FLOPs (x3 for forward + backward; exp and recomputation not counted) against the
/// same-run GEMM; then time and peak memory against N at B=4 (fused to 4096, ATen to 512, whose
/// [B, N, d, d] tensors grow to gigabytes beyond). --quick: tiny sizes.
nlohmann::json runDimwiseCausal(const Config& cfg) {
  const int64_t B = cfg.quick ? 2 : 32, N = cfg.quick ? 16 : 128;
  const int F = cfg.quick ? 32 : 128, H = 4, D = cfg.quick ? 8 : 32, R = H * D;
  nlohmann::json out = nlohmann::json::object();
  auto row = [&](const std::string& preset, bool causal, bool fused) {
    auto s = layer(preset, F, H, D, R, int(N));
    s.causal = causal;
    model_core::setFusedAttentionEnabled(fused);
    torch::manual_seed(0);
    auto module = model_core::makeAttentionModule(s);
    Measure m;
    try {
      m = measure(module, B, N, cfg);
    } catch (...) {
      model_core::setFusedAttentionEnabled(true);
      throw;
    }
    model_core::setFusedAttentionEnabled(true);
    const auto cost = spec::estimateCost(s, B, N);
    const double gflops = 3.0 * cost.forward_flops / m.seconds_per_step / 1e9;
    nlohmann::json r = {{"name", preset},
                        {"causal", causal},
                        {"path", fused ? "fused" : "aten"},
                        {"B", B},
                        {"N", N},
                        {"F", F},
                        {"R", s.sizes.R},
                        {"c", s.sizes.c},
                        {"fwd_bwd_ms", m.seconds_per_step * 1e3},
                        {"steps_timed", m.steps},
                        {"peak_tensor_mb", m.peak_bytes / 1048576.0},
                        {"model_forward_gflop", cost.forward_flops / 1e9},
                        {"achieved_gflops", gflops},
                        {"fraction_of_gemm", gflops / cfg.gemmGflops}};
    std::cerr << "  " << preset << (causal ? " causal " : " full ") << r["path"].get<std::string>() << ": "
              << r["fwd_bwd_ms"].get<double>() << " ms, " << r["peak_tensor_mb"].get<double>() << " MB\n";
    return r;
  };
  const auto fused = row("dimwise", true, true), aten = row("dimwise", true, false);
  const auto full = row("dimwise", false, true), mhsa = row("mhsa", true, true);
  out["layers"] = {fused, aten, full, mhsa};
  auto ratio = [](const nlohmann::json& a, const nlohmann::json& b, const char* field) {
    return a[field].get<double>() / b[field].get<double>();
  };
  out["aten_over_fused_time"] = ratio(aten, fused, "fwd_bwd_ms");
  out["aten_over_fused_memory"] = ratio(aten, fused, "peak_tensor_mb");
  out["fused_over_full_dimwise_time"] = ratio(fused, full, "fwd_bwd_ms");
  out["fused_over_mhsa_time"] = ratio(fused, mhsa, "fwd_bwd_ms");
  out["fused_over_mhsa_memory"] = ratio(fused, mhsa, "peak_tensor_mb");
  // N-scaling at B=4: the fused layer to 4096, the ATen one as far as it stays reasonable.
  const int64_t Bs = cfg.quick ? 1 : 4;
  const std::vector<int64_t> fusedNs = cfg.quick ? std::vector<int64_t>{32, 64} : std::vector<int64_t>{256, 512, 1024, 2048, 4096};
  const std::vector<int64_t> atenNs = cfg.quick ? std::vector<int64_t>{32, 64} : std::vector<int64_t>{256, 512};
  out["scaling_B"] = Bs;
  putSeries(out, "scaling_fused", scalingSeries(cfg, "dimwise", fusedNs, Bs, true));
  out["scaling_fused_time_growth"] = growth(out["scaling_fused"], "fwd_bwd_ms");
  out["scaling_fused_memory_growth"] = growth(out["scaling_fused"], "peak_tensor_mb");
  model_core::setFusedAttentionEnabled(false);
  try {
    putSeries(out, "scaling_aten", scalingSeries(cfg, "dimwise", atenNs, Bs, true));
  } catch (...) {
    model_core::setFusedAttentionEnabled(true);
    throw;
  }
  model_core::setFusedAttentionEnabled(true);
  out["scaling_aten_memory_growth"] = growth(out["scaling_aten"], "peak_tensor_mb");
  return out;
}

/// Issue 38, block-term attention: the multilinear layer on its CPU formulation (multilinearBlocked,
/// T never formed) and on the T-materialising one (multilinearAten, the CUDA path; the fused switch
/// off) side by side at the reference size B=32, N=128, F=128, R=128, P=2, causal and full. Then
/// its N-scaling (causal, B=4, F=128, R=32): N from 64 doubling while Wo and its gradient
/// (2·F·N² float32) take at most a quarter of the available memory and N <= --max-n, the
/// materialised formulation beside it while its own estimate (T, a⊙k, B·N³ + B·N²·R) does too.
/// A series stops after a step over 30 s or when the part has run 10 minutes. Runs when named.
nlohmann::json runMultilinear(const Config& cfg) {
  const int64_t B = cfg.quick ? 2 : 32, N = cfg.quick ? 16 : 128;
  const int F = cfg.quick ? 32 : 128, R = cfg.quick ? 16 : 128;
  auto mlSpec = [&](int64_t n, int r, bool causal) {
    auto s = layer("multilinear", F, 4, 32, r, int(n));
    s.causal = causal;
    return s;
  };
  auto measureOn = [&](const spec::AttentionSpec& s, int64_t b, bool blocked) {
    model_core::setFusedAttentionEnabled(blocked);
    std::optional<Measure> m;
    try {
      m = measureUnlessOutOfMemory(s, b, s.sizes.seq_len, cfg);
    } catch (...) {
      model_core::setFusedAttentionEnabled(true);
      throw;
    }
    model_core::setFusedAttentionEnabled(true);
    return m;
  };
  nlohmann::json out = nlohmann::json::object();
  nlohmann::json rows = nlohmann::json::array();
  for (bool causal : {true, false}) {
    nlohmann::json pair = nlohmann::json::object();
    for (bool blocked : {true, false}) {
      const auto s = mlSpec(N, R, causal);
      const auto m = measureOn(s, B, blocked);
      if (!m) continue;
      const auto cost = spec::estimateCost(s, B, N);
      nlohmann::json r = {{"causal", causal},
                          {"path", blocked ? "blocked" : "materialised"},
                          {"B", B},
                          {"N", N},
                          {"F", F},
                          {"R", R},
                          {"P", s.sizes.P},
                          {"fwd_bwd_ms", m->seconds_per_step * 1e3},
                          {"steps_timed", m->steps},
                          {"peak_tensor_mb", m->peak_bytes / 1048576.0},
                          {"model_forward_gflop", cost.forward_flops / 1e9}};
      std::cerr << "  multilinear" << (causal ? " causal " : " full ") << r["path"].get<std::string>() << ": "
                << r["fwd_bwd_ms"].get<double>() << " ms, " << r["peak_tensor_mb"].get<double>() << " MB\n";
      pair[blocked ? "blocked" : "materialised"] = r;
      rows.push_back(r);
    }
    if (pair.contains("blocked") && pair.contains("materialised")) {
      const auto& b = pair["blocked"];
      const auto& a = pair["materialised"];
      out[causal ? "causal_materialised_over_blocked" : "full_materialised_over_blocked"] = {
          {"time", a["fwd_bwd_ms"].get<double>() / b["fwd_bwd_ms"].get<double>()},
          {"memory", a["peak_tensor_mb"].get<double>() / b["peak_tensor_mb"].get<double>()}};
    }
  }
  out["reference"] = rows;

  // N-scaling.
  const int64_t Bs = cfg.quick ? 1 : 4;
  const int Rs = cfg.quick ? 8 : 32;
  const int64_t lastN = cfg.quick ? 64 : cfg.maxN;
  constexpr double kSlowStepSeconds = 30.0;
  constexpr double kPartSeconds = 600.0;
  const double available = model_core::availableMemoryBytes();
  const auto start = Clock::now();
  auto partSeconds = [&] { return std::chrono::duration<double>(Clock::now() - start).count(); };
  out["scaling"] = {{"B", Bs}, {"F", F}, {"R", Rs}, {"causal", true}, {"available_memory_gb", available / 1e9}};
  for (bool blocked : {true, false}) {
    nlohmann::json pts = nlohmann::json::array();
    std::string stopped = "every N up to the cap was measured";
    for (int64_t n = cfg.quick ? 16 : 64; n <= lastN; n *= 2) {
      const double woBytes = 2.0 * F * double(n) * double(n) * 4.0;  // Wo and its gradient
      const double tBytes = (double(Bs) * n * n * n + double(Bs) * n * n * Rs) * 4.0;
      if (available > 0 && woBytes > 0.25 * available) {
        stopped = "Wo and its gradient would take over a quarter of the available memory at N=" + std::to_string(n);
        break;
      }
      if (!blocked && available > 0 && tBytes + woBytes > 0.25 * available) {
        stopped = "T and a*k would take over a quarter of the available memory at N=" + std::to_string(n);
        break;
      }
      if (partSeconds() > kPartSeconds) {
        stopped = "time limit of the part";
        break;
      }
      const auto s = mlSpec(n, Rs, true);
      const auto m = measureOn(s, Bs, blocked);
      if (!m) {
        stopped = "out of memory at N=" + std::to_string(n);
        break;
      }
      const auto cost = spec::estimateCost(s, Bs, n);
      pts.push_back({{"N", n},
                     {"fwd_bwd_ms", m->seconds_per_step * 1e3},
                     {"steps_timed", m->steps},
                     {"peak_tensor_mb", m->peak_bytes / 1048576.0},
                     {"wo_mb", F * double(n) * double(n) * 4.0 / 1048576.0},
                     {"T_mb", double(Bs) * n * n * n * 4.0 / 1048576.0},
                     {"model_activation_mb", cost.activation_bytes / 1048576.0}});
      std::cerr << "  multilinear scaling " << (blocked ? "blocked" : "materialised") << " N=" << n << ": "
                << m->seconds_per_step * 1e3 << " ms, " << m->peak_bytes / 1048576.0 << " MB\n";
      if (m->seconds_per_step > kSlowStepSeconds) {
        stopped = "step over 30 s";
        break;
      }
    }
    const std::string key = blocked ? "blocked" : "materialised";
    out["scaling"][key] = pts;
    out["scaling"][key + "_stopped"] = stopped;
    out["scaling"][key + "_time_growth"] = growth(pts, "fwd_bwd_ms");
    out["scaling"][key + "_memory_growth"] = growth(pts, "peak_tensor_mb");
  }
  return out;
}

/// The head-mixing THSA cores against N on the device until a step no longer fits (issue 16). On
/// CUDA they take their ATen formulation, which materialises [B, R, N, M] logits and probabilities
/// (on the CPU the fused kernels keep O(B·R·N)); mhsa ([B, H, N, M]) and thsa_linear (no N² map)
/// for contrast. Causal layers at B=4, F=128, H=4, D=32, R=128 (the D=1 presets at H=128), N from
/// 256 doubling up to 65536; a series ends at the first N that runs out of memory (`oom_at`), after a
/// step over 20 s, or when the part has run 5 minutes. --quick: tiny sizes, N = 32 and 64 only.
nlohmann::json runBrnm(const Config& cfg) {
  const int64_t B = cfg.quick ? 2 : 4;
  const int F = cfg.quick ? 32 : 128, H = 4, D = cfg.quick ? 8 : 32, R = H * D;
  const int64_t firstN = cfg.quick ? 32 : 256, lastN = cfg.quick ? 64 : cfg.maxN;
  constexpr double kSlowStepSeconds = 20.0;  // no larger N after a step this slow (time grows as N²)
  constexpr double kPartSeconds = 300.0;     // no new point after this long in this part
  const auto start = Clock::now();
  auto partSeconds = [&] { return std::chrono::duration<double>(Clock::now() - start).count(); };
  nlohmann::json series = nlohmann::json::array();
  for (const std::string p : {"thsa", "skip_left", "heads_only", "trainable_heads_only", "low_rank", "mhsa",
                              "thsa_linear"}) {
    const auto sizes = layer(p, F, H, D, R, int(firstN)).sizes;  // the D=1 presets at H=R
    nlohmann::json pts = nlohmann::json::array();
    nlohmann::json oomAt = nullptr;
    std::string stopped = cfg.quick ? "quick run: no out-of-memory search" : "every N up to the cap fit";
    int64_t largest = 0;
    for (int64_t n = firstN; n <= lastN; n *= 2) {
      if (partSeconds() > kPartSeconds) {
        stopped = "time limit of the part";
        break;
      }
      auto s = layer(p, F, H, D, R, int(n));
      s.causal = true;
      std::optional<Measure> m;
      try {
        m = measureUnlessOutOfMemory(s, B, n, cfg);
      } catch (const std::exception& e) {
        // Not a memory error (say, a kernel's size limit): recorded, and the series ends here.
        stopped = "error at N=" + std::to_string(n) + ": " + errorMessage(e);
        std::cerr << "  brnm " << p << " N=" << n << ": " << stopped << "\n";
        break;
      }
      if (!m) {
        oomAt = n;
        stopped = "out of memory";
        std::cerr << "  brnm " << p << " N=" << n << ": out of memory\n";
        break;
      }
      largest = n;
      const double naive = double(B) * double(sizes.R) * double(n) * double(n) * 4.0;  // one float32 [B, R, N, M]
      pts.push_back({{"N", n},
                     {"fwd_bwd_ms", m->seconds_per_step * 1e3},
                     {"steps_timed", m->steps},
                     {"peak_tensor_mb", m->peak_bytes / 1048576.0},
                     {"naive_BRNM_mb", naive / 1048576.0},
                     {"peak_over_naive", m->peak_bytes / naive}});
      std::cerr << "  brnm " << p << " N=" << n << ": " << m->seconds_per_step * 1e3 << " ms, "
                << m->peak_bytes / 1048576.0 << " MB (" << m->peak_bytes / naive << "x B·R·N·M)\n";
      if (m->seconds_per_step > kSlowStepSeconds) {
        stopped = "step over 20 s";
        break;
      }
    }
    series.push_back({{"name", p},
                      {"H", sizes.H},
                      {"D", sizes.D},
                      {"R", sizes.R},
                      {"points", pts},
                      {"largest_N", largest},
                      {"oom_at", oomAt},
                      {"stopped", stopped}});
  }
  return {{"B", B}, {"F", F}, {"causal", true}, {"max_N", lastN}, {"series", series}};
}

}  // namespace

int main(int argc, char** argv) {
  model_core::startWithBestBlasKernels(argv);  // the best OpenBLAS kernels for this CPU (issue 40)
  Config cfg;
  const char* usage =
      "usage: attention_bench [--quick] [--threads T] [--min-seconds S] [--causal] [--only NAME[,NAME...]]\n"
      "                       [--device cpu|cuda] [--max-n N]\n"
      "       (names: the layer presets (mqa, gqa, diff, mla and mla_absorbed among them: MLA in the\n"
      "        absorbed order), kernel for the attention kernel alone, scaling for\n"
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
