#pragma once
/// Progress sinks for the headless trainer: a progress bar on a terminal, JSON lines otherwise.

#include <chrono>
#include <ostream>

#include "model_core/snapshots.h"
#include "model_core/trainer.h"

namespace tensorscope::app {

/// One JSON object per line: {"event": "metrics"|"eval"|"checkpoint"|"message"|"start", ...}.
class JsonLinesSink : public model_core::ProgressSink {
 public:
  explicit JsonLinesSink(std::ostream& out, int every = 10) : out_(out), every_(every) {}
  void onStart(std::int64_t first, std::int64_t total, const std::string& device, int threads) override;
  void onMetrics(const model_core::MetricsSnapshot& m) override;
  void onEval(const model_core::EvalSnapshot& e) override;
  void onInspection(const model_core::InspectionSnapshot& s) override;
  void onCheckpoint(std::int64_t step, const std::string& dir) override;
  void onMessage(const std::string& text) override;

 private:
  std::ostream& out_;
  int every_;
};

/// A single self-updating line: step, loss, tokens/s, ETA; evaluations on their own lines.
class TerminalSink : public model_core::ProgressSink {
 public:
  explicit TerminalSink(std::ostream& out) : out_(out) {}
  void onStart(std::int64_t first, std::int64_t total, const std::string& device, int threads) override;
  void onMetrics(const model_core::MetricsSnapshot& m) override;
  void onEval(const model_core::EvalSnapshot& e) override;
  void onMessage(const std::string& text) override;

 private:
  std::ostream& out_;
  std::int64_t first_ = 0, total_ = 1;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace tensorscope::app
