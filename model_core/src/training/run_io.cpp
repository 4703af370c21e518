// Evaluation and inference on a run directory.
#include <ATen/core/grad_mode.h>

#include <stdexcept>

#include "io/tensor_convert.h"
#include "training/session.h"

namespace tensorscope::model_core {
namespace {

std::unique_ptr<Session> openRun(const std::string& runDir) {
  auto session = std::make_unique<Session>(readRunConfig(runDir + "/config.json"));
  session->loadWeights(runDir);
  session->model()->eval();
  return session;
}

InferenceResult toResult(const torch::Tensor& logits) {
  const auto c = logits.detach().to(torch::kCPU, torch::kFloat).contiguous();
  return {c.sizes().vec(), std::vector<float>(c.data_ptr<float>(), c.data_ptr<float>() + c.numel())};
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

InferenceResult inferTokens(const std::string& runDir, const std::vector<std::int64_t>& tokens, std::int64_t batch,
                            std::int64_t seq) {
  auto session = openRun(runDir);
  if (session->model()->isClassifier()) throw std::invalid_argument(runDir + " is an image classifier: give patches");
  if (batch * seq != static_cast<std::int64_t>(tokens.size()))
    throw std::invalid_argument("tokens hold " + std::to_string(tokens.size()) + " values, not " +
                                std::to_string(batch) + "x" + std::to_string(seq));
  const auto V = session->model()->shape().vocab;
  for (auto t : tokens)
    if (t < 0 || t >= V) throw std::invalid_argument("token id " + std::to_string(t) + " is outside the vocabulary [0, " + std::to_string(V) + ")");
  torch::NoGradGuard noGrad;
  const auto x = torch::tensor(tokens, torch::kLong).view({batch, seq}).to(session->device());
  return toResult(session->model()->forward(x));
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
