// Layer benchmark (issue 3): forward+backward time and peak tensor memory per attention variant,
// and the N-scaling of dimwise against mhsa. Prints one JSON document on stdout.
//
//   attention_bench [--quick] [--threads T] [--min-seconds S]
//
// Sizes: B=32, N=128, F=128, H=4, D=32, R=128 (multilinear at N=32); scaling at B=4, N=256..4096.
// Peak memory is exact CPU tensor storage (CpuMemoryTracker), above what was live before the step.
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
#include <sstream>
#include <string>
#include <vector>

#include "attention/attention_module.h"
#include "gemm_rate.h"
#include "attention/fused_attention.h"
#include "model_core/memory_tracker.h"
#include "model_core/runtime.h"
#include "spec/cost_model.h"

using namespace tensorscope;
using Clock = std::chrono::steady_clock;

namespace {

struct Config {
  bool quick = false;
  double minSeconds = 1.0;
  int threads = 0;
  bool causal = false;             ///< causal layers (decoder-style masks) instead of full ones
  std::vector<std::string> only;   ///< layer names to run; "scaling" selects the N-scaling part
  double gemmGflops = 0;           ///< measured at start-up, in this process
  bool wants(const std::string& name) const {
    return only.empty() || std::find(only.begin(), only.end(), name) != only.end();
  }
};

struct Measure {
  double seconds_per_step = 0;
  double peak_bytes = 0;
  int steps = 0;
};

/// Times forward+backward of `module` on x [B, N, F] until `minSeconds` have passed (>= 3 steps).
Measure measure(model_core::AttentionModule& module, int64_t B, int64_t N, double minSeconds) {
  module->train();
  const auto x = torch::randn({B, N, module->spec().sizes.F});
  auto step = [&] {
    const auto y = module->forward(x, {}).y;
    y.square().mean().backward();
  };
  step();  // warm-up: first-touch allocations, OpenMP pool
  module->zero_grad();
  Measure m;
  const auto before = model_core::CpuMemoryTracker::currentBytes();
  model_core::CpuMemoryTracker::resetPeak();
  step();
  m.peak_bytes = double(model_core::CpuMemoryTracker::peakBytes() - before);
  const auto t0 = Clock::now();
  double elapsed = 0;
  while (m.steps < 3 || elapsed < minSeconds) {
    step();
    ++m.steps;
    elapsed = std::chrono::duration<double>(Clock::now() - t0).count();
  }
  m.seconds_per_step = elapsed / m.steps;
  return m;
}

spec::AttentionSpec layer(const std::string& preset, int F, int H, int D, int R, int N) {
  auto s = spec::makeSpecPreset(preset);
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
    s.sizes.H = H;
    s.sizes.D = D;
    s.sizes.R = R;
  }
  return s;
}

nlohmann::json runVariants(const Config& cfg) {
  const int64_t B = cfg.quick ? 2 : 32, N = cfg.quick ? 16 : 128;
  const int F = cfg.quick ? 32 : 128, H = 4, D = cfg.quick ? 8 : 32, R = H * D;
  const int64_t Nml = cfg.quick ? 8 : 32;
  const std::vector<std::string> presets = {"mhsa", "fixed_head", "tp", "core:mhsa", "skip_left", "skip_right",
                                            "trainable_heads_only", "heads_only", "single_head", "thsa",
                                            "low_rank", "thsa_linear", "multilinear", "dimwise"};
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& p : presets) {
    if (!cfg.wants(p)) continue;
    const int64_t n = p == "multilinear" ? Nml : N;
    auto s = layer(p, F, H, D, R, int(n));
    s.causal = cfg.causal;
    if (p == "fixed_head") s.sizes.D = 2 * D;  // d_p twice the prevalent F/H
    torch::manual_seed(0);
    auto module = model_core::makeAttentionModule(s);
    const auto m = measure(module, B, n, cfg.minSeconds);
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

/// Time and peak memory against N for one layer preset at batch B (forward + backward).
nlohmann::json scalingSeries(const Config& cfg, const std::string& p, const std::vector<int64_t>& Ns, int64_t B,
                             bool causal) {
  const int F = cfg.quick ? 32 : 128, H = 4, D = cfg.quick ? 8 : 32;
  nlohmann::json pts = nlohmann::json::array();
  for (int64_t n : Ns) {
    auto s = layer(p, F, H, D, H * D, int(n));
    s.causal = causal;
    torch::manual_seed(0);
    auto module = model_core::makeAttentionModule(s);
    const auto m = measure(module, B, n, cfg.minSeconds);
    pts.push_back({{"N", n}, {"fwd_bwd_ms", m.seconds_per_step * 1e3}, {"peak_tensor_mb", m.peak_bytes / 1048576.0}});
    std::cerr << "  scaling " << p << (causal ? " causal" : " full") << " N=" << n << ": " << m.seconds_per_step * 1e3
              << " ms, " << m.peak_bytes / 1048576.0 << " MB\n";
  }
  return pts;
}

/// Ratio of the last point's field to the first's, and the same for N (linear: equal ratios).
nlohmann::json growth(const nlohmann::json& pts, const char* field) {
  const auto& a = pts.front();
  const auto& b = pts.back();
  return {{"N_ratio", b["N"].get<double>() / a["N"].get<double>()},
          {std::string(field) + "_ratio", b[field].get<double>() / a[field].get<double>()}};
}

/// Dense THSA against N (memory must grow linearly: no [B, R, N, N] tensor) and linear THSA up to
/// N = 4096, causal and full (time and memory linear), beside MHSA at the same sizes.
nlohmann::json runThsaScaling(const Config& cfg) {
  nlohmann::json out = nlohmann::json::object();
  const int64_t B = cfg.quick ? 1 : 4;
  const std::vector<int64_t> dense = cfg.quick ? std::vector<int64_t>{32, 64} : std::vector<int64_t>{128, 256, 512, 1024};
  const std::vector<int64_t> linear =
      cfg.quick ? std::vector<int64_t>{64, 128} : std::vector<int64_t>{256, 512, 1024, 2048, 4096};
  out["B"] = B;
  out["thsa_causal"] = scalingSeries(cfg, "thsa", dense, B, true);
  out["thsa_causal_memory_growth"] = growth(out["thsa_causal"], "peak_tensor_mb");
  for (bool causal : {true, false}) {
    const std::string tag = causal ? "causal" : "full";
    out["thsa_linear_" + tag] = scalingSeries(cfg, "thsa_linear", linear, B, causal);
    out["thsa_linear_" + tag + "_time_growth"] = growth(out["thsa_linear_" + tag], "fwd_bwd_ms");
    out["thsa_linear_" + tag + "_memory_growth"] = growth(out["thsa_linear_" + tag], "peak_tensor_mb");
  }
  return out;
}

nlohmann::json runScaling(const Config& cfg) {
  const int64_t B = cfg.quick ? 1 : 4;
  const std::vector<int64_t> Ns = cfg.quick ? std::vector<int64_t>{64, 128, 256} : std::vector<int64_t>{256, 512, 1024, 2048, 4096};
  const int F = cfg.quick ? 32 : 128, H = 4, D = cfg.quick ? 8 : 32;
  nlohmann::json out = nlohmann::json::object();
  for (const std::string p : {"dimwise", "mhsa"}) {
    nlohmann::json pts = nlohmann::json::array();
    for (int64_t n : Ns) {
      auto s = layer(p, F, H, D, H * D, int(n));
      torch::manual_seed(0);
      auto module = model_core::makeAttentionModule(s);
      const auto m = measure(module, B, n, cfg.minSeconds);
      pts.push_back({{"N", n}, {"fwd_bwd_ms", m.seconds_per_step * 1e3}, {"peak_tensor_mb", m.peak_bytes / 1048576.0}});
      std::cerr << "  scaling " << p << " N=" << n << ": " << m.seconds_per_step * 1e3 << " ms\n";
    }
    out[p] = pts;
  }
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

}  // namespace

int main(int argc, char** argv) {
  Config cfg;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--quick")) cfg.quick = true;
    else if (!std::strcmp(argv[i], "--threads") && i + 1 < argc) cfg.threads = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--min-seconds") && i + 1 < argc) cfg.minSeconds = std::atof(argv[++i]);
    else if (!std::strcmp(argv[i], "--causal")) cfg.causal = true;
    else if (!std::strcmp(argv[i], "--only") && i + 1 < argc) {
      std::stringstream list(argv[++i]);
      for (std::string name; std::getline(list, name, ',');)
        if (!name.empty()) cfg.only.push_back(name);
    } else {
      std::cerr << "usage: attention_bench [--quick] [--threads T] [--min-seconds S] [--causal] [--only NAME[,NAME...]]\n"
                   "       (names: the layer presets, kernel for the attention kernel alone, scaling for\n"
                   "        the dimwise/mhsa N-scaling part, thsa_scaling for dense and linear THSA against N)\n";
      return 2;
    }
  }
  if (cfg.quick) cfg.minSeconds = 0.0;
  model_core::configureThreads(cfg.threads);
  model_core::CpuMemoryTracker::install();
  const auto info = model_core::runtimeInfo();
  nlohmann::json doc;
  doc["benchmark"] = "attention_layers";
  doc["quick"] = cfg.quick;
  doc["machine"] = {{"torch", info.torch_version}, {"device", "cpu"}, {"threads", info.intra_op_threads}, {"blas", info.blas}};
  cfg.gemmGflops = bench::measureGemmGflops();
  doc["gemm_gflops"] = cfg.gemmGflops;
  std::cerr << "GEMM (1024^3, float32, this process): " << cfg.gemmGflops << " GFLOP/s\nlayers:\n";
  doc["layers"] = runVariants(cfg);
  doc["causal"] = cfg.causal;
  if (cfg.wants("kernel")) {
    std::cerr << "attention kernel:\n";
    doc["kernel"] = runKernel(cfg);
  }
  if (cfg.wants("scaling")) {
    std::cerr << "N scaling:\n";
    doc["scaling"] = runScaling(cfg);
  }
  if (cfg.wants("thsa_scaling")) {
    std::cerr << "THSA N scaling:\n";
    doc["thsa_scaling"] = runThsaScaling(cfg);
  }
  doc["gemm_gflops_end"] = bench::measureGemmGflops();
  std::cout << doc.dump(2) << std::endl;
  return 0;
}
