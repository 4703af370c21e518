// Training benchmark: whole training steps (forward, masked cross-entropy, backward, gradient clip,
// AdamW) of the reference model through TrainingSession::trainStep, for MHSA and each THSA core preset.
// Prints one JSON document on stdout: tokens/s (from the median step time, and the mean) and exact
// peak CPU tensor memory per run.
//
//   train_bench [--steps S] [--warmup W] [--threads T] [--only NAME[,NAME...]] [--quick] [--profile DIR]
//               [--rounds K] [--paired Q] [--device cpu|cuda]
//                                      (--profile: LibTorch operator traces of the timed steps)
//                                      (--paired Q: each run's step against MHSA's in Q interleaved
//                                       quadruples of single steps, M X X M; pairedWithMhsa)
//   train_bench --emit DIR [--quick] [--device cpu|cuda]
//                                      writes DIR/model.py (the PyTorch export's model), DIR/corpus.txt
//                                      and DIR/configs.json (the same runs) for train_bench_pytorch.py
//
// --device cuda (issue 16): the run configs say train.device "cuda" (TrainingSession trains on CUDA
// device 0), each timed step is bracketed by GPU synchronisations, the GEMM rate is cuBLAS's (float32
// 8192³), and peak_tensor_mb / resident_tensor_mb are the CUDA caching allocator's allocated bytes.
//
// Reference config: char LM on the King James text (task char_lm, default corpus), vocabulary from
// the text, F=128, 4 layers, H=4, D=32 (R=128), N=128, batch 32, learned positions (mhsa_rotary:
// rotary positions instead, contract §9), tied head, FFN 4F.
// The D=1 presets (heads_only, trainable_heads_only) keep the width R=128 with H=128 heads, as in
// attention_bench. Peak memory is exact (CpuMemoryTracker installed before the model is built, or on
// CUDA the caching allocator's statistics): weights, gradients, AdamW moments and the step's
// activations.
#include <nlohmann/json.hpp>
#include <torch/csrc/autograd/profiler_legacy.h>
#include <torch/types.h>

#include <algorithm>
#include <cctype>
#include <optional>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "attention/cuda_attention.h"
#include "files/atomic_file.h"
#include "gemm_rate.h"
#include "model_core/blas_kernels.h"
#include "model_core/memory_tracker.h"
#include "model_core/run_config.h"
#include "model_core/runtime.h"
#include "spec/design_baseline.h"
#include "tasks/data_sources.h"
#include "training/pytorch_template.h"
#include "training/training_session.h"

using namespace tensorscope;
using Clock = std::chrono::steady_clock;

namespace {

struct Options {
  int steps = 8;
  int warmup = 2;
  int threads = 0;
  bool quick = false;
  std::vector<std::string> only;
  std::string emit;
  std::string profile;  ///< directory for operator traces of the timed steps (empty: none)
  int rounds = 1;       ///< repetitions of the whole list, alternating the runs within each round
  int paired = 0;       ///< --paired Q: each run against MHSA in Q step quadruples (see pairedWithMhsa)
  std::string device = "cpu";  ///< the run configs' train.device: "cpu" or "cuda"
  bool gpu() const { return device == "cuda"; }
};

/// A run name usable as a file name ("core:mhsa" -> "core_mhsa").
std::string sanitized(std::string name) {
  for (char& c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-') c = '_';
  return name;
}

/// Resets the kernel's peak resident set size of this process (Linux >= 4.0); false if it cannot.
bool resetPeakRss() {
  std::ofstream out("/proc/self/clear_refs");
  out << "5";
  out.flush();
  return static_cast<bool>(out);
}

/// A "VmHWM:"/"VmRSS:" line of /proc/self/status, in bytes (0 when unknown).
double procStatusBytes(const std::string& key) {
  std::ifstream in("/proc/self/status");
  std::string k;
  double kb = 0;
  std::string unit;
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(key, 0) == 0) {
      std::istringstream(line) >> k >> kb >> unit;
      return kb * 1024.0;
    }
  return 0;
}

const std::vector<std::string>& runNames() {
  static const std::vector<std::string> names = {"mhsa",       "core:mhsa",   "thsa",
                                                 "skip_left",  "skip_right",  "trainable_heads_only",
                                                 "heads_only", "single_head", "low_rank",
                                                 // The modern designs (mhsa with slots, contract §8).
                                                 "mqa",        "gqa",         "talking_heads",
                                                 "gated",      "gated_headwise", "diff",
                                                 "mla",        "mla_absorbed", "tpa",         "tpa_kv_only",
                                                 "mta",        "collaborative",
                                                 // mhsa with rotary positions (the model option, §9).
                                                 "mhsa_rotary"};
  return names;
}

spec::AttentionSpec layerFor(const std::string& name, int F, int H, int D, int N) {
  // mla_absorbed: the mla preset in the absorbed order (W^UK in the query, the latent as the one
  // key/value head: on the CPU the grouped fused kernel). mhsa_rotary: the mhsa layer (its rotary
  // positions are the model's option, set in referenceConfig).
  const bool absorbed = name == "mla_absorbed";
  const std::string preset = absorbed ? "mla" : name == "mhsa_rotary" ? "mhsa" : name;
  const std::string core = preset.rfind("core:", 0) == 0 ? preset.substr(5) : preset;
  const auto& designs = spec::designPresetNames();
  const bool design = std::find(designs.begin(), designs.end(), preset) != designs.end();
  auto s = spec::makeSpecPreset(preset == "mhsa" || design ? preset : "thsa");
  if (absorbed) s.slots.latent.order = spec::LatentOrder::Absorbed;
  if (preset != "mhsa" && !design && (core == "heads_only" || core == "trainable_heads_only")) {
    H *= D;  // D = 1 heads at the same width R
    D = 1;
  }
  // Differential attention at the paper's match: half the heads, each with two maps of size D and a
  // value head of 2D (the same width, the same number of maps and the same q·k work as MHSA).
  if (s.slots.differential) H /= 2;
  s.sizes.F = F;
  s.sizes.H = H;
  s.sizes.D = D;
  s.sizes.R = H * D;
  s.sizes.seq_len = N;
  // Collaborative's shared key space and MLA's latent in their presets' proportions at this size.
  spec::keepPresetProportions(s);
  s.causal = true;
  s.dropout = 0.0;
  if (preset != "mhsa" && !design) s.core = spec::makeCorePreset(core, H, D);
  return s;
}

model_core::RunConfig referenceConfig(const std::string& name, const Options& o) {
  model_core::RunConfig c;
  const int F = o.quick ? 32 : 128, H = 4, D = o.quick ? 8 : 32, N = o.quick ? 32 : 128;
  c.model.kind = "decoder";
  c.model.layers = o.quick ? 1 : 4;
  c.model.d_model = F;
  c.model.ffn_multiplier = 4;
  // mhsa_rotary: no position table; every layer turns its queries and keys (RoPE, half-split pairs).
  c.model.positions = name == "mhsa_rotary" ? "rotary" : "learned";
  c.model.tied_embeddings = true;
  c.model.attention = {layerFor(name, F, H, D, N)};
  c.task.name = "char_lm";
  c.task.seq_len = N;
  c.train.batch = o.quick ? 4 : 32;
  c.train.lr = 1e-3;
  c.train.weight_decay = 0.01;
  c.train.grad_clip = 1.0;
  c.train.seed = 1;
  c.train.threads = o.threads;
  c.train.device = o.device;
  return c;
}

/// Useful FLOPs of one training step (forward + backward = 3 × forward; recomputation in backward
/// not counted; softmax exponentials not counted). Per layer: the four projections, the FFN and
/// the attention core in its cheapest contraction over the query-key pairs it needs (the causal
/// triangle, N(N+1)/2 per sequence): a dense or D = 1 core 2R² per pair for the logits (qt·kᵀ per
/// channel), an MHSA-shaped one 2R; head mixing 2H² per pair; P·v 2R per pair. Plus the tied
/// output head. Returns 0 for cores without a formula here.
double usefulStepFlops(const model_core::RunConfig& c, int64_t vocab) {
  const auto& s = c.model.attention.front();
  const double B = c.train.batch, N = c.task.seq_len, F = c.model.d_model, R = s.sizes.R, H = s.sizes.H;
  const double pairs = B * (s.causal ? N * (N + 1) / 2 : N * N);
  double core = 0;
  using spec::FactorKind;
  const bool identityA = s.core && s.core->a.kind == FactorKind::Identity;
  double projections = 4 * 2 * B * N * F * R;
  if (!s.core) {
    core = 2 * R * pairs + 2 * R * pairs;  // mhsa: q·kᵀ over D per head, P·v
    // The slots (contract §8): G shared K/V heads, the talking-heads mixings, the gate.
    const auto& slot = s.slots;
    const double GD = double(slot.kv_groups > 0 ? slot.kv_groups : s.sizes.H) * s.sizes.D;
    const double gates = slot.gate == spec::Gate::None ? 0 : slot.gate == spec::Gate::Headwise ? H : R;
    core += (slot.pre_mix ? 2 * H * H * pairs : 0) + (slot.post_mix ? 2 * H * H * pairs : 0);
    projections = 2 * 2 * B * N * F * R + 2 * 2 * B * N * F * GD + 2 * B * N * F * gates;
  } else if (s.core->structure == spec::CoreStructure::Dense || (s.sizes.D == 1 && !identityA)) {
    core = 2 * R * R * pairs + 2 * R * pairs;  // per channel (q ⊙ C_r)·kᵀ; D = 1 mixes all H = R heads
  } else if (s.core->structure == spec::CoreStructure::LowRank) {
    core = 4 * R * s.core->rank * pairs + 2 * R * pairs;
  } else if (s.core->b.kind == FactorKind::Ones || s.core->b.kind == FactorKind::Rank1) {
    const bool mix = s.core->a.kind != FactorKind::Identity && s.core->a.kind != FactorKind::Ones;
    core = 2 * R * pairs + (mix ? 2 * H * H * pairs : 0) + 2 * R * pairs;
  } else {
    return 0;
  }
  const double ffn = 2 * 2 * B * N * F * (c.model.ffn_multiplier * F);
  const double head = 2 * B * N * F * double(vocab);
  return 3 * (c.model.layers * (core + projections + ffn) + head);
}

nlohmann::json measure(const std::string& name, const Options& o) {
  const auto config = referenceConfig(name, o);
  model_core::TrainingSession session(config);
  const double lr = config.train.lr;
  const bool gpu = o.gpu();
  // CUDA launches return at once: every clock read waits for the queued work first.
  auto sync = [gpu] {
    if (gpu) model_core::synchronizeGpu();
  };
  for (int i = 0; i < o.warmup; ++i) session.trainStep(lr);  // first-touch allocations, thread pool
  // The BLAS (cuBLAS) rate in this process, with these threads, just before the timed steps.
  const double gemmGflops = bench::measureGemmGflops(session.device());
  sync();
  // Tensor memory: the CPU tracker's exact count, or the CUDA caching allocator's on device 0.
  const double resident = gpu ? model_core::gpuTensorBytes().current
                              : double(model_core::CpuMemoryTracker::currentBytes());
  const double residentRss = procStatusBytes("VmRSS:");
  const bool rssReset = resetPeakRss();
  if (gpu) model_core::resetGpuPeak();
  else model_core::CpuMemoryTracker::resetPeak();
  double loss = 0;
  std::vector<double> stepSeconds;
  // --profile DIR: LibTorch's operator profiler over the timed steps (chrome://tracing JSON).
  std::optional<torch::autograd::profiler::RecordProfile> profile;
  if (!o.profile.empty()) {
    std::filesystem::create_directories(o.profile);  // LibTorch's writer only says "Could not open file"
    profile.emplace(o.profile + "/" + sanitized(name) + ".trace.json");
  }
  const auto t0 = Clock::now();
  for (int i = 0; i < o.steps; ++i) {
    const auto s0 = Clock::now();
    loss = session.trainStep(lr).first;
    sync();
    stepSeconds.push_back(std::chrono::duration<double>(Clock::now() - s0).count());
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  profile.reset();
  // The median step: robust to the odd step another process slows down (2-core machines).
  std::sort(stepSeconds.begin(), stepSeconds.end());
  const size_t half = stepSeconds.size() / 2;
  const double median = stepSeconds.size() % 2 ? stepSeconds[half] : 0.5 * (stepSeconds[half - 1] + stepSeconds[half]);
  const double peak = gpu ? model_core::gpuTensorBytes().peak : double(model_core::CpuMemoryTracker::peakBytes());
  const double peakRss = procStatusBytes("VmHWM:");
  int64_t params = 0;
  for (const auto& p : session.model()->parameters(true))
    if (p.requires_grad()) params += p.numel();
  const auto& s = config.model.attention.front();
  const double tokens = double(o.steps) * double(session.tokensPerStep());
  nlohmann::json row = {{"name", name},
                        {"variant", std::string(spec::toString(s.variant))},
                        {"core", s.core ? s.core->preset : std::string("")},
                        {"positions", config.model.positions},
                        {"H", s.sizes.H},
                        {"D", s.sizes.D},
                        {"R", s.sizes.R},
                        {"vocab", session.task().vocabulary().size()},
                        {"trainable_parameters", params},
                        {"steps_timed", o.steps},
                        {"ms_per_step", median * 1e3},
                        {"tokens_per_second", double(session.tokensPerStep()) / median},
                        {"mean_ms_per_step", seconds / o.steps * 1e3},
                        {"mean_tokens_per_second", tokens / seconds},
                        {"peak_tensor_mb", peak / 1048576.0},
                        {"resident_tensor_mb", resident / 1048576.0},
                        {"peak_rss_mb", rssReset ? nlohmann::json(peakRss / 1048576.0) : nlohmann::json()},
                        {"resident_rss_mb", residentRss / 1048576.0},
                        {"final_loss", loss},
                        {"step_mode", session.stepMode()},
                        {"gemm_gflops", gemmGflops}};
  if (const double useful = usefulStepFlops(config, int64_t(session.task().vocabulary().size())); useful > 0) {
    row["useful_gflop_per_step"] = useful / 1e9;
    row["achieved_gflops"] = useful / median / 1e9;
    row["fraction_of_gemm"] = useful / median / 1e9 / gemmGflops;
  }
  std::cerr << "  " << name << ": " << row["tokens_per_second"].get<double>() << " tokens/s, "
            << row["ms_per_step"].get<double>() << " ms/step, peak " << row["peak_tensor_mb"].get<double>()
            << " MB\n";
  return row;
}

/// Writes what train_bench_pytorch.py needs to run the same configurations.
void emit(const Options& o) {
  namespace fs = std::filesystem;
  fs::create_directories(o.emit);
  files::writeFileAtomically(o.emit + "/model.py", model_core::kPyTorchModelPy);
  files::writeFileAtomically(o.emit + "/corpus.txt", model_core::tasks::loadKingJamesBible().text);
  nlohmann::json runs = nlohmann::json::array();
  for (const auto& name : runNames()) {
    if (!o.only.empty() && std::find(o.only.begin(), o.only.end(), name) == o.only.end()) continue;
    auto config = referenceConfig(name, o);
    config.task.corpus = o.emit + "/corpus.txt";
    runs.push_back({{"name", name}, {"config", nlohmann::json::parse(model_core::runConfigToJson(config))}});
  }
  // The OpenBLAS kernels Tensorscope chose for this process (none: the user's or OpenBLAS's own),
  // for run_train_bench.sh to give the PyTorch side the same ones.
  nlohmann::json blasEnvironment = nlohmann::json::object();
  if (const char* marker = std::getenv(model_core::kBlasChoiceVariable))
    if (const char* coretype = std::getenv("OPENBLAS_CORETYPE"))
      blasEnvironment = {{"OPENBLAS_CORETYPE", coretype}, {model_core::kBlasChoiceVariable, marker}};
  files::writeFileAtomically(o.emit + "/configs.json",
                             nlohmann::json({{"runs", runs}, {"blas_environment", blasEnvironment}}).dump(1) + "\n");
}

std::vector<std::string> splitList(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, ','))
    if (!item.empty()) out.push_back(item);
  return out;
}

/// --paired Q: the run `name` and MHSA as two live sessions whose single steps alternate in
/// quadruples M, X, X, M (X the run), Q times after the warm-up steps of both. A quadruple's ratio
/// (x1 + x2)/(m1 + m2) compares steps taken within a second of each other, and the M X X M order
/// cancels a drift that is linear over the quadruple; the median over quadruples with its quartiles.
/// On a host whose speed drifts by ±30% within minutes, the per-round ratios of --rounds (a whole
/// session each, seconds apart) spread far wider than this.
nlohmann::json pairedWithMhsa(const std::string& name, const Options& o) {
  const auto mConfig = referenceConfig("mhsa", o), xConfig = referenceConfig(name, o);
  model_core::TrainingSession m(mConfig), x(xConfig);
  for (int i = 0; i < std::max(o.warmup, 1); ++i) m.trainStep(mConfig.train.lr), x.trainStep(xConfig.train.lr);
  const auto timed = [&](model_core::TrainingSession& session, double lr) {
    const auto s0 = Clock::now();
    session.trainStep(lr);
    if (o.gpu()) model_core::synchronizeGpu();
    return std::chrono::duration<double>(Clock::now() - s0).count() * 1e3;
  };
  std::vector<double> ratios, mMs, xMs;
  for (int q = 0; q < o.paired; ++q) {
    const double m1 = timed(m, mConfig.train.lr), x1 = timed(x, xConfig.train.lr), x2 = timed(x, xConfig.train.lr),
                 m2 = timed(m, mConfig.train.lr);
    ratios.push_back((x1 + x2) / (m1 + m2));
    mMs.insert(mMs.end(), {m1, m2});
    xMs.insert(xMs.end(), {x1, x2});
  }
  const auto quantile = [](std::vector<double> v, double f) {
    std::sort(v.begin(), v.end());
    const double at = f * double(v.size() - 1);
    const size_t lo = size_t(at);
    return lo + 1 < v.size() ? v[lo] + (at - double(lo)) * (v[lo + 1] - v[lo]) : v[lo];
  };
  std::cerr << "  " << name << " / mhsa, " << o.paired << " quadruples: median " << quantile(ratios, 0.5)
            << " (quartiles " << quantile(ratios, 0.25) << " – " << quantile(ratios, 0.75) << ")\n";
  return {{"quadruples", o.paired},
          {"step_over_mhsa", quantile(ratios, 0.5)},
          {"step_over_mhsa_quartiles", {quantile(ratios, 0.25), quantile(ratios, 0.75)}},
          {"step_over_mhsa_range", {quantile(ratios, 0.0), quantile(ratios, 1.0)}},
          {"step_over_mhsa_per_quadruple", ratios},
          {"median_ms_per_step", quantile(xMs, 0.5)},
          {"mhsa_median_ms_per_step", quantile(mMs, 0.5)}};
}

}  // namespace

int main(int argc, char** argv) {
  model_core::startWithBestBlasKernels(argv);  // the best OpenBLAS kernels for this CPU (issue 40)
  Options o;
  const char* usage =
      "usage: train_bench [--steps S] [--warmup W] [--threads T] [--only NAME[,NAME...]] [--quick] [--emit DIR]\n"
      "                   [--profile DIR] [--rounds K] [--paired Q] [--device cpu|cuda]\n";
  for (int i = 1; i < argc; ++i) {
    const bool hasValue = i + 1 < argc;
    if (!std::strcmp(argv[i], "--quick")) o.quick = true;
    else if (!std::strcmp(argv[i], "--steps") && hasValue) o.steps = std::max(1, std::atoi(argv[++i]));
    else if (!std::strcmp(argv[i], "--warmup") && hasValue) o.warmup = std::max(0, std::atoi(argv[++i]));
    else if (!std::strcmp(argv[i], "--threads") && hasValue) o.threads = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--only") && hasValue) o.only = splitList(argv[++i]);
    else if (!std::strcmp(argv[i], "--emit") && hasValue) o.emit = argv[++i];
    else if (!std::strcmp(argv[i], "--profile") && hasValue) o.profile = argv[++i];
    else if (!std::strcmp(argv[i], "--rounds") && hasValue) o.rounds = std::max(1, std::atoi(argv[++i]));
    else if (!std::strcmp(argv[i], "--paired") && hasValue) o.paired = std::max(1, std::atoi(argv[++i]));
    else if (!std::strcmp(argv[i], "--device") && hasValue &&
             (!std::strcmp(argv[i + 1], "cpu") || !std::strcmp(argv[i + 1], "cuda")))
      o.device = argv[++i];
    else {
      std::cerr << usage;
      return 2;
    }
  }
  for (const auto& n : o.only)
    if (std::find(runNames().begin(), runNames().end(), n) == runNames().end()) {
      std::cerr << "unknown run '" << n << "'; the runs are:";
      for (const auto& known : runNames()) std::cerr << " " << known;
      std::cerr << "\n" << usage;
      return 2;
    }
  try {
    if (!o.emit.empty()) {
      emit(o);
      return 0;
    }
    const int threads = model_core::configureThreads(o.threads);
    model_core::CpuMemoryTracker::install();
    const auto info = model_core::runtimeInfo();
    if (o.gpu() && !info.cuda_available) {
      std::cerr << "train_bench: --device cuda, but no CUDA device is usable: LibTorch " << info.torch_version
                << (info.cuda_built ? " is a CUDA build and sees no device (driver, CUDA_VISIBLE_DEVICES?)"
                                    : " is a CPU-only build")
                << ". Run without --device cuda to measure on the CPU.\n";
      return 2;
    }
    const auto ref = referenceConfig("mhsa", o);
    nlohmann::json doc;
    doc["benchmark"] = "training";
    doc["framework"] = "tensorscope";
    doc["quick"] = o.quick;
    doc["machine"] = {{"torch", info.torch_version}, {"device", o.device}, {"threads", threads}, {"blas", info.blas},
                      {"blas_coretype", info.blas_coretype}, {"blas_kernels", info.blas_kernels},
                      {"projection_gemm", info.projection_gemm}};  // the linear maps' GEMM (kernels/gemm.h)
    if (o.gpu()) {
      doc["machine"]["gpu_total_gb"] = model_core::gpuMemory().total_bytes / 1073741824.0;
      doc["machine"]["cuda_attention"] = model_core::cudaAttentionPath();
      doc["machine"]["cuda_graphs"] = model_core::cudaGraphsEnabled();
    }
    doc["config"] = {{"task", "char_lm (King James Bible)"}, {"layers", ref.model.layers},
                     {"d_model", ref.model.d_model},  {"seq_len", ref.task.seq_len},
                     {"batch", ref.train.batch},      {"warmup_steps", o.warmup},
                     {"timed_steps", o.steps},        {"optimizer", "AdamW (decay on dim >= 2), grad clip 1.0"}};
    if (o.paired > 0) {  // only the paired comparison: no per-run rows
      nlohmann::json paired = nlohmann::json::object();
      std::cerr << "paired steps against MHSA (" << threads << " threads):\n";
      for (const auto& name : runNames())
        if (name != "mhsa" && (o.only.empty() || std::find(o.only.begin(), o.only.end(), name) != o.only.end()))
          paired[name] = pairedWithMhsa(name, o);
      doc["paired"] = paired;
      std::cout << doc.dump(2) << std::endl;
      return 0;
    }
    nlohmann::json runs = nlohmann::json::array();
    std::cerr << "training steps (" << threads << " threads):\n";
    // --rounds K: the selected runs measured K times, alternating within each round, so that
    // ratios between runs (a core's step against MHSA's) come from steps taken minutes apart at
    // most; per run the median over rounds, per ratio the median of the per-round ratios.
    std::map<std::string, std::vector<double>> perRound;
    std::vector<std::string> order;
    for (int round = 0; round < o.rounds; ++round)
      for (const auto& name : runNames())
        if (o.only.empty() || std::find(o.only.begin(), o.only.end(), name) != o.only.end()) {
          auto row = measure(name, o);
          if (round == 0) order.push_back(name), runs.push_back(row);
          perRound[name].push_back(row["ms_per_step"].get<double>());
        }
    doc["runs"] = runs;
    if (o.rounds > 1) {
      auto median = [](std::vector<double> v) {
        std::sort(v.begin(), v.end());
        return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
      };
      nlohmann::json rounds = nlohmann::json::object();
      for (const auto& name : order) {
        nlohmann::json r = {{"ms_per_step_per_round", perRound[name]}, {"median_ms_per_step", median(perRound[name])}};
        if (perRound.count("mhsa")) {
          std::vector<double> ratios;
          for (int i = 0; i < o.rounds; ++i) ratios.push_back(perRound[name][i] / perRound["mhsa"][i]);
          r["step_over_mhsa_per_round"] = ratios;
          r["step_over_mhsa"] = median(ratios);
        }
        rounds[name] = r;
      }
      doc["rounds"] = rounds;
      doc["round_count"] = o.rounds;
    }
    std::cout << doc.dump(2) << std::endl;
  } catch (const std::exception& e) {
    std::cerr << "train_bench: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
