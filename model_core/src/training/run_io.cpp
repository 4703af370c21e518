// Evaluation and inference on a run directory.
#include <ATen/core/grad_mode.h>

#include <stdexcept>

#include "io/tensor_convert.h"
#include "model_core/run_config.h"
#include "model_core/run_directory.h"
#include "training/training_session.h"

namespace tensorscope::model_core {
namespace {

std::unique_ptr<TrainingSession> openRun(const std::string& runDir) {
  auto session = std::make_unique<TrainingSession>(readRunConfig(runDir + "/config.json"));
  session->loadWeights(runDir);
  session->model()->eval();
  return session;
}

}  // namespace

std::vector<EvalSnapshot> evaluateRun(const std::string& runDir) {
  auto session = openRun(runDir);
  std::vector<EvalSnapshot> out;
  for (const auto& [split, name] : session->evalSplits()) {
    auto e = session->evaluate(split, session->config().train.eval_examples);
    e.split = name;
    out.push_back(e);
  }
  return out;
}

InspectionSnapshot probeRun(const std::string& runDir, const std::string& probe) {
  return openRun(runDir)->inspect(probe);
}

NetworkValues runNetworkValues(const std::string& runDir, int layer, const std::string& probe) {
  return openRun(runDir)->inspectNetwork(layer, probe);
}

void inferFiles(const std::string& runDir, const std::string& input, const std::string& output) {
  auto session = openRun(runDir);
  const auto tensors = readTensorMap(input);
  auto& model = session->model();
  torch::NoGradGuard noGrad;
  torch::Tensor logits;
  if (model->isClassifier()) {
    auto it = tensors.find("patches");
    if (it == tensors.end()) throw std::invalid_argument(input + ": an image classifier needs 'patches' [B, T, P]");
    const auto& p = it->second;
    const auto& s = model->shape();
    if (p.dim() != 3 || p.size(1) != s.seq_len || p.size(2) != s.patch_dim)
      throw std::invalid_argument(input + ": 'patches' must be [B, " + std::to_string(s.seq_len) + ", " +
                                  std::to_string(s.patch_dim) + "]");
    logits = model->forward(p.to(torch::kFloat).to(session->device()));
  } else {
    auto it = tensors.find("tokens");
    if (it == tensors.end()) throw std::invalid_argument(input + ": no tensor named 'tokens' (I64 [B, N])");
    const auto& t = it->second;
    if (t.dim() != 2 || t.scalar_type() != torch::kLong)
      throw std::invalid_argument(input + ": 'tokens' must be I64 [B, N]");
    const auto V = model->shape().vocab;
    if (t.numel() && (t.min().item<int64_t>() < 0 || t.max().item<int64_t>() >= V))
      throw std::invalid_argument(input + ": token ids must lie in [0, " + std::to_string(V) + ")");
    logits = model->forward(t.to(session->device()));
  }
  writeTensors(output, NamedTensors{{"logits", logits.to(torch::kFloat)}}, {{"run", runDir}});
}

}  // namespace tensorscope::model_core
