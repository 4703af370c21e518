#include "gui/training/training_controller.h"

#include <atomic>
#include <deque>

#include "files/run_lock.h"

namespace tensorscope::app {

/// Collects snapshots on the training thread; drained by the GUI thread.
class TrainingController::Sink : public model_core::ProgressSink {
 public:
  void onStart(std::int64_t first, std::int64_t total, const std::string& device, int threads) override {
    std::lock_guard lock(mutex_);
    start_ = Start{first, total, device, threads, true};
  }
  void onMetrics(const model_core::MetricsSnapshot& m) override {
    std::lock_guard lock(mutex_);
    metrics_.push_back(m);
  }
  void onEval(const model_core::EvalSnapshot& e) override {
    std::lock_guard lock(mutex_);
    evals_.push_back(e);
  }
  void onInspection(const model_core::InspectionSnapshot& s) override {
    auto copy = std::make_shared<const model_core::InspectionSnapshot>(s);
    std::lock_guard lock(mutex_);
    inspection_ = std::move(copy);
  }
  void onCheckpoint(std::int64_t step, const std::string&) override {
    std::lock_guard lock(mutex_);
    checkpoints_.push_back(step);
  }
  void onMessage(const std::string& text) override {
    std::lock_guard lock(mutex_);
    messages_.push_back(text);
  }

  struct Start {
    std::int64_t first = 0, total = 0;
    std::string device;
    int threads = 0;
    bool pending = false;
  };
  struct Drained {
    Start start;
    QVector<model_core::MetricsSnapshot> metrics;
    std::vector<model_core::EvalSnapshot> evals;
    std::shared_ptr<const model_core::InspectionSnapshot> inspection;
    std::vector<std::int64_t> checkpoints;
    std::vector<std::string> messages;
  };
  Drained take() {
    std::lock_guard lock(mutex_);
    Drained d;
    d.start = start_;
    start_.pending = false;
    d.metrics = QVector<model_core::MetricsSnapshot>(metrics_.begin(), metrics_.end());
    metrics_.clear();
    d.evals.swap(evals_);
    d.inspection = std::move(inspection_);
    inspection_.reset();
    d.checkpoints.swap(checkpoints_);
    d.messages.swap(messages_);
    return d;
  }

  // Set by the worker when train() returns or throws.
  std::atomic<bool> done{false};
  model_core::TrainResult result;
  std::string error;
  bool locked = false;  ///< refused: another writer holds the run folder

 private:
  std::mutex mutex_;
  Start start_;
  std::deque<model_core::MetricsSnapshot> metrics_;
  std::vector<model_core::EvalSnapshot> evals_;
  std::shared_ptr<const model_core::InspectionSnapshot> inspection_;
  std::vector<std::int64_t> checkpoints_;
  std::vector<std::string> messages_;
};

TrainingController::TrainingController(QObject* parent) : QObject(parent) {
  timer_.setInterval(40);
  connect(&timer_, &QTimer::timeout, this, &TrainingController::drain);
}

TrainingController::~TrainingController() {
  if (control_) control_->requestStop();
  if (worker_.joinable()) worker_.join();
}

bool TrainingController::start(const model_core::RunConfig& config, const QString& runDir, bool resume,
                               qint64 stepsOverride, const model_core::WarmStart& warm) {
  if (worker_.joinable()) {
    Q_EMIT failed("a run is already training; stop it first");
    return false;
  }
  control_ = std::make_unique<model_core::TrainerControl>();
  control_->setNetworkLayer(networkLayer_);
  sink_ = std::make_shared<Sink>();
  runDir_ = runDir;
  auto sink = sink_;
  auto* control = control_.get();
  const std::string dir = runDir.toStdString();
  worker_ = std::thread([config, dir, resume, stepsOverride, warm, sink, control] {
    try {
      sink->result = model_core::train(config, dir, *control, *sink, resume, stepsOverride, warm);
    } catch (const files::RunLockedError& e) {
      sink->error = e.what();
      sink->locked = true;
    } catch (const std::exception& e) {
      sink->error = e.what();
    } catch (...) {
      sink->error = "training failed with an unknown error";
    }
    sink->done.store(true);
  });
  timer_.start();
  return true;
}

void TrainingController::pause() {
  if (control_) control_->pause();
}
void TrainingController::requestCheckpoint() {
  if (control_) control_->requestCheckpoint();
}

void TrainingController::requestInspection(const QString& probe) {
  if (control_) control_->requestInspection(probe.toStdString());
}

void TrainingController::setNetworkLayer(int layer) {
  networkLayer_ = layer;
  if (control_) control_->setNetworkLayer(layer);
}

void TrainingController::resume() {
  if (control_) control_->resume();
}
void TrainingController::step() {
  if (control_) control_->step();
}
void TrainingController::stop() {
  if (control_) control_->requestStop();
}

void TrainingController::drain() {
  if (!sink_) return;
  const bool done = sink_->done.load();  // read before taking, so nothing emitted after is lost
  auto d = sink_->take();
  if (d.start.pending)
    Q_EMIT started(d.start.first, d.start.total, QString::fromStdString(d.start.device), d.start.threads);
  if (!d.metrics.isEmpty()) Q_EMIT metrics(d.metrics);
  for (const auto& e : d.evals) Q_EMIT evaluated(e);
  if (d.inspection) Q_EMIT inspected(d.inspection);
  for (auto s : d.checkpoints) Q_EMIT checkpointed(s);
  for (const auto& m : d.messages) Q_EMIT message(QString::fromStdString(m));
  if (!done) return;
  timer_.stop();
  if (worker_.joinable()) worker_.join();
  auto sink = std::move(sink_);
  control_.reset();
  if (sink->locked) Q_EMIT refused(QString::fromStdString(sink->error));
  else if (!sink->error.empty()) Q_EMIT failed(QString::fromStdString(sink->error));
  else Q_EMIT finished(sink->result);
}

void TrainingController::waitForFinished() {
  while (sink_) {
    if (worker_.joinable() && sink_->done.load()) worker_.join();
    if (!worker_.joinable()) {
      drain();
      continue;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

}  // namespace tensorscope::app
