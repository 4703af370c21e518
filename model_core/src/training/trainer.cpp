// The training loop: schedule, evaluation, inspection, checkpoints, divergence and memory guards.
#include <ATen/Parallel.h>
#include <nlohmann/json.hpp>
#include <torch/version.h>

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>

#include "build_config.h"
#include "model_core/runtime.h"
#include "spec/atomic_file.h"
#include "spec/checkpoint_store.h"
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

/// metrics.jsonl and metrics.csv: append-only logs, written a record at a time and fsynced before
/// every checkpoint commits, whose manifest records both lengths. A resume cuts them back to those
/// lengths (the steps after the checkpoint run again and write their records again), so a record
/// of a step at or before the checkpoint is never lost and the two files always agree.
class MetricsLog {
 public:
  explicit MetricsLog(std::string dir) : dir_(std::move(dir)) {}
  ~MetricsLog() {
    for (int fd : {jsonl_, csv_})
      if (fd >= 0) ::close(fd);
  }

  /// A new run: both logs empty (the CSV with its header).
  void start() {
    spec::writeFileAtomically(path(kJsonl), "");
    spec::writeFileAtomically(path(kCsv), kCsvHeader);
    open();
  }
  /// A resumed run: the logs as they were when `counters` were taken. Returns notes for the user.
  std::vector<std::string> resume(const std::map<std::string, int64_t>& counters, int64_t step) {
    std::vector<std::string> notes;
    const bool measured = counters.count(kJsonl) && counters.count(kCsv);
    if (measured) {
      for (const char* name : {kJsonl, kCsv}) {
        const int64_t want = counters.at(name);
        std::error_code ec;
        const auto have = fs::exists(path(name)) ? int64_t(fs::file_size(path(name), ec)) : int64_t(-1);
        if (have < want) {
          notes.push_back(path(name) + " is shorter than at its checkpoint (" + std::to_string(std::max<int64_t>(have, 0)) +
                          " of " + std::to_string(want) + " bytes): it was changed outside Tensorscope; rebuilt from what is left");
          rebuildFromJsonl(step, notes);
          open();
          return notes;
        }
        spec::fileOperation("truncate");
        if (::truncate(path(name).c_str(), want) != 0)
          throw std::runtime_error("cannot cut " + path(name) + " back to its checkpoint: " + std::strerror(errno));
      }
    } else {
      rebuildFromJsonl(step, notes);  // a run written before the logs were append-only
    }
    open();
    return notes;
  }
  void add(const nlohmann::json& record) {
    auto num = [&](const char* k) { return record.contains(k) ? record[k].dump() : std::string(); };
    const std::string csv = record.value("kind", std::string()) + "," + num("step") + "," +
                            record.value("split", std::string()) + "," + num("loss") + "," + num("lr") + "," +
                            num("grad_norm") + "," + num("tokens_per_second") + "," + num("accuracy") + "," +
                            num("exact_match") + "\n";
    append(jsonl_, kJsonl, record.dump() + "\n");
    append(csv_, kCsv, csv);
  }
  /// fsyncs both logs and returns their lengths (the checkpoint's counters).
  std::map<std::string, int64_t> sync() const {
    std::map<std::string, int64_t> out;
    for (const auto& [fd, name] : {std::pair{jsonl_, kJsonl}, std::pair{csv_, kCsv}}) {
      spec::fileOperation("fsync");
      if (::fsync(fd) != 0) throw std::runtime_error("cannot flush " + path(name) + ": " + std::strerror(errno));
      const off_t end = ::lseek(fd, 0, SEEK_END);
      if (end < 0) throw std::runtime_error("cannot measure " + path(name) + ": " + std::strerror(errno));
      out[name] = int64_t(end);
    }
    return out;
  }

 private:
  static constexpr const char* kJsonl = "metrics.jsonl";
  static constexpr const char* kCsv = "metrics.csv";
  static constexpr const char* kCsvHeader = "kind,step,split,loss,lr,grad_norm,tokens_per_second,accuracy,exact_match\n";

  std::string path(const char* name) const { return dir_ + "/" + name; }
  void open() {
    jsonl_ = ::open(path(kJsonl).c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    csv_ = ::open(path(kCsv).c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (jsonl_ < 0 || csv_ < 0) throw std::runtime_error("cannot open the metrics logs in " + dir_ + ": " + std::strerror(errno));
  }
  void append(int fd, const char* name, const std::string& text) const {
    const char* p = text.data();
    size_t left = text.size();
    while (left > 0) {
      spec::fileOperation("write");
      const ssize_t n = ::write(fd, p, left);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) throw std::runtime_error("cannot append to " + path(name) + ": " + std::strerror(errno));
      p += n;
      left -= size_t(n);
    }
  }
  /// Keeps the parseable records up to `step` (a damaged line is skipped with a note) and
  /// rewrites both logs from them.
  void rebuildFromJsonl(int64_t step, std::vector<std::string>& notes) {
    std::ifstream in(path(kJsonl));
    std::string line, jsonl, csvText = kCsvHeader;
    int64_t lineNo = 0, skipped = 0;
    std::vector<nlohmann::json> kept;
    while (std::getline(in, line)) {
      ++lineNo;
      if (line.empty()) continue;
      try {
        auto j = nlohmann::json::parse(line);
        if (j.is_object() && j.value("step", int64_t(0)) <= step) kept.push_back(std::move(j));
      } catch (const nlohmann::json::exception&) {
        ++skipped;
        if (skipped == 1) notes.push_back(path(kJsonl) + " line " + std::to_string(lineNo) + " is damaged; skipped");
      }
    }
    if (skipped > 1) notes.push_back(std::to_string(skipped) + " damaged lines of " + path(kJsonl) + " skipped in all");
    spec::writeFileAtomically(path(kJsonl), "");
    spec::writeFileAtomically(path(kCsv), kCsvHeader);
    open();
    for (const auto& j : kept) add(j);
    for (int fd : {jsonl_, csv_}) ::close(fd);
    jsonl_ = csv_ = -1;
  }

  std::string dir_;
  int jsonl_ = -1, csv_ = -1;
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
  if (!warm.checkpoint_dir.empty() && !fs::exists(spec::checkpointFilesDir(warm.checkpoint_dir) + "/model.safetensors"))
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
  const spec::CheckpointStore store(runDir);
  const bool committed = store.hasCommitted();
  const bool legacy = !committed && fs::exists(runDir + "/model.safetensors");  // before checkpoint directories
  if (!resume && (committed || legacy))
    throw std::invalid_argument(runDir + " already holds a run; resume it (--resume) or choose a new directory");
  if (resume && !committed && !legacy)
    throw std::invalid_argument(runDir + " holds no complete checkpoint to resume (a run stopped during its first "
                                "checkpoint leaves none); start it again: tensorscope train --config CONFIG --out " +
                                runDir);
  std::vector<std::string> notes;
  std::optional<spec::CheckpointInfo> from;
  if (resume && committed) from = store.latest(&notes);  // invalid_argument with every reason when none verifies
  const bool fellBack = !notes.empty();  // the current checkpoint did not verify
  // What a killed write left: temporary files, staging and uncommitted checkpoint directories.
  if (const auto removed = store.removeLitter(); !removed.empty())
    notes.push_back("removed " + std::to_string(removed.size()) + " leftover file(s) of an interrupted write in " + runDir);

  Session session(config);
  MetricsLog metrics(runDir);
  if (resume) {
    session.loadCheckpoint(from ? from->dir : runDir);
    if (from && from->step != session.step())
      throw std::invalid_argument(from->dir + ": its manifest says step " + std::to_string(from->step) +
                                  " but its trainer state says step " + std::to_string(session.step()));
    if (from && fellBack) store.pointAt(*from);  // the next commit keeps this one as the previous
    for (auto& n : metrics.resume(from ? from->counters : std::map<std::string, int64_t>{}, session.step()))
      notes.push_back(std::move(n));
  } else {
    metrics.start();
  }
  for (const auto& n : notes) sink.onMessage(n);
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
  const auto commitCheckpoint = [&](const std::string& status, const std::string& message) {
    const auto counters = metrics.sync();  // the logs hold every record up to this step first
    const std::string staged = store.stage();
    session.saveCheckpoint(staged, status, message);
    store.commit(staged, session.step(), counters);
  };
  if (!resume) commitCheckpoint("running", "");  // a first good checkpoint
  int64_t lastCheckpoint = session.step();

  TrainResult result;
  const auto start = Clock::now();
  auto last = start;
  int64_t lastStep = session.step();
  std::string status = "finished";
  const auto checkpointNow = [&] {
    if (session.step() == lastCheckpoint) return;
    commitCheckpoint("running", "");
    lastCheckpoint = session.step();
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
    if (!session.weightsFinite()) {  // a finite loss and gradient can still overflow the update
      result.diverged = true;
      status = "diverged";
      result.message = "training diverged at step " + std::to_string(step) +
                       ": the update made weights non-finite (loss before it " + std::to_string(loss) +
                       "). Stopped; the last good checkpoint (step " + std::to_string(lastCheckpoint) +
                       ") is kept. Try a lower train.lr, a gradient clip or a larger train.eps.";
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
    if (session.step() != lastCheckpoint) commitCheckpoint(status, result.message);
    sink.onCheckpoint(session.step(), runDir);
  }
  // How the run ended, beside its checkpoints (which are never rewritten).
  nlohmann::json ended = {{"format", "tensorscope.run_status"}, {"version", 1},
                          {"status", status},                   {"message", result.message},
                          {"checkpoint_step", result.diverged ? lastCheckpoint : session.step()}};
  spec::writeFileAtomically(runDir + "/run_status.json", ended.dump(2) + "\n");
  if (result.message.empty())
    result.message = status == "stopped" ? "stopped at step " + std::to_string(result.steps_done)
                                         : "finished " + std::to_string(result.steps_done) + " steps";
  return result;
}

}  // namespace tensorscope::model_core
