#include "model_core/training.h"

namespace tensorscope::model_core {

void TrainerControl::requestStop() {
  stop_.store(true);
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

bool TrainerControl::waitToProceed() {
  std::unique_lock lock(mutex_);
  cv_.wait(lock, [this] { return stop_.load() || !paused_ || pendingSteps_ > 0; });
  if (stop_.load()) return false;
  if (paused_ && pendingSteps_ > 0) --pendingSteps_;
  return true;
}

}  // namespace tensorscope::model_core
