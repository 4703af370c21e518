#include "gui/training/run_cost.h"

#include <algorithm>
#include <exception>

#include "model_core/run_config.h"
#include "spec/cost_model.h"

namespace tensorscope::app {

namespace {

QString duration(double seconds) {
  if (seconds < 90) return QString("%1 s").arg(std::max(1, int(seconds + 0.5)));
  if (seconds < 90 * 60) return QString("%1 min").arg(int(seconds / 60 + 0.5));
  return QString("%1 h").arg(seconds / 3600, 0, 'f', 1);
}

QString count(double n) {
  if (n >= 1e9) return QString("%1 G").arg(n / 1e9, 0, 'f', 1);
  if (n >= 1e6) return QString("%1 M").arg(n / 1e6, 0, 'f', 1);
  if (n >= 1e3) return QString("%1 k").arg(n / 1e3, 0, 'f', 1);
  return QString::number(qint64(n));
}

}  // namespace

QString taskDescription(const QString& task) {
  if (task == "char_lm") return "character language model on the King James Bible";
  if (task == "arithmetic") return "arithmetic questions and answers";
  if (task == "fashion_mnist") return "Fashion-MNIST image classes";
  if (task == "copy") return "copying symbol strings";
  if (task == "reverse") return "reversing symbol strings";
  if (task == "sort") return "sorting symbol strings";
  return task;
}

RunCost estimateRunCost(const model_core::RunConfig& config) {
  RunCost cost;
  const qint64 seq = model_core::modelSequenceLength(config);
  const qint64 batch = config.train.batch;
  cost.tokensPerStep = batch * seq;
  const auto& specs = config.model.attention;
  if (specs.empty()) return cost;
  double forward = 0;
  try {
    for (int layer = 0; layer < config.model.layers; ++layer) {
      const auto& spec = specs[std::min<std::size_t>(layer, specs.size() - 1)];
      forward += spec::estimateCost(spec, batch, seq).forward_flops;
    }
  } catch (const std::exception&) {
    return cost;  // an invalid design has no cost yet
  }
  const double F = config.model.d_model, tokens = double(cost.tokensPerStep);
  // The feed-forward blocks (two F × mF products a token) and the output over ~256 symbols.
  forward += config.model.layers * 2.0 * 2.0 * F * (config.model.ffn_multiplier * F) * tokens;
  forward += 2.0 * F * 256 * tokens;
  cost.flopsPerStep = 3 * forward;
  // Small models are bound by the per-step work (optimizer, data, evaluation, the GUI): ~50 ms, as
  // the default session's 600-step runs (about half a minute to a minute on 2 cores) show.
  cost.seconds = double(config.train.steps) * (cost.flopsPerStep / kCpuFlopsPerSecond + 0.05);
  return cost;
}

QString roughTrainingTime(const model_core::RunConfig& config) {
  const double seconds = estimateRunCost(config).seconds;
  return seconds > 0 ? "about " + duration(seconds) : QString();
}

QString runCostText(const model_core::RunConfig& config) {
  const RunCost cost = estimateRunCost(config);
  const qint64 seq = model_core::modelSequenceLength(config);
  QString text = QString("%1 · %2 layers · %3 steps of %4 × %5 tokens (%6 tokens)")
                     .arg(taskDescription(QString::fromStdString(config.task.name)))
                     .arg(config.model.layers)
                     .arg(config.train.steps)
                     .arg(config.train.batch)
                     .arg(seq)
                     .arg(count(double(config.train.steps) * double(cost.tokensPerStep)));
  if (cost.seconds > 0) text += " · about " + duration(cost.seconds) + " on a CPU (rough estimate)";
  return text;
}

}  // namespace tensorscope::app
