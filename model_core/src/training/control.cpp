#include "model_core/trainer.h"

namespace tensorscope::model_core {

void TrainerControl::requestStop() {
  {
    // Set under the mutex: otherwise the store and the notify can fall between a waiter's check of
    // its predicate and its sleep, and the wake-up is lost (a Stop while paused hung the run).
    std::lock_guard lock(mutex_);
    stop_.store(true);
  }
  cv_.notify_all();
}

void TrainerControl::pause() {
  std::lock_guard lock(mutex_);
  paused_ = true;
}

void TrainerControl::resume() {
  {
    std::lock_guard lock(mutex_);
    paused_ = false;
  }
  cv_.notify_all();
}

void TrainerControl::step() {
  {
    std::lock_guard lock(mutex_);
    ++pendingSteps_;
  }
  cv_.notify_all();
}

bool TrainerControl::paused() const {
  std::lock_guard lock(mutex_);
  return paused_;
}

void TrainerControl::requestCheckpoint() {
  {
    std::lock_guard lock(mutex_);
    checkpointRequested_ = true;
  }
  cv_.notify_all();
}

void TrainerControl::requestInspection(const std::string& probe) {
  {
    std::lock_guard lock(mutex_);
    probe_ = probe;
    inspectionRequested_ = true;
  }
  cv_.notify_all();
}

void TrainerControl::setProbe(const std::string& probe) {
  std::lock_guard lock(mutex_);
  probe_ = probe;
}

void TrainerControl::setNetworkLayer(int layer) {
  std::lock_guard lock(mutex_);
  networkLayer_ = layer;
}

int TrainerControl::networkLayer() const {
  std::lock_guard lock(mutex_);
  return networkLayer_;
}

std::string TrainerControl::probe() const {
  std::lock_guard lock(mutex_);
  return probe_;
}

bool TrainerControl::waitToProceed(const std::function<void()>& writeCheckpoint, const std::function<void()>& inspect) {
  std::unique_lock lock(mutex_);
  for (;;) {
    cv_.wait(lock, [&] {
      const bool go = stop_.load() || !paused_ || pendingSteps_ > 0 || (checkpointRequested_ && writeCheckpoint) ||
                      (inspectionRequested_ && inspect);
      if (!go && sleepProbe_) sleepProbe_();
      return go;
    });
    // Requests are served before a stop too: a stop right after them still gets what they asked.
    const std::function<void()>* job = nullptr;
    if (checkpointRequested_ && writeCheckpoint) {
      checkpointRequested_ = false;
      job = &writeCheckpoint;
    } else if (inspectionRequested_ && inspect) {
      inspectionRequested_ = false;
      job = &inspect;
    }
    if (!job) break;
    lock.unlock();
    (*job)();
    lock.lock();
  }
  if (stop_.load()) return false;
  if (paused_ && pendingSteps_ > 0) --pendingSteps_;
  return true;
}

}  // namespace tensorscope::model_core
