#pragma once
// What the parts of attention_bench share (attention_bench.cpp: the layer rows, the kernel part and
// main; attention_bench_scaling.cpp: the N-scaling parts). See attention_bench.cpp for the options.

#include <nlohmann/json.hpp>
#include <torch/types.h>

#include <algorithm>
#include <cstdint>
#include <exception>
#include <optional>
#include <string>
#include <vector>

#include "attention/attention_module.h"
#include "attention/rotary.h"
#include "spec/attention_spec.h"

namespace tensorscope::bench {

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

/// Times forward+backward of `module` on x [B, N, F], both on cfg.device, until cfg.minSeconds have
/// passed (>= 3 steps).
Measure measure(model_core::AttentionModule& module, int64_t B, int64_t N, const Config& cfg);

/// measure() of a fresh module for spec `s` at batch B, or nothing when the step does not fit in
/// memory (the module and every tensor of the failed step are freed first). Other errors propagate.
std::optional<Measure> measureUnlessOutOfMemory(const spec::AttentionSpec& s, int64_t B, int64_t N, const Config& cfg);

/// An exception's message without LibTorch's C++ backtrace (c10::Error appends one to what()).
std::string errorMessage(const std::exception& e);

/// The rotary turn a layer row stands for: `model.positions` "rotary" for mhsa_rotary, else off.
model_core::Rotary rowRotary(const std::string& row);

/// The layer of preset (or row name) `preset` at these sizes: the D = 1 presets at H = R,
/// differential attention at half the heads, MLA in its preset's proportions (as train_bench).
spec::AttentionSpec layer(const std::string& preset, int F, int H, int D, int R, int N);

// The N-scaling parts (attention_bench_scaling.cpp).
nlohmann::json runThsaScaling(const Config& cfg);
nlohmann::json runScaling(const Config& cfg);
nlohmann::json runDimwiseCausal(const Config& cfg);
nlohmann::json runMultilinear(const Config& cfg);
nlohmann::json runBrnm(const Config& cfg);

}  // namespace tensorscope::bench
