#include "cli/progress_sinks.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>

namespace tensorscope::app {

void JsonLinesSink::onStart(std::int64_t first, std::int64_t total, const std::string& device, int threads) {
  out_ << nlohmann::json{{"event", "start"}, {"first_step", first}, {"total_steps", total}, {"device", device},
                         {"threads", threads}}.dump()
       << std::endl;
}

void JsonLinesSink::onMetrics(const model_core::MetricsSnapshot& m) {
  if (m.step % every_ != 0) return;
  out_ << nlohmann::json{{"event", "metrics"}, {"step", m.step}, {"loss", m.loss}, {"lr", m.lr},
                         {"grad_norm", m.grad_norm}, {"tokens_per_second", m.tokens_per_second},
                         {"elapsed_seconds", m.elapsed_seconds}}.dump()
       << std::endl;
}

void JsonLinesSink::onEval(const model_core::EvalSnapshot& e) {
  nlohmann::json j{{"event", "eval"}, {"step", e.step}, {"split", e.split}, {"loss", e.loss}, {"accuracy", e.accuracy}};
  if (e.exact_match >= 0) j["exact_match"] = e.exact_match;
  out_ << j.dump() << std::endl;
}

void JsonLinesSink::onInspection(const model_core::InspectionSnapshot& s) {
  if (s.stable_ranks.empty()) return;
  out_ << nlohmann::json{{"event", "stable_rank"}, {"step", s.step}, {"layers", s.core_layers},
                         {"stable_rank", s.stable_ranks}}.dump()
       << std::endl;
}

void JsonLinesSink::onCheckpoint(std::int64_t step, const std::string& dir) {
  out_ << nlohmann::json{{"event", "checkpoint"}, {"step", step}, {"run_dir", dir}}.dump() << std::endl;
}

void JsonLinesSink::onMessage(const std::string& text) {
  out_ << nlohmann::json{{"event", "message"}, {"text", text}}.dump() << std::endl;
}

void TerminalSink::onStart(std::int64_t first, std::int64_t total, const std::string& device, int threads) {
  first_ = first;
  total_ = std::max<std::int64_t>(1, total);
  start_ = std::chrono::steady_clock::now();
  out_ << "training on " << device << " with " << threads << " threads, steps " << first + 1 << ".." << total << "\n";
}

void TerminalSink::onMetrics(const model_core::MetricsSnapshot& m) {
  const double frac = double(m.step) / double(total_);
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const double done = double(m.step - first_);
  const double eta = done > 0 ? elapsed / done * double(total_ - m.step) : 0;
  const int width = 30, filled = static_cast<int>(frac * width);
  char line[256];
  std::snprintf(line, sizeof line, "\r[%-*s] %3.0f%% step %lld/%lld loss %.4f lr %.2e %.0f tok/s ETA %02d:%02d ", width,
                std::string(filled, '#').c_str(), frac * 100, static_cast<long long>(m.step),
                static_cast<long long>(total_), m.loss, m.lr, m.tokens_per_second, int(eta) / 60, int(eta) % 60);
  out_ << line << std::flush;
}

void TerminalSink::onEval(const model_core::EvalSnapshot& e) {
  char line[256];
  std::snprintf(line, sizeof line, "\n  eval %-13s step %lld: loss %.4f accuracy %.3f", e.split.c_str(),
                static_cast<long long>(e.step), e.loss, e.accuracy);
  out_ << line;
  if (e.exact_match >= 0) out_ << " exact match " << e.exact_match;
  out_ << "\n";
}

void TerminalSink::onMessage(const std::string& text) { out_ << "\n" << text << "\n"; }

}  // namespace tensorscope::app
