// train(): a run in five named stages — the request checked, the run folder opened (its lock,
// checks and repairs: training/run_folder.h), the session restored or started, a warm start, and
// the steps (TrainingLoop: schedule, evaluation, inspection, checkpoints, divergence checks). The
// memory estimate is training/memory_estimate.cpp, the metrics logs training/metrics_log.h.
#include <nlohmann/json.hpp>
#include <torch/version.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>

#include "build_config.h"
#include "files/atomic_file.h"
#include "model_core/inspection_files.h"
#include "model_core/memory_guard.h"
#include "model_core/run_files.h"
#include "model_core/runtime.h"
#include "model_core/tasks.h"
#include "model_core/trainer.h"
#include "training/checkpoint_store.h"
#include "training/divergence_guard.h"
#include "training/metrics_log.h"
#include "training/run_folder.h"
#include "training/training_session.h"

namespace tensorscope::model_core {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

std::string shortNumber(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.4g", v);
  return b;
}

std::string configWithVersions(const RunConfig& config) {
  auto j = nlohmann::json::parse(runConfigToJson(config));
  j["versions"] = {{"tensorscope", TENSORSCOPE_VERSION_STRING}, {"libtorch", TORCH_VERSION}};
  return j.dump(2) + "\n";
}

// ---- Stage 1: the request, checked before anything is touched -----------------------------------

/// Refuses a warm start of a resume or from a folder without weights, an invalid config and one
/// that cannot fit in memory (the task first: its data and real vocabulary size the estimate).
/// Returns the task the session trains on.
std::unique_ptr<Task> checkRequest(const RunConfig& config, bool resume, const WarmStart& warm) {
  if (resume && !warm.checkpoint_dir.empty())
    throw std::invalid_argument("a resumed run continues its own checkpoint; a warm start is for new runs only");
  if (!warm.checkpoint_dir.empty() && !fs::exists(checkpointFilesDir(warm.checkpoint_dir) + "/model.safetensors"))
    throw std::invalid_argument(warm.checkpoint_dir + " holds no checkpoint (model.safetensors) to start from");
  if (const auto problems = validateRunConfig(config); !problems.empty())
    throw std::invalid_argument(listProblems("invalid run config", problems));
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
  return task;
}

// ---- Stage 3: the session's state — a resumed checkpoint, or a new run's logs -------------------

void restoreOrStart(TrainingSession& session, MetricsLog& metrics, OpenedRunFolder& folder, const CheckpointStore& store,
                    bool resume, const std::string& runDir) {
  if (!resume) {
    metrics.start();
    return;
  }
  const auto& from = folder.from;
  session.loadCheckpoint(from ? from->dir : runDir);
  if (from && from->step != session.step())
    throw std::invalid_argument(from->dir + ": its manifest says step " + std::to_string(from->step) +
                                " but its trainer state says step " + std::to_string(session.step()));
  if (from && folder.fellBack) store.pointAt(*from);  // the next commit keeps this one as the previous
  for (auto& n : metrics.resume(from ? from->counters : std::map<std::string, int64_t>{}, session.step()))
    folder.notes.push_back(std::move(n));
}

// ---- Stage 4: a warm start (new runs only) -------------------------------------------------------

/// Copies the weights of `warm`'s checkpoint that fit, records what it took in RUN/init.json and
/// tells the user.
void applyWarmStart(TrainingSession& session, const WarmStart& warm, const std::string& runDir, ProgressSink& sink) {
  const auto report = session.warmStart(warm.checkpoint_dir, warm.cores_from_config);
  const WarmStartRecord record{fs::absolute(warm.checkpoint_dir).string(), report.source_step, report.loaded,
                               report.from_config, report.unmatched};
  files::writeFileAtomically(runDir + "/" + kWarmStartFileName, warmStartRecordToJson(record));
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

// ---- Stage 5: the steps --------------------------------------------------------------------------

/// The training loop of one run: steps, evaluations, inspections, checkpoints and the divergence
/// checks, until the last step, a stop or a divergence; then how the run ended.
class TrainingLoop {
 public:
  TrainingLoop(const RunConfig& config, const std::string& runDir, TrainerControl& control, ProgressSink& sink,
               TrainingSession& session, MetricsLog& metrics, const CheckpointStore& store, DivergenceGuard& guard,
               int64_t total)
      : config_(config), t_(config.train), runDir_(runDir), control_(control), sink_(sink), session_(session),
        metrics_(metrics), store_(store), guard_(guard), total_(total),
        // `total` says where to stop; the schedule always spans the configured run (extended when
        // the override goes past it), so stopping early and resuming reproduces a straight run.
        scheduleSteps_(std::max(total, config.train.steps)),
        inspectionLog_(runDir + "/" + kInspectionLogName, std::ios::app) {
    // The views of a reopened run come from these: every inspection's stable ranks as they come,
    // the newest inspection in full with each checkpoint (model_core/inspection_files.h).
    if (!inspectionLog_) throw std::runtime_error("cannot open " + runDir + "/" + kInspectionLogName + " for appending");
  }

  TrainResult run(bool resume) {
    if (!resume) commitCheckpoint("running", "");  // a first good checkpoint
    lastCheckpoint_ = session_.step();
    start_ = last_ = Clock::now();
    elapsedBefore_ = resume ? metrics_.elapsedAt(session_.step()) : 0.0;  // a resumed run's clock goes on
    lastStep_ = session_.step();
    try {
      // The inspection file shows the checkpoint the run continues from: one of another step (a
      // kill between a commit and the inspection's write, a fallback to the previous checkpoint,
      // or an inspection interval that the checkpoint's step is not on) is computed again from the
      // loaded weights, so a reopened run shows the views of the weights it has.
      if (resume && inspectionStep(runDir_) != session_.step()) {
        inspectNow(false);
        writeInspection(runDir_, *lastInspection_);
      }
      while (session_.step() < total_ && step()) {
      }
      result_.steps_done = session_.step();
      if (!result_.diverged) {
        if (session_.step() != lastCheckpoint_) commitCheckpoint(status_, result_.message);
        sink_.onCheckpoint(session_.step(), runDir_);
      }
    } catch (const std::exception& e) {
      // A failure inside the run (an I/O error, a LibTorch error) still says how the run ended.
      try {
        writeRunStatus(runDir_, "failed", e.what(), lastCheckpoint_);
      } catch (const std::exception&) {  // the original error is the one to report
      }
      throw;
    }
    // How the run ended, beside its checkpoints (which are never rewritten).
    writeRunStatus(runDir_, status_, result_.message, result_.diverged ? lastCheckpoint_ : session_.step());
    if (result_.message.empty())
      result_.message = status_ == "stopped" ? "stopped at step " + std::to_string(result_.steps_done)
                                             : "finished " + std::to_string(result_.steps_done) + " steps";
    return result_;
  }

 private:
  /// One step with its records, evaluation, inspection and checkpoint; false when the run ends here.
  bool step() {
    if (!control_.waitToProceed([this] { checkpointNow(); }, [this] { inspectNow(false); })) {
      result_.stopped_early = true;
      status_ = "stopped";
      return false;
    }
    last_ = Clock::now();  // time spent paused or checkpointing is not training throughput
    const int64_t step = session_.step() + 1;
    const double lr = scheduledLr(step, scheduleSteps_, t_.warmup, t_.lr, t_.min_lr_ratio);
    const auto [loss, norm] = session_.trainStep(lr, control_.faultInjectedAt(step));
    if (diverged(step, loss, norm)) return false;
    result_.final_loss = loss;
    record(step, loss, lr, norm);
    if (step % t_.eval_interval == 0 || step == total_) evaluate(step);
    if (step % t_.inspect_interval == 0 || step == total_) inspectNow(true);
    if (step % t_.checkpoint_interval == 0) {
      if (!guard_.above()) {
        checkpointNow();
      } else if (!deferNoted_) {  // a checkpoint of a run that may be diverging is not a good one
        deferNoted_ = true;
        sink_.onMessage("step " + std::to_string(step) + ": the loss is above " + shortNumber(guard_.factor()) +
                        "x its running minimum; periodic checkpoints wait until it comes back down");
      }
    }
    if (!guard_.above()) deferNoted_ = false;
    last_ = Clock::now();  // evaluation time is not training throughput
    return true;
  }

  /// A non-finite loss or gradient, non-finite weights after the update, or the guard tripping:
  /// stops the run as diverged with the reason (the last good checkpoint is kept).
  bool diverged(int64_t step, double loss, double norm) {
    std::string why;
    if (!std::isfinite(loss) || !std::isfinite(norm)) {
      why = "loss " + std::to_string(loss) + ", gradient norm " + std::to_string(norm) + ". Stopped; the last good "
            "checkpoint (step " + std::to_string(lastCheckpoint_) + ") is kept. Try a lower train.lr or a gradient clip.";
    } else if (!session_.weightsFinite()) {  // a finite loss and gradient can still overflow the update
      why = "the update made weights non-finite (loss before it " + std::to_string(loss) +
            "). Stopped; the last good checkpoint (step " + std::to_string(lastCheckpoint_) +
            ") is kept. Try a lower train.lr, a gradient clip or a larger train.eps.";
    } else if (guard_.observe(loss)) {
      why = "the loss (" + shortNumber(loss) + ") has stayed above " + shortNumber(guard_.factor()) +
            "x its running minimum (" + shortNumber(guard_.minimum()) + ") for " + std::to_string(guard_.stepsAbove()) +
            " steps. Stopped; the last good checkpoint (step " + std::to_string(lastCheckpoint_) +
            ") is kept. Try a lower train.lr or a gradient clip (train.divergence_factor and "
            "train.divergence_steps tune this guard; 0 turns it off).";
    } else {
      return false;
    }
    result_.diverged = true;
    status_ = "diverged";
    result_.message = "training diverged at step " + std::to_string(step) + ": " + why;
    sink_.onMessage(result_.message);
    return true;
  }

  void record(int64_t step, double loss, double lr, double norm) {
    const auto now = Clock::now();
    const double dt = std::chrono::duration<double>(now - last_).count();
    MetricsSnapshot m{step, loss, lr, norm, double(session_.tokensPerStep() * (step - lastStep_)) / std::max(dt, 1e-9),
                      elapsedBefore_ + std::chrono::duration<double>(now - start_).count()};
    last_ = now;
    lastStep_ = step;
    sink_.onMetrics(m);
    metrics_.add(MetricsRecord::train(step, loss, lr, norm, m.tokens_per_second, m.elapsed_seconds));
  }

  void evaluate(int64_t step) {
    for (const auto& [split, name] : session_.evalSplits()) {
      auto e = session_.evaluate(split, t_.eval_examples);
      e.split = name;
      sink_.onEval(e);
      metrics_.add(MetricsRecord::eval(step, name, e.loss, e.accuracy, e.exact_match));
    }
  }

  void commitCheckpoint(const std::string& status, const std::string& message) {
    const auto counters = metrics_.sync();  // the logs hold every record up to this step first
    const std::string staged = store_.stage();
    session_.saveCheckpoint(staged, status, message);
    store_.commit(staged, session_.step(), counters);
    if (lastInspection_) writeInspection(runDir_, *lastInspection_);
  }

  void checkpointNow() {
    if (session_.step() == lastCheckpoint_) return;
    commitCheckpoint("running", "");
    lastCheckpoint_ = session_.step();
    sink_.onCheckpoint(session_.step(), runDir_);
  }

  /// An inspection with the probe the user chose (a probe the model cannot read: the default one,
  /// and a message). Scheduled ones go into the stable rank history; requested ones, at a step the
  /// history may already hold, only to the views and the next checkpoint.
  void inspectNow(bool scheduled) {
    InspectionSnapshot snap;
    const std::string probe = control_.probe();
    // The diagram's values of the layer the Inspector shows come with it (TrainerControl::networkLayer).
    int layer = control_.networkLayer();
    if (layer >= config_.model.layers) {  // not a probe problem: said, and the maps still come
      sink_.onMessage("the diagram's values: the model has " + std::to_string(config_.model.layers) +
                      " layers, not layer " + std::to_string(layer));
      layer = -1;
    }
    try {
      snap = session_.inspect(probe, layer);
    } catch (const std::invalid_argument& e) {
      sink_.onMessage("probe " + probe + ": " + e.what() + "; the maps show the default probe");
      control_.setProbe("");
      snap = session_.inspect("", layer);
    }
    if (scheduled) {
      inspectionLog_ << inspectionRecord(snap) << '\n' << std::flush;
      if (!inspectionLog_) throw std::runtime_error("cannot append to " + runDir_ + "/" + kInspectionLogName);
    }
    sink_.onInspection(snap);
    lastInspection_ = std::move(snap);
  }

  const RunConfig& config_;
  const TrainConfig& t_;
  const std::string& runDir_;
  TrainerControl& control_;
  ProgressSink& sink_;
  TrainingSession& session_;
  MetricsLog& metrics_;
  const CheckpointStore& store_;
  DivergenceGuard& guard_;
  const int64_t total_, scheduleSteps_;
  std::ofstream inspectionLog_;
  std::optional<InspectionSnapshot> lastInspection_;
  TrainResult result_;
  std::string status_ = "finished";
  int64_t lastCheckpoint_ = 0, lastStep_ = 0;
  Clock::time_point start_, last_;
  double elapsedBefore_ = 0;
  bool deferNoted_ = false;
};

}  // namespace

TrainResult train(const RunConfig& config, const std::string& runDir, TrainerControl& control, ProgressSink& sink,
                  bool resume, int64_t stepsOverride, const WarmStart& warm) {
  auto task = checkRequest(config, resume, warm);                // 1. the request
  const int threads = configureThreads(config.train.threads);
  OpenedRunFolder folder = openRunFolder(runDir, resume);          // 2. the folder, its lock and repairs
  const CheckpointStore store(runDir);
  TrainingSession session(config, std::move(task));
  MetricsLog metrics(runDir);
  restoreOrStart(session, metrics, folder, store, resume, runDir);  // 3. the checkpoint or a new run
  DivergenceGuard guard(config.train.divergence_factor, config.train.divergence_steps);
  if (resume)  // the guard decides exactly as in the uninterrupted run
    for (double loss : metrics.trainLosses(session.step())) guard.observe(loss);
  for (const auto& n : folder.notes) sink.onMessage(n);
  if (!resume && !warm.checkpoint_dir.empty()) applyWarmStart(session, warm, runDir, sink);  // 4. a warm start
  files::writeFileAtomically(runDir + "/config.json", configWithVersions(config));
  const int64_t total = stepsOverride > 0 ? stepsOverride : config.train.steps;
  sink.onStart(session.step(), total, config.train.device, threads);
  TrainingLoop loop(config, runDir, control, sink, session, metrics, store, guard, total);
  return loop.run(resume);                                          // 5. the steps
}

}  // namespace tensorscope::model_core
