#pragma once
/// The UI-agnostic trainer: train() drives a run directory, reports through a progress sink and
/// obeys a control block (pause, step, checkpoint, stop) from another thread; a run's memory
/// estimate, which the trainer checks before it starts. Torch-free header.

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>

#include "model_core/run_config.h"
#include "model_core/snapshots.h"

namespace tensorscope::model_core {

/// Receives progress from a training run (called on the training thread).
class ProgressSink {
 public:
  virtual ~ProgressSink() = default;
  virtual void onStart(std::int64_t /*first_step*/, std::int64_t /*total_steps*/, const std::string& /*device*/,
                       int /*threads*/) {}
  virtual void onMetrics(const MetricsSnapshot&) {}
  virtual void onEval(const EvalSnapshot&) {}
  virtual void onInspection(const InspectionSnapshot&) {}
  virtual void onCheckpoint(std::int64_t /*step*/, const std::string& /*run_dir*/) {}
  virtual void onMessage(const std::string&) {}
};

/// Start/pause/step/resume/stop across threads. stop takes effect within one step.
class TrainerControl {
 public:
  void requestStop();
  void pause();
  void resume();
  /// While paused: run exactly one more step.
  void step();
  bool paused() const;
  /// Asks for a checkpoint at the next step boundary, also while paused (e.g. to fork the run from
  /// its current state). The sink's onCheckpoint reports it.
  void requestCheckpoint();
  /// Sets the probe input of this run's inspections from now on (see TrainingSession::inspect; empty:
  /// the task's default) and asks for an inspection at the next step boundary, also while paused.
  /// The sink's onInspection reports it; a probe the model cannot read is reported through
  /// onMessage and the default probe comes back.
  void requestInspection(const std::string& probe);
  /// The probe of the next inspections, without asking for one.
  void setProbe(const std::string& probe);
  std::string probe() const;
  /// The layer whose diagram values every inspection from now on carries
  /// (InspectionSnapshot::network, for the diagram's inspector); -1 (the default): none.
  void setNetworkLayer(int layer);
  int networkLayer() const;
  /// Called by the trainer between steps: blocks while paused (until resume, step or stop),
  /// calling `writeCheckpoint` / `inspect` (when given) for each checkpoint / inspection request
  /// meanwhile. Returns false when the run must stop.
  bool waitToProceed(const std::function<void()>& writeCheckpoint = {}, const std::function<void()>& inspect = {});

  /// Fault injection for testing the divergence guard: the loss of step `step` becomes NaN, so
  /// its gradients are NaN too, exactly as a real blow-up would deliver them.
  void injectNonFiniteLossAt(std::int64_t step) { faultStep_.store(step); }
  bool faultInjectedAt(std::int64_t step) const { return faultStep_.load() == step; }
  /// For testing wake-ups: called, under the control's mutex, each time waitToProceed is about to
  /// sleep (its condition was false). Set it before the trainer starts.
  void setSleepProbeForTesting(std::function<void()> probe) { sleepProbe_ = std::move(probe); }

 private:
  std::atomic<bool> stop_{false};
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  bool paused_ = false;
  bool checkpointRequested_ = false;
  bool inspectionRequested_ = false;
  std::string probe_;
  int networkLayer_ = -1;
  int pendingSteps_ = 0;
  std::atomic<std::int64_t> faultStep_{-1};
  std::function<void()> sleepProbe_;
};

struct TrainResult {
  std::int64_t steps_done = 0;  ///< the step reached (counting resumed steps)
  bool stopped_early = false;   ///< stop requested
  bool diverged = false;        ///< loss became NaN/Inf; the last good checkpoint is kept
  std::string message;
  double final_loss = 0;
};

/// A new run that starts from another run's weights (a fork) instead of a fresh initialisation.
struct WarmStart {
  std::string checkpoint_dir;     ///< run directory or snapshot holding model.safetensors; empty: none
  /// THSA core tensors, and head mixings and MTA kernels whose values the design draws, come from the
  /// config (e.g. an edited C or C′), not the checkpoint
  bool cores_from_config = true;
};

/// Trains `config` into `run_dir` (created; config.json, model.safetensors, optimizer.safetensors,
/// trainer_state.json, metrics.jsonl, metrics.csv; every write atomic). With `resume`, continues
/// from the run directory's checkpoint bit-identically on CPU. Throws std::invalid_argument for an
/// invalid config or one whose memory estimate exceeds the machine (with the estimate), and
/// std::runtime_error for I/O failures.
/// With a `warm` start (new runs only), every weight of the checkpoint whose name and shape match
/// the new model is copied in before the first step (THSA cores from the config unless told
/// otherwise); the optimizer, schedule and data stream start fresh. What was taken over and what
/// was not is reported through the sink and recorded in `run_dir/init.json`.
TrainResult train(const RunConfig& config, const std::string& run_dir, TrainerControl& control,
                  ProgressSink& sink, bool resume = false, std::int64_t steps_override = -1,
                  const WarmStart& warm = {});

/// Every value the model of `config` holds (parameters, frozen tensors, buffers) for a task of
/// `vocabulary` tokens (decoders) or classes (image classifiers).
std::int64_t estimateModelValues(const RunConfig& config, std::int64_t vocabulary);
/// Estimated peak training memory in bytes: every model value with its gradient and AdamW
/// moments, the activations of a step (logits over the real vocabulary included) and the
/// evaluation set. `vocabulary` < 0 assumes 256 tokens (10 classes for images); the trainer
/// passes the task's real size.
double estimateTrainingMemory(const RunConfig& config, std::int64_t vocabulary = -1);

}  // namespace tensorscope::model_core
