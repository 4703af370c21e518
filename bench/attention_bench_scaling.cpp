// attention_bench's N-scaling parts: time and peak memory of layers against the sequence length
// (scaling, thsa_scaling, dimwise_causal, multilinear_scaling, brnm). See attention_bench.cpp.
#include <ATen/Parallel.h>
#include <nlohmann/json.hpp>
#include <torch/types.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "attention/attention_module.h"
#include "attention/fused_attention.h"
#include "attention_bench.h"
#include "kernels/row_ops.h"
#include "model_core/memory_guard.h"
#include "spec/cost_model.h"

using Clock = std::chrono::steady_clock;

namespace tensorscope::bench {

namespace {

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

}  // namespace

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

namespace {
/// The exponentials alone that a causal dimwise step must take (issue 38): the forward's exp pass
/// over every state row of every position, and the backward's recomputation of the same
/// probabilities, 2·B·N·d rows of d entries, each through RowOps::dimwiseRowRecompute (the row's
/// rank-one update S += q·k, the kernel's own base-2 exp, p written: the least either exp pass of the
/// kernel does per entry) on rows that stay in L1, split over the same intra-op threads. Nothing else
/// of the step (the row maxima, the filter products, the backward's ∂S, D, ∂q, ∂k, ∂v, ∂W) is
/// counted: a floor, not a model of the kernel. (Until 2026-11-29 it timed RowOps::expSumDot, Cephes'
/// exp with its range reduction, slower than the kernel's own: that floor stood above what it bounds.)
/// Seconds per step, the median of 5 timed repetitions after one warm-up.
double dimwiseExpFloorSeconds(int64_t B, int64_t N, int64_t d) {
  const auto& ops = model_core::kernels::rowOpsFloat();
  const int64_t rows = 2 * B * N * d;
  auto once = [&] {
    at::parallel_for(0, rows, 256, [&](int64_t begin, int64_t end) {
      // One state row, one key row and one probability row per thread, in L1; scores <= 0 as after the
      // shift (q = 0 keeps the state where it is, the update still taken).
      std::vector<float> S(static_cast<size_t>(d)), k(static_cast<size_t>(d)), p(static_cast<size_t>(d));
      for (int64_t j = 0; j < d; ++j) S[size_t(j)] = -0.01f * float(j % 97), k[size_t(j)] = 0.5f + 0.001f * float(j);
      float keep = 0;
      for (int64_t r = begin; r < end; ++r) {
        ops.dimwiseRowRecompute(S.data(), k.data(), 0.0f, d, 1.0f, float(r & 7) * 1e-3f, p.data(),
                                model_core::kernels::kDimwiseChunk);
        keep += p[size_t(r % d)];
      }
      volatile float sink = keep;  // the work is not optimised away
      (void)sink;
    });
  };
  once();
  std::vector<double> times;
  for (int k = 0; k < 5; ++k) {
    const auto t0 = Clock::now();
    once();
    times.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
  }
  std::sort(times.begin(), times.end());
  return times[2];
}
}  // namespace

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
  // The exp floor of the causal layer: its 2·B·N·d² exponentials alone (dimwiseExpFloorSeconds),
  // beside the fused layer and causal MHSA (whose step takes B·H·N(N+1)/2 exps twice, ~64x fewer here).
  const double floorMs = dimwiseExpFloorSeconds(B, N, fused["R"].get<int64_t>()) * 1e3;
  out["exp_floor"] = {{"exps_per_step", 2.0 * double(B) * double(N) * std::pow(fused["R"].get<double>(), 2)},
                      {"mhsa_exps_per_step", 2.0 * double(B) * H * double(N) * double(N + 1) / 2},
                      {"ms", floorMs},
                      {"isa", model_core::kernels::rowOpsIsa()}};
  // The ratios again, from rounds that alternate the three layers (fused causal dimwise, full
  // dimwise, causal MHSA), each round's ratios from layers timed seconds apart: this host changes
  // speed within a run, and the MHSA and full rows (mostly GEMM) move with it more than the kernel.
  {
    const int rounds = cfg.quick ? 1 : 5;
    Config short_ = cfg;
    short_.minSeconds = cfg.quick ? 0.0 : std::max(0.5, cfg.minSeconds / 2);
    auto module = [&](const std::string& preset, bool causal) {
      auto s = layer(preset, F, H, D, R, int(N));
      s.causal = causal;
      torch::manual_seed(0);
      return model_core::makeAttentionModule(s);
    };
    auto causalDimwise = module("dimwise", true), fullDimwise = module("dimwise", false), mhsaLayer = module("mhsa", true);
    nlohmann::json list = nlohmann::json::array();
    std::vector<double> overMhsa, overFull;
    for (int r = 0; r < rounds; ++r) {
      const double c = measure(causalDimwise, B, N, short_).seconds_per_step * 1e3;
      const double f = measure(fullDimwise, B, N, short_).seconds_per_step * 1e3;
      const double m = measure(mhsaLayer, B, N, short_).seconds_per_step * 1e3;
      overMhsa.push_back(c / m), overFull.push_back(c / f);
      list.push_back({{"causal_dimwise_ms", c}, {"full_dimwise_ms", f}, {"mhsa_ms", m}, {"over_mhsa", c / m},
                      {"over_full", c / f}});
    }
    auto median = [](std::vector<double> v) {
      std::sort(v.begin(), v.end());
      return v[v.size() / 2];
    };
    out["alternating_rounds"] = list;
    out["alternating_fused_over_mhsa_time_median"] = median(overMhsa);
    out["alternating_fused_over_full_dimwise_time_median"] = median(overFull);
    std::cerr << "  alternating rounds: causal dimwise / MHSA median " << median(overMhsa) << ", / full dimwise "
              << median(overFull) << "\n";
  }
  out["fused_over_exp_floor"] = fused["fwd_bwd_ms"].get<double>() / floorMs;
  out["exp_floor_over_mhsa_time"] = floorMs / mhsa["fwd_bwd_ms"].get<double>();
  std::cerr << "  exp floor of the causal dimwise step: " << floorMs << " ms (fused layer "
            << out["fused_over_exp_floor"].get<double>() << "x it; the floor alone is "
            << out["exp_floor_over_mhsa_time"].get<double>() << "x the causal MHSA layer)\n";
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

}  // namespace tensorscope::bench
