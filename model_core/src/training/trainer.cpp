// The training loop: schedule, evaluation, inspection, checkpoints, divergence and memory guards.
#include <ATen/Parallel.h>
#include <nlohmann/json.hpp>
#include <torch/version.h>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <chrono>
#include <cstring>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>

#include "build_config.h"
#include "files/atomic_file.h"
#include "files/run_lock.h"
#include "model_core/inspection_files.h"
#include "model_core/memory_guard.h"
#include "model_core/run_files.h"
#include "model_core/runtime.h"
#include "model_core/trainer.h"
#include "spec/cost_model.h"
#include "spec/json_reader.h"
#include "training/checkpoint_store.h"
#include "training/divergence_guard.h"
#include "training/training_session.h"

namespace tensorscope::model_core {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

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
    files::writeFileAtomically(path(kJsonl), "");
    files::writeFileAtomically(path(kCsv), kCsvHeader);
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
        files::fileOperation("truncate");
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
  /// The losses of the train records up to `step`, in log order (damaged lines skipped): what the
  /// divergence guard saw before the checkpoint a resume continues.
  std::vector<double> trainLosses(int64_t step) const {
    std::ifstream in(path(kJsonl));
    std::vector<double> out;
    readMetricsLog(
        in,
        [&](int64_t, const nlohmann::json& j) {
          if (j.contains("kind") && j["kind"] == "train" && j["step"].get<int64_t>() <= step && j.contains("loss") &&
              j["loss"].is_number())
            out.push_back(j["loss"].get<double>());
        },
        [](int64_t, const std::string&) {});  // a damaged line: rebuildFromJsonl reports those
    return out;
  }
  /// The wall-clock seconds the run had trained when it reached `step` (its newest train record up
  /// to there; 0 without one): where a resumed run's clock goes on.
  double elapsedAt(int64_t step) const {
    std::ifstream in(path(kJsonl));
    double out = 0;
    readMetricsLog(
        in,
        [&](int64_t, const nlohmann::json& j) {
          if (j.contains("kind") && j["kind"] == "train" && j["step"].get<int64_t>() <= step &&
              j.contains("elapsed_seconds") && j["elapsed_seconds"].is_number())
            out = std::max(out, j["elapsed_seconds"].get<double>());
        },
        [](int64_t, const std::string&) {});
    return std::isfinite(out) ? out : 0.0;
  }
  /// fsyncs both logs and returns their lengths (the checkpoint's counters).
  std::map<std::string, int64_t> sync() const {
    std::map<std::string, int64_t> out;
    for (const auto& [fd, name] : {std::pair{jsonl_, kJsonl}, std::pair{csv_, kCsv}}) {
      files::fileOperation("fsync");
      if (::fsync(fd) != 0) throw std::runtime_error("cannot flush " + path(name) + ": " + std::strerror(errno));
      const off_t end = ::lseek(fd, 0, SEEK_END);
      if (end < 0) throw std::runtime_error("cannot measure " + path(name) + ": " + std::strerror(errno));
      out[name] = int64_t(end);
    }
    return out;
  }

 private:
  static constexpr const char* kJsonl = kMetricsLogName;
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
      files::fileOperation("write");
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
    int64_t skipped = 0;
    std::vector<nlohmann::json> kept;
    readMetricsLog(
        in,
        [&](int64_t, const nlohmann::json& j) {
          if (j["step"].get<int64_t>() <= step) kept.push_back(j);
        },
        [&](int64_t lineNo, const std::string& reason) {
          if (++skipped == 1)
            notes.push_back(path(kJsonl) + " line " + std::to_string(lineNo) + " is damaged (" + reason + "); skipped");
        });
    if (skipped > 1) notes.push_back(std::to_string(skipped) + " damaged lines of " + path(kJsonl) + " skipped in all");
    files::writeFileAtomically(path(kJsonl), "");
    files::writeFileAtomically(path(kCsv), kCsvHeader);
    open();
    for (const auto& j : kept) add(j);
    for (int fd : {jsonl_, csv_}) ::close(fd);
    jsonl_ = csv_ = -1;
  }

  std::string dir_;
  int jsonl_ = -1, csv_ = -1;
};

std::string shortNumber(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.4g", v);
  return b;
}

/// RUN/run_status.json: how the run ended (finished, stopped, diverged, failed) and the step of
/// the checkpoint it left.
void writeRunStatus(const std::string& runDir, const std::string& status, const std::string& message,
                    int64_t checkpointStep) {
  const nlohmann::json ended = {{"format", "tensorscope.run_status"}, {"version", 1},
                                {"status", status},                   {"message", message},
                                {"checkpoint_step", checkpointStep}};
  files::writeFileAtomically(runDir + "/run_status.json", ended.dump(2) + "\n");
}

/// Creates the run folder (and its parents), with a sentence for a name the file system cannot hold
/// instead of std::filesystem's text.
void createRunFolder(const std::string& runDir) {
  for (const auto& part : fs::path(runDir)) {
    const std::string name = part.string();
    if (name.size() > NAME_MAX)
      throw std::invalid_argument("the run folder " + spec::jsonPreview(runDir, 80) + " has a name of " +
                                  std::to_string(name.size()) + " bytes (" + spec::jsonPreview(name, 40) +
                                  "); a file or folder name may have at most " + std::to_string(NAME_MAX) +
                                  " bytes: choose a shorter --out");
  }
  std::error_code ec;
  fs::create_directories(runDir, ec);
  if (ec || !fs::is_directory(runDir))
    throw std::runtime_error("cannot create the run folder " + runDir + ": " +
                             (ec ? ec.message() : std::string("a file of that name is in the way")));
}

/// Who trains, for another writer's refusal: this process's command line, shortened.
std::string lockHolderName() {
  std::string cmd(4096, '\0');
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  in.read(cmd.data(), std::streamsize(cmd.size()));
  cmd.resize(std::size_t(std::max<std::streamsize>(in.gcount(), 0)));
  std::replace(cmd.begin(), cmd.end(), '\0', ' ');
  while (!cmd.empty() && cmd.back() == ' ') cmd.pop_back();
  if (const auto slash = cmd.rfind('/', cmd.find(' ')); slash != std::string::npos) cmd.erase(0, slash + 1);
  if (cmd.size() > 160) cmd = cmd.substr(0, 157) + "...";
  return cmd.empty() ? std::string("Tensorscope") : "\"" + cmd + "\"";
}

/// The step of the run's inspection file; -1 without a readable one.
std::int64_t inspectionStep(const std::string& runDir) {
  try {
    const auto snap = readInspection(runDir);
    return snap ? snap->step : -1;
  } catch (const std::exception&) {
    return -1;
  }
}

std::string configWithVersions(const RunConfig& config) {
  auto j = nlohmann::json::parse(runConfigToJson(config));
  j["versions"] = {{"tensorscope", TENSORSCOPE_VERSION_STRING}, {"libtorch", TORCH_VERSION}};
  return j.dump(2) + "\n";
}

/// Values of the boolean masks layers keep as buffers: a causal multilinear layer holds its
/// [N, N, N] mask (one byte per value, no gradient or optimizer state).
std::int64_t maskValues(const RunConfig& c) {
  std::int64_t values = 0;
  for (int i = 0; i < c.model.layers; ++i) {
    const auto s = layerSpec(c.model, i);
    const bool causal = s.causal && c.model.kind == "decoder";
    if (s.variant == spec::Variant::Multilinear && causal) values += int64_t(s.sizes.seq_len) * s.sizes.seq_len * s.sizes.seq_len;
  }
  return values;
}

}  // namespace

std::int64_t estimateModelValues(const RunConfig& c, std::int64_t vocabulary) {
  const std::int64_t F = c.model.d_model, N = modelSequenceLength(c), hidden = int64_t(c.model.ffn_multiplier) * F;
  std::int64_t values = 2 * F;  // final LayerNorm
  for (int i = 0; i < c.model.layers; ++i) {
    const auto cost = spec::estimateCost(layerSpec(c.model, i), 1, N);
    values += cost.parameters + cost.frozen_parameters;
    values += 4 * F + (F * hidden + hidden) + (hidden * F + F);  // two LayerNorms, the FFN
  }
  if (c.task.name == "fashion_mnist") {
    const std::int64_t patchDim = int64_t(c.task.patch) * c.task.patch;
    values += patchDim * F + F + F * vocabulary + vocabulary;  // patch projection, class head
  } else {
    values += vocabulary * F * (1 + (c.model.tp_role_embedding ? 1 : 0) + (c.model.tied_embeddings ? 0 : 1));
  }
  values += N * F;  // learned positions, or the sinusoid table
  return values + maskValues(c);
}

double estimateTrainingMemory(const RunConfig& c, std::int64_t vocabulary) {
  const bool image = c.task.name == "fashion_mnist";
  if (vocabulary < 0) vocabulary = image ? 10 : 256;
  const int64_t tokens = modelSequenceLength(c);
  const double B = double(c.train.batch), N = double(tokens), F = double(c.model.d_model);
  double activations = 0;
  for (int i = 0; i < c.model.layers; ++i) {
    const auto cost = spec::estimateCost(layerSpec(c.model, i), c.train.batch, tokens);
    // attention activations, plus LN, FFN (two of width mult·F) and residual tensors
    activations += cost.activation_bytes + 4.0 * B * N * F * (4.0 + 2.0 * c.model.ffn_multiplier);
  }
  const double outputs = image ? B * double(vocabulary) : B * N * double(vocabulary);
  activations += 3.0 * 4.0 * outputs;  // logits, log-softmax, their gradient
  // The evaluation set stays in memory: tokens, targets (int64) and the loss mask (float32),
  // or float32 patches and an int64 label per image.
  const double patchDim = double(c.task.patch) * c.task.patch;
  const double evalSet = double(c.train.eval_examples) * (image ? N * patchDim * 4.0 + 8.0 : N * 20.0);
  // weights + gradients + two AdamW moments; backward roughly doubles live activations
  const double masks = double(maskValues(c));
  return 16.0 * (double(estimateModelValues(c, vocabulary)) - masks) + masks + 2.0 * activations + 2.0 * evalSet;
}

TrainResult train(const RunConfig& config, const std::string& runDir, TrainerControl& control, ProgressSink& sink,
                  bool resume, int64_t stepsOverride, const WarmStart& warm) {
  if (resume && !warm.checkpoint_dir.empty())
    throw std::invalid_argument("a resumed run continues its own checkpoint; a warm start is for new runs only");
  if (!warm.checkpoint_dir.empty() && !fs::exists(checkpointFilesDir(warm.checkpoint_dir) + "/model.safetensors"))
    throw std::invalid_argument(warm.checkpoint_dir + " holds no checkpoint (model.safetensors) to start from");
  if (const auto problems = validateRunConfig(config); !problems.empty()) {
    std::string m = "invalid run config:";
    for (const auto& p : problems) m += "\n  " + p;
    throw std::invalid_argument(m);
  }
  // The task first (its data and real vocabulary size the estimate), then the guard, then the model.
  auto task = makeTask(config.task);
  const int64_t vocabulary = task->isImage() ? task->numClasses() : task->vocabulary().size();
  const double needBytes = estimateTrainingMemory(config, vocabulary);
  const std::string what = "training this configuration (vocabulary " + std::to_string(vocabulary) + ")";
  const std::string advice = "Reduce train.batch, task.seq_len, model.layers, model.d_model or the attention sizes" +
                             std::string(vocabulary > 4096 ? " (or use a corpus with fewer distinct characters)" : "") +
                             ".";
  requireMemory(needBytes, what, advice);
  // On a GPU the model, its optimizer state and the activations live in device memory.
  if (config.train.device == "cuda") requireGpuMemory(needBytes, what + " on the GPU", advice);
  const int threads = configureThreads(config.train.threads);

  createRunFolder(runDir);
  // Nothing is written or deleted before these checks: a folder that is not a run of ours is
  // refused whole, and one writer holds the folder for the whole training (docs/reliability.md).
  if (!resume) {
    if (const auto foreign = foreignRunFolderEntries(runDir); !foreign.empty()) {
      std::string list;
      for (const auto& f : foreign) list += (list.empty() ? "" : ", ") + f;
      throw std::invalid_argument(runDir + " is neither empty nor a Tensorscope run (it holds " + list +
                                  "); a run replaces and deletes files of its folder, so a new run starts only in an "
                                  "empty or new folder: choose another --out");
    }
  }
  const files::RunLock lock = files::RunLock::acquire(runDir, lockHolderName());
  const CheckpointStore store(runDir);
  store.requireOwnCheckpointsFolder();
  const bool committed = store.hasCommitted();
  const bool legacy = !committed && fs::exists(runDir + "/model.safetensors");  // before checkpoint directories
  if (!resume && (committed || legacy))
    throw std::invalid_argument(runDir + " already holds a run; resume it (--resume) or choose a new directory");
  if (resume && !committed && !legacy)
    throw std::invalid_argument(runDir + " holds no complete checkpoint to resume (a run stopped during its first "
                                "checkpoint leaves none); start it again: tensorscope train --config CONFIG --out " +
                                runDir);
  std::vector<std::string> notes;
  std::optional<CheckpointInfo> from;
  if (resume && committed) from = store.latest(&notes);  // invalid_argument with every reason when none verifies
  const bool fellBack = !notes.empty();  // the current checkpoint did not verify
  // What a killed write left: temporary files, staging and uncommitted checkpoint directories.
  if (const auto removed = store.removeLitter(); !removed.empty())
    notes.push_back("removed " + std::to_string(removed.size()) + " leftover file(s) of an interrupted write in " + runDir);
  // A start stopped before its first checkpoint commit left only Tensorscope's files: it starts
  // again in place (a sweep trial, or the same --out again).
  if (!resume)
    if (const auto removed = removeUncommittedRunFiles(runDir); !removed.empty()) {
      std::string list;
      for (const auto& r : removed) list += (list.empty() ? "" : ", ") + r;
      notes.push_back("starting again in " + runDir + ": a start before it stopped before its first checkpoint (removed " +
                      list + ")");
    }
  // `latest` names the checkpoint the pointer names (a kill between the two leaves it behind).
  if (from && !fellBack && store.repairLatest(*from))
    notes.push_back(runDir + "/latest named an older checkpoint; it names step " + std::to_string(from->step) + " again");

  TrainingSession session(config, std::move(task));
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
  DivergenceGuard guard(config.train.divergence_factor, config.train.divergence_steps);
  if (resume)
    for (double loss : metrics.trainLosses(session.step())) guard.observe(loss);
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
    files::writeFileAtomically(runDir + "/init.json", init.dump(2) + "\n");
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
  files::writeFileAtomically(runDir + "/config.json", configWithVersions(config));
  // `stepsOverride` says where to stop; the schedule always spans the configured run (extended
  // when the override goes past it), so stopping early and resuming reproduces a straight run.
  const int64_t total = stepsOverride > 0 ? stepsOverride : config.train.steps;
  const int64_t scheduleSteps = std::max(total, config.train.steps);
  const auto& t = config.train;
  sink.onStart(session.step(), total, config.train.device, threads);
  // The views of a reopened run come from these: every inspection's stable ranks as they come,
  // the newest inspection in full with each checkpoint (model_core/inspection_files.h).
  std::optional<InspectionSnapshot> lastInspection;
  std::ofstream inspectionLog(runDir + "/" + kInspectionLogName, std::ios::app);
  if (!inspectionLog) throw std::runtime_error("cannot open " + runDir + "/" + kInspectionLogName + " for appending");
  const auto commitCheckpoint = [&](const std::string& status, const std::string& message) {
    const auto counters = metrics.sync();  // the logs hold every record up to this step first
    const std::string staged = store.stage();
    session.saveCheckpoint(staged, status, message);
    store.commit(staged, session.step(), counters);
    if (lastInspection) writeInspection(runDir, *lastInspection);
  };
  if (!resume) commitCheckpoint("running", "");  // a first good checkpoint
  int64_t lastCheckpoint = session.step();

  TrainResult result;
  const auto start = Clock::now();
  const double elapsedBefore = resume ? metrics.elapsedAt(session.step()) : 0.0;  // a resumed run's clock goes on
  auto last = start;
  int64_t lastStep = session.step();
  std::string status = "finished";
  bool deferNoted = false;
  const auto checkpointNow = [&] {
    if (session.step() == lastCheckpoint) return;
    commitCheckpoint("running", "");
    lastCheckpoint = session.step();
    sink.onCheckpoint(session.step(), runDir);
  };
  // An inspection with the probe the user chose (a probe the model cannot read: the default one,
  // and a message). Scheduled ones go into the stable rank history; requested ones, at a step
  // the history may already hold, only to the views and the next checkpoint.
  const auto inspectNow = [&](bool scheduled) {
    InspectionSnapshot snap;
    const std::string probe = control.probe();
    // The diagram's values of the layer the Inspector shows come with it (TrainerControl::networkLayer).
    int layer = control.networkLayer();
    if (layer >= config.model.layers) {  // not a probe problem: said, and the maps still come
      sink.onMessage("the diagram's values: the model has " + std::to_string(config.model.layers) + " layers, not layer " +
                     std::to_string(layer));
      layer = -1;
    }
    try {
      snap = session.inspect(probe, layer);
    } catch (const std::invalid_argument& e) {
      sink.onMessage("probe " + probe + ": " + e.what() + "; the maps show the default probe");
      control.setProbe("");
      snap = session.inspect("", layer);
    }
    if (scheduled) {
      inspectionLog << inspectionRecord(snap) << '\n' << std::flush;
      if (!inspectionLog) throw std::runtime_error("cannot append to " + runDir + "/" + kInspectionLogName);
    }
    sink.onInspection(snap);
    lastInspection = std::move(snap);
  };
  try {
    // The inspection file shows the checkpoint the run continues from: one of another step (a kill
    // between a commit and the inspection's write, a fallback to the previous checkpoint, or an
    // inspection interval that the checkpoint's step is not on) is computed again from the loaded
    // weights, so a reopened run shows the views of the weights it has.
    if (resume && inspectionStep(runDir) != session.step()) {
      inspectNow(false);
      writeInspection(runDir, *lastInspection);
    }
    while (session.step() < total) {
      if (!control.waitToProceed(checkpointNow, [&] { inspectNow(false); })) {
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
      if (guard.observe(loss)) {
        result.diverged = true;
        status = "diverged";
        result.message = "training diverged at step " + std::to_string(step) + ": the loss (" + shortNumber(loss) +
                         ") has stayed above " + shortNumber(guard.factor()) + "x its running minimum (" +
                         shortNumber(guard.minimum()) + ") for " + std::to_string(guard.stepsAbove()) +
                         " steps. Stopped; the last good checkpoint (step " + std::to_string(lastCheckpoint) +
                         ") is kept. Try a lower train.lr or a gradient clip (train.divergence_factor and "
                         "train.divergence_steps tune this guard; 0 turns it off).";
        sink.onMessage(result.message);
        break;
      }
      result.final_loss = loss;
      const auto now = Clock::now();
      const double dt = std::chrono::duration<double>(now - last).count();
      MetricsSnapshot m{step, loss, lr, norm, double(session.tokensPerStep() * (step - lastStep)) / std::max(dt, 1e-9),
                        elapsedBefore + std::chrono::duration<double>(now - start).count()};
      last = now;
      lastStep = step;
      sink.onMetrics(m);
      metrics.add({{"kind", "train"}, {"step", step}, {"loss", loss}, {"lr", lr}, {"grad_norm", norm},
                   {"tokens_per_second", m.tokens_per_second}, {"elapsed_seconds", m.elapsed_seconds}});
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
      if (step % t.inspect_interval == 0 || step == total) inspectNow(true);
      if (step % t.checkpoint_interval == 0) {
        if (!guard.above()) {
          checkpointNow();
        } else if (!deferNoted) {  // a checkpoint of a run that may be diverging is not a good one
          deferNoted = true;
          sink.onMessage("step " + std::to_string(step) + ": the loss is above " + shortNumber(guard.factor()) +
                         "x its running minimum; periodic checkpoints wait until it comes back down");
        }
      }
      if (!guard.above()) deferNoted = false;
      last = Clock::now();  // evaluation time is not training throughput
    }
    result.steps_done = session.step();
    if (!result.diverged) {
      if (session.step() != lastCheckpoint) commitCheckpoint(status, result.message);
      sink.onCheckpoint(session.step(), runDir);
    }
  } catch (const std::exception& e) {
    // A failure inside the run (an I/O error, a LibTorch error) still says how the run ended.
    try {
      writeRunStatus(runDir, "failed", e.what(), lastCheckpoint);
    } catch (const std::exception&) {  // the original error is the one to report
    }
    throw;
  }
  // How the run ended, beside its checkpoints (which are never rewritten).
  writeRunStatus(runDir, status, result.message, result.diverged ? lastCheckpoint : session.step());
  if (result.message.empty())
    result.message = status == "stopped" ? "stopped at step " + std::to_string(result.steps_done)
                                         : "finished " + std::to_string(result.steps_done) + " steps";
  return result;
}

}  // namespace tensorscope::model_core
