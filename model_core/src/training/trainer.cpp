// The training loop: schedule, evaluation, inspection, checkpoints, divergence and memory guards.
#include <ATen/Parallel.h>
#include <nlohmann/json.hpp>
#include <torch/version.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "build_config.h"
#include "model_core/runtime.h"
#include "spec/atomic_file.h"
#include "spec/cost_model.h"
#include "training/session.h"

namespace tensorscope::model_core {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

double availableMemoryBytes() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  double kb = 0;
  std::string unit;
  while (in >> key >> kb >> unit)
    if (key == "MemAvailable:") return kb * 1024.0;
  return 0;  // unknown: no refusal
}

std::string gib(double bytes) {
  char b[32];
  std::snprintf(b, sizeof b, "%.2f GiB", bytes / double(1ull << 30));
  return b;
}

/// metrics.jsonl and metrics.csv, rewritten atomically from memory (at evals and checkpoints).
class MetricsLog {
 public:
  explicit MetricsLog(std::string dir) : dir_(std::move(dir)) {}

  void load() {
    std::ifstream in(dir_ + "/metrics.jsonl");
    std::string line;
    while (std::getline(in, line))
      if (!line.empty()) lines_.push_back(nlohmann::json::parse(line));
  }
  /// Drops records after `step` (a resumed run replays from its checkpoint).
  void truncateAfter(int64_t step) {
    std::erase_if(lines_, [&](const nlohmann::json& j) { return j.value("step", int64_t(0)) > step; });
  }
  void add(nlohmann::json record) { lines_.push_back(std::move(record)); }

  void flush() const {
    std::string jsonl, csv = "kind,step,split,loss,lr,grad_norm,tokens_per_second,accuracy,exact_match\n";
    for (const auto& j : lines_) {
      jsonl += j.dump() + "\n";
      auto num = [&](const char* k) { return j.contains(k) ? j[k].dump() : std::string(); };
      csv += j.value("kind", std::string()) + "," + num("step") + "," + j.value("split", std::string()) + "," +
             num("loss") + "," + num("lr") + "," + num("grad_norm") + "," + num("tokens_per_second") + "," +
             num("accuracy") + "," + num("exact_match") + "\n";
    }
    spec::writeFileAtomically(dir_ + "/metrics.jsonl", jsonl);
    spec::writeFileAtomically(dir_ + "/metrics.csv", csv);
  }

 private:
  std::string dir_;
  std::vector<nlohmann::json> lines_;
};

std::string configWithVersions(const RunConfig& config) {
  auto j = nlohmann::json::parse(runConfigToJson(config));
  j["versions"] = {{"tensorscope", TENSORSCOPE_VERSION_STRING}, {"libtorch", TORCH_VERSION}};
  return j.dump(2) + "\n";
}

}  // namespace

double estimateTrainingMemory(const RunConfig& c) {
  const int64_t tokens = modelSequenceLength(c);
  const double B = double(c.train.batch), N = double(tokens), F = double(c.model.d_model);
  double params = 0, activations = 0;
  for (int i = 0; i < c.model.layers; ++i) {
    const auto s = layerSpec(c.model, i);
    const auto cost = spec::estimateCost(s, c.train.batch, tokens);
    params += double(cost.parameters + cost.frozen_parameters) + 2.0 * c.model.ffn_multiplier * F * F;
    // attention activations, plus LN, FFN (two of width mult·F) and residual tensors
    activations += cost.activation_bytes + 4.0 * B * N * F * (4.0 + 2.0 * c.model.ffn_multiplier);
  }
  const double vocab = c.task.name == "fashion_mnist" ? 10.0 : 256.0;
  activations += 3.0 * 4.0 * B * N * vocab;  // logits, log-softmax, their gradient
  // weights + gradients + two AdamW moments; backward roughly doubles live activations
  return 16.0 * params + 2.0 * activations;
}

TrainResult train(const RunConfig& config, const std::string& runDir, TrainerControl& control, ProgressSink& sink,
                  bool resume, int64_t stepsOverride, const WarmStart& warm) {
  if (resume && !warm.checkpoint_dir.empty())
    throw std::invalid_argument("a resumed run continues its own checkpoint; a warm start is for new runs only");
  if (!warm.checkpoint_dir.empty() && !fs::exists(warm.checkpoint_dir + "/model.safetensors"))
    throw std::invalid_argument(warm.checkpoint_dir + " holds no checkpoint (model.safetensors) to start from");
  if (const auto problems = validateRunConfig(config); !problems.empty()) {
    std::string m = "invalid run config:";
    for (const auto& p : problems) m += "\n  " + p;
    throw std::invalid_argument(m);
  }
  const double need = estimateTrainingMemory(config), have = availableMemoryBytes();
  if (have > 0 && need > 0.8 * have)
    throw std::invalid_argument("this configuration needs an estimated " + gib(need) +
                                " of memory to train; the machine has " + gib(have) +
                                " available. Reduce train.batch, task.seq_len, model.layers or the attention sizes.");
  const int threads = configureThreads(config.train.threads);

  fs::create_directories(runDir);
  const bool hasCheckpoint = fs::exists(runDir + "/model.safetensors");
  if (!resume && hasCheckpoint)
    throw std::invalid_argument(runDir + " already holds a run; resume it (--resume) or choose a new directory");
  if (resume && !hasCheckpoint) throw std::invalid_argument(runDir + " holds no checkpoint to resume");

  Session session(config);
  MetricsLog metrics(runDir);
  if (resume) {
    session.loadCheckpoint(runDir);
    metrics.load();
    metrics.truncateAfter(session.step());
  }
  if (!resume && !warm.checkpoint_dir.empty()) {
    const auto report = session.warmStart(warm.checkpoint_dir, warm.cores_from_config);
    nlohmann::json init = {{"format", "tensorscope.warm_start"},
                           {"version", 1},
                           {"source", fs::absolute(warm.checkpoint_dir).string()},
                           {"source_step", report.source_step},
                           {"loaded", report.loaded},
                           {"from_config", report.from_config},
                           {"fresh", report.unmatched}};
    spec::writeFileAtomically(runDir + "/init.json", init.dump(2) + "\n");
    std::string m = "started from " + warm.checkpoint_dir +
                    (report.source_step >= 0 ? " (step " + std::to_string(report.source_step) + ")" : "") + ": " +
                    std::to_string(report.loaded.size()) + " weight tensors taken over";
    if (!report.from_config.empty())
      m += ", " + std::to_string(report.from_config.size()) + " core tensors from this design";
    if (!report.unmatched.empty()) {
      m += ", " + std::to_string(report.unmatched.size()) + " freshly initialised (not in the checkpoint or of another shape:";
      for (size_t i = 0; i < report.unmatched.size() && i < 4; ++i) m += " " + report.unmatched[i];
      m += report.unmatched.size() > 4 ? " …)" : ")";
    }
    sink.onMessage(m);
  }
  spec::writeFileAtomically(runDir + "/config.json", configWithVersions(config));
  // `stepsOverride` says where to stop; the schedule always spans the configured run (extended
  // when the override goes past it), so stopping early and resuming reproduces a straight run.
  const int64_t total = stepsOverride > 0 ? stepsOverride : config.train.steps;
  const int64_t scheduleSteps = std::max(total, config.train.steps);
  const auto& t = config.train;
  sink.onStart(session.step(), total, config.train.device, threads);
  if (!resume) session.saveCheckpoint(runDir, "running", "");  // a first good checkpoint
  int64_t lastCheckpoint = session.step();

  TrainResult result;
  const auto start = Clock::now();
  auto last = start;
  int64_t lastStep = session.step();
  std::string status = "finished";
  const auto checkpointNow = [&] {
    session.saveCheckpoint(runDir, "running", "");
    lastCheckpoint = session.step();
    metrics.flush();
    sink.onCheckpoint(session.step(), runDir);
  };
  while (session.step() < total) {
    if (!control.waitToProceed(checkpointNow)) {
      result.stopped_early = true;
      status = "stopped";
      break;
    }
    last = Clock::now();  // time spent paused or checkpointing is not training throughput
    const int64_t step = session.step() + 1;
    const double lr = scheduledLr(step, scheduleSteps, t.warmup, t.lr, t.min_lr_ratio);
    const auto [loss, norm] = session.trainStep(lr, control.faultInjectedAt(step));
    if (!std::isfinite(loss) || !std::isfinite(norm)) {
      result.diverged = true;
      status = "diverged";
      result.message = "training diverged at step " + std::to_string(step) + ": loss " + std::to_string(loss) +
                       ", gradient norm " + std::to_string(norm) +
                       ". Stopped; the last good checkpoint (step " + std::to_string(lastCheckpoint) +
                       ") is kept. Try a lower train.lr or a gradient clip.";
      sink.onMessage(result.message);
      break;
    }
    result.final_loss = loss;
    const auto now = Clock::now();
    const double dt = std::chrono::duration<double>(now - last).count();
    MetricsSnapshot m{step, loss, lr, norm, double(session.tokensPerStep() * (step - lastStep)) / std::max(dt, 1e-9),
                      std::chrono::duration<double>(now - start).count()};
    last = now;
    lastStep = step;
    sink.onMetrics(m);
    metrics.add({{"kind", "train"}, {"step", step}, {"loss", loss}, {"lr", lr}, {"grad_norm", norm},
                 {"tokens_per_second", m.tokens_per_second}});
    if (step % t.eval_interval == 0 || step == total) {
      for (const auto& [split, name] : session.evalSplits()) {
        auto e = session.evaluate(split, t.eval_examples);
        e.split = name;
        sink.onEval(e);
        nlohmann::json rec = {{"kind", "eval"}, {"step", step}, {"split", name}, {"loss", e.loss}, {"accuracy", e.accuracy}};
        if (e.exact_match >= 0) rec["exact_match"] = e.exact_match;
        metrics.add(rec);
      }
    }
    if (step % t.inspect_interval == 0 || step == total) sink.onInspection(session.inspect());
    if (step % t.checkpoint_interval == 0) checkpointNow();
    last = Clock::now();  // evaluation time is not training throughput
  }
  result.steps_done = session.step();
  if (!result.diverged) {
    session.saveCheckpoint(runDir, status, result.message);
    sink.onCheckpoint(session.step(), runDir);
  } else {
    // Keep the last good checkpoint's weights; record why the run ended.
    auto state = nlohmann::json::parse(spec::readWholeFile(runDir + "/trainer_state.json"));
    state["status"] = "diverged";
    state["message"] = result.message;
    spec::writeFileAtomically(runDir + "/trainer_state.json", state.dump(2) + "\n");
  }
  metrics.flush();
  if (result.message.empty())
    result.message = status == "stopped" ? "stopped at step " + std::to_string(result.steps_done)
                                         : "finished " + std::to_string(result.steps_done) + " steps";
  return result;
}

}  // namespace tensorscope::model_core
