#include "training/training_session.h"

#include "model_core/run_files.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/core/grad_mode.h>
#include <nlohmann/json.hpp>
#include <torch/cuda.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <set>
#include <stdexcept>

#include "files/atomic_file.h"
#include "files/read_file.h"
#include "io/tensor_convert.h"
#include "spec/json_reader.h"
#include "spec/slot_values.h"
#include "training/checkpoint_store.h"

namespace tensorscope::model_core {
namespace {

torch::Tensor longTensor(const std::vector<int64_t>& v, int64_t B, int64_t N, torch::Device d) {
  return torch::tensor(v, torch::kLong).view({B, N}).to(d);
}

torch::Tensor floatTensor(const std::vector<float>& v, std::vector<int64_t> shape, torch::Device d) {
  return torch::tensor(v, torch::kFloat).view(shape).to(d);
}

}  // namespace

ModelShape modelShapeFor(const Task& task, const TaskConfig& config) {
  ModelShape s;
  if (task.isImage()) {
    const auto probe = task.imageEvalSet(Split::Validation, 1);
    s.seq_len = probe.tokens;
    s.patch_dim = probe.patch_dim;
    s.classes = task.numClasses();
  } else {
    s.vocab = task.vocabulary().size();
    s.seq_len = config.seq_len;
  }
  return s;
}

TrainingSession::TrainingSession(const RunConfig& config) : TrainingSession(config, nullptr) {}

TrainingSession::TrainingSession(const RunConfig& config, std::unique_ptr<Task> task) : config_(config), task_(std::move(task)) {
  if (const auto problems = validateRunConfig(config); !problems.empty())
    throw std::invalid_argument(listProblems("invalid run config", problems));
  if (config.train.device == "cuda") {
    if (!torch::cuda::is_available())
      throw std::invalid_argument("train.device is \"cuda\" but LibTorch reports no usable CUDA device "
                                  "(this LibTorch may be a CPU build); use \"cpu\"");
    device_ = torch::Device(torch::kCUDA, 0);
  }
  if (!task_) task_ = makeTask(config.task);
  torch::manual_seed(config.train.seed);
  model_ = makeTransformer(config.model, modelShapeFor(*task_, config.task));
  model_->to(device_);
  std::vector<std::pair<std::string, torch::Tensor>> params;
  for (const auto& p : model_->named_parameters(true)) params.emplace_back(p.key(), p.value());
  optimizer_ = std::make_unique<AdamW>(params, AdamW::Options{config.train.beta1, config.train.beta2,
                                                              config.train.eps, config.train.weight_decay});
  // The data stream has its own seed, derived from the run seed, independent of the model init.
  dataRng_ = config.train.seed * 0x9E3779B97F4A7C15ULL + 1;
}

int64_t TrainingSession::tokensPerStep() const {
  // An image is (28 / patch)² patch tokens, the sequence the attention sees (issue 13: it was
  // counted as one token, so Fashion-MNIST showed images/s as tokens/s).
  return config_.train.batch * modelSequenceLength(config_);
}

torch::Tensor TrainingSession::sequenceLoss(const torch::Tensor& logits, const torch::Tensor& targets, const torch::Tensor& mask) {
  const auto V = logits.size(-1);
  const auto nll = torch::cross_entropy_loss(logits.reshape({-1, V}), targets.reshape({-1}), {}, at::Reduction::None);
  const auto m = mask.reshape({-1});
  return (nll * m).sum() / m.sum().clamp_min(1.0);
}

std::vector<torch::Tensor> TrainingSession::nextTrainBatch() {
  const int64_t B = config_.train.batch;
  if (task_->isImage()) {
    const auto b = task_->imageBatch(Split::Train, B, dataRng_);
    return {floatTensor(b.patches, {b.batch, b.tokens, b.patch_dim}, device_),
            torch::tensor(b.labels, torch::kLong).to(device_)};
  }
  const auto b = task_->tokenBatch(Split::Train, B, dataRng_);
  return {longTensor(b.inputs, b.batch, b.seq_len, device_), longTensor(b.targets, b.batch, b.seq_len, device_),
          floatTensor(b.loss_mask, {b.batch, b.seq_len}, device_)};
}

torch::Tensor TrainingSession::batchLoss(const std::vector<torch::Tensor>& batch) {
  if (task_->isImage()) return torch::cross_entropy_loss(model_->forward(batch[0]), batch[1]);
  return sequenceLoss(model_->forward(batch[0]), batch[1], batch[2]);
}

void TrainingSession::dropCapturedStep() { graphStep_.reset(); }

std::string TrainingSession::stepMode() const {
  if (!device_.is_cuda()) return "cpu";
  if (!graphStep_) return "not captured yet";
  return graphStep_->status();
}

std::pair<double, double> TrainingSession::trainStep(double lr, bool poison) {
  model_->train();
  const auto batch = nextTrainBatch();
  if (device_.is_cuda() && !poison) {
    if (!graphStep_) {
      // A graph replays fixed random numbers, so a model with dropout steps eagerly.
      bool dropout = config_.model.residual_dropout > 0;
      for (const auto& a : config_.model.attention) dropout = dropout || a.dropout > 0;
      graphStep_ = std::make_unique<CudaGraphStep>([this](const std::vector<torch::Tensor>& b) { return batchLoss(b); },
                                                   model_->parameters(true), *optimizer_, config_.train.grad_clip,
                                                   dropout ? "the model has dropout" : "");
    }
    if (const auto r = graphStep_->step(batch, lr)) {
      if (std::isfinite(r->first) && std::isfinite(r->second)) ++step_;
      return *r;
    }
  }
  torch::Tensor loss = batchLoss(batch);
  if (poison) loss = loss * std::numeric_limits<double>::quiet_NaN();
  optimizer_->zeroGrad();
  loss.backward();
  std::vector<torch::Tensor> params = model_->parameters(true);
  const double lossValue = loss.item<double>();
  if (device_.is_cuda()) {
    // The device formulation a captured step replays (cuda_graph_step.h), run eagerly.
    const auto total = gradNormTensor(params);
    const double norm = total.defined() ? total.item<double>() : 0.0;
    if (std::isfinite(lossValue) && std::isfinite(norm)) {
      clipGradsByNorm(params, total, config_.train.grad_clip);
      optimizer_->prepareDeviceStep(lr);
      optimizer_->applyDeviceStep();
      ++step_;
    }
    return {lossValue, norm};
  }
  const double norm = clipGradNorm(params, config_.train.grad_clip);
  if (std::isfinite(lossValue) && std::isfinite(norm)) {
    optimizer_->step(lr);
    ++step_;
  }
  return {lossValue, norm};
}

std::vector<std::pair<Split, std::string>> TrainingSession::evalSplits() const {
  if (config_.task.name == "arithmetic")
    return {{Split::Interpolation, "interpolation"}, {Split::Extrapolation, "extrapolation"}};
  return {{Split::Validation, "validation"}};
}

double TrainingSession::exactMatch(const TokenBatch& b) {
  // Greedy decoding from [BOS] question [SEP]; a row matches when its first |answer|+1 generated
  // tokens are the answer followed by EOS.
  const int64_t B = b.batch, N = b.seq_len;
  const auto& vocab = task_->vocabulary();
  std::vector<std::vector<int64_t>> want(B);
  int64_t steps = 0;
  for (int64_t r = 0; r < B; ++r) {
    want[r] = vocab.encode(b.answers[r]);
    want[r].push_back(Vocabulary::kEos);
    steps = std::max<int64_t>(steps, want[r].size());
  }
  std::vector<int64_t> seq(B * N, Vocabulary::kPad);
  std::vector<int64_t> len(B);
  for (int64_t r = 0; r < B; ++r) {
    len[r] = b.prompt_length[r];
    for (int64_t i = 0; i < len[r]; ++i) seq[r * N + i] = b.inputs[r * N + i];
  }
  std::vector<bool> ok(B, true);
  // The model is causal: the logits at position i see tokens <= i only, so a forward pass needs
  // just the longest prefix decoded so far, not all N positions (multilinear layers fix N).
  bool fixedLength = false;
  for (int i = 0; i < config_.model.layers; ++i)
    fixedLength = fixedLength || layerSpec(config_.model, i).variant == spec::Variant::Multilinear;
  for (int64_t t = 0; t < steps; ++t) {
    const int64_t prefix = fixedLength ? N : std::max<int64_t>(1, *std::max_element(len.begin(), len.end()));
    const auto logits = model_->forward(longTensor(seq, B, N, device_).narrow(1, 0, prefix)).to(torch::kCPU);
    const auto next = logits.argmax(-1);
    for (int64_t r = 0; r < B; ++r) {
      if (t >= static_cast<int64_t>(want[r].size()) || !ok[r]) continue;
      const int64_t tok = next[r][len[r] - 1].item<int64_t>();
      if (tok != want[r][t]) ok[r] = false;
      if (len[r] < N) seq[r * N + len[r]++] = tok;
      else ok[r] = ok[r] && t + 1 == static_cast<int64_t>(want[r].size());
    }
  }
  int64_t hits = 0;
  for (int64_t r = 0; r < B; ++r) hits += ok[r];
  return double(hits) / double(std::max<int64_t>(1, B));
}

EvalSnapshot TrainingSession::evaluate(Split split, int64_t examples) {
  torch::NoGradGuard noGrad;
  model_->eval();
  EvalSnapshot e;
  e.step = step_;
  double lossSum = 0, weight = 0, correct = 0, matched = 0;
  const int64_t chunk = std::max<int64_t>(1, config_.train.batch);
  if (task_->isImage()) {
    const auto all = task_->imageEvalSet(split, examples);
    const int64_t per = all.tokens * all.patch_dim;
    for (int64_t s = 0; s < all.batch; s += chunk) {
      const int64_t n = std::min(chunk, all.batch - s);
      std::vector<float> px(all.patches.begin() + s * per, all.patches.begin() + (s + n) * per);
      std::vector<int64_t> lb(all.labels.begin() + s, all.labels.begin() + s + n);
      const auto logits = model_->forward(floatTensor(px, {n, all.tokens, all.patch_dim}, device_));
      const auto y = torch::tensor(lb, torch::kLong).to(device_);
      lossSum += torch::cross_entropy_loss(logits, y, {}, at::Reduction::Sum).item<double>();
      correct += (logits.argmax(-1) == y).sum().item<double>();
      weight += double(n);
    }
    e.loss = lossSum / weight;
    e.accuracy = correct / weight;
  } else {
    const auto all = task_->tokenEvalSet(split, examples);
    const int64_t N = all.seq_len;
    const bool qa = task_->isQuestionAnswer();
    for (int64_t s = 0; s < all.batch; s += chunk) {
      const int64_t n = std::min(chunk, all.batch - s);
      auto slice = [&](const auto& v) { return std::vector(v.begin() + s * N, v.begin() + (s + n) * N); };
      const auto x = longTensor(slice(all.inputs), n, N, device_);
      const auto t = longTensor(slice(all.targets), n, N, device_);
      const auto m = floatTensor(slice(all.loss_mask), {n, N}, device_);
      const auto logits = model_->forward(x);
      const double w = m.sum().item<double>();
      lossSum += sequenceLoss(logits, t, m).item<double>() * w;
      correct += ((logits.argmax(-1) == t).to(torch::kFloat) * m).sum().item<double>();
      weight += w;
      if (qa) {
        TokenBatch sub;
        sub.batch = n;
        sub.seq_len = N;
        sub.inputs = slice(all.inputs);
        sub.prompt_length.assign(all.prompt_length.begin() + s, all.prompt_length.begin() + s + n);
        sub.answers.assign(all.answers.begin() + s, all.answers.begin() + s + n);
        matched += exactMatch(sub) * double(n);
      }
    }
    e.loss = lossSum / std::max(1.0, weight);
    e.accuracy = correct / std::max(1.0, weight);
    if (qa) e.exact_match = matched / double(std::max<int64_t>(1, all.batch));
  }
  model_->train();
  return e;
}

bool TrainingSession::weightsFinite() const {
  // One reduction per tensor, in float64 so that only an Inf or a NaN (not a large finite sum) fails.
  torch::NoGradGuard noGrad;
  auto total = torch::zeros({}, torch::TensorOptions().dtype(torch::kDouble).device(device_));
  for (const auto& p : model_->parameters(true)) total += p.sum(torch::kDouble);
  return std::isfinite(total.item<double>());
}

void TrainingSession::saveCheckpoint(const std::string& dir, const std::string& status, const std::string& message) const {
  if (!weightsFinite())
    throw std::runtime_error("refusing to write a checkpoint of step " + std::to_string(step_) +
                             ": the model holds non-finite weights");
  NamedTensors weights;
  for (const auto& w : model_->namedWeights()) weights.emplace_back(w.name, w.value.detach());
  const std::map<std::string, std::string> meta = {{"format", "tensorscope.model"}, {"step", std::to_string(step_)}};
  writeTensors(dir + "/model.safetensors", weights, meta);
  NamedTensors opt = optimizer_->state();
  opt.emplace_back("rng.torch_cpu", at::detail::getDefaultCPUGenerator().get_state());
  writeTensors(dir + "/optimizer.safetensors", opt, {{"format", "tensorscope.adamw"}, {"step", std::to_string(step_)}});
  TrainerState state;
  state.step = step_;
  state.optimizer_step = optimizer_->stepCount();
  state.data_rng = dataRng_;
  state.status = status;
  state.message = message;
  files::writeFileAtomically(dir + "/trainer_state.json", trainerStateToJson(state));
}

void TrainingSession::loadWeights(const std::string& runDir) {
  dropCapturedStep();
  const std::string dir = checkpointFilesDir(runDir);
  auto tensors = readTensors(dir + "/model.safetensors");
  std::vector<std::pair<std::string, torch::Tensor>> given(tensors.begin(), tensors.end());
  try {
    model_->loadWeights(given);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(dir + "/model.safetensors: " + e.what());
  }
  // The step these weights were taken at (an evaluation reports it); unknown (-1) for a bare weights
  // file. The checkpoint store verified the state file with the weights.
  step_ = -1;
  const std::string statePath = dir + "/trainer_state.json";
  if (std::filesystem::exists(statePath)) step_ = parseTrainerState(files::readBoundedFile(statePath), statePath).step;
}

namespace {

/// A THSA core tensor of a layer: "<...>.attn.core" or "<...>.attn.core.<factor>".
bool isCoreTensor(const std::string& name) {
  const auto pos = name.find(".attn.core");
  if (pos == std::string::npos) return false;
  const auto after = pos + std::string(".attn.core").size();
  return after == name.size() || name[after] == '.';
}

/// The slot tensors whose starting values the layers' designs draw (spec::drawsSlotWeight):
/// "blocks.<i>.attn.mix_post" and the like. A fork whose C′ was edited starts from the edit.
std::set<std::string> drawnSlotTensors(const std::vector<Block>& blocks) {
  std::set<std::string> out;
  for (size_t i = 0; i < blocks.size(); ++i) {
    const auto& s = blocks[i]->attention()->spec();
    const std::string prefix = "blocks." + std::to_string(i) + ".attn.";
    for (const char* name : {"mix_pre", "mix_post", "mta_kernel", "mta_kernel_after_sm"})
      if (spec::drawsSlotWeight(s, name)) out.insert(prefix + name);
  }
  return out;
}

}  // namespace

TrainingSession::WarmStartReport TrainingSession::warmStart(const std::string& source, bool coresFromConfig) {
  dropCapturedStep();
  const std::string dir = checkpointFilesDir(source);
  const auto given = readTensorMap(dir + "/model.safetensors");
  WarmStartReport report;
  try {
    const std::string statePath = dir + "/trainer_state.json";
    report.source_step = parseTrainerState(files::readBoundedFile(statePath), statePath).step;
  } catch (const std::exception&) {
    // A bare weights file (no trainer state) is a valid source; its step is unknown.
  }
  torch::NoGradGuard noGrad;
  const auto drawn = drawnSlotTensors(model_->blocks());
  for (const auto& w : model_->namedWeights()) {
    if (w.derived()) continue;
    if (coresFromConfig && (isCoreTensor(w.name) || drawn.count(w.name))) {
      report.from_config.push_back(w.name);
      continue;
    }
    const auto it = given.find(w.name);
    if (it == given.end() || !it->second.sizes().equals(w.target.sizes())) {
      report.unmatched.push_back(w.name);
      continue;
    }
    w.target.copy_(it->second.to(w.target.device(), w.target.scalar_type()));
    report.loaded.push_back(w.name);
  }
  return report;
}

void TrainingSession::loadCheckpoint(const std::string& dir) {
  dropCapturedStep();
  const std::string statePath = dir + "/trainer_state.json";
  const TrainerState state = parseTrainerState(files::readBoundedFile(statePath), statePath);
  const int64_t step = state.step;
  const int64_t optimizerStep = state.optimizer_step;
  const std::uint64_t rng = state.data_rng;
  // The three files must be one checkpoint: the weights and the optimizer say which step they hold.
  std::map<std::string, std::string> modelMeta, optMeta;
  auto weights = readTensors(dir + "/model.safetensors", &modelMeta);
  const auto optList = readTensors(dir + "/optimizer.safetensors", &optMeta);
  for (const auto& [file, meta] : {std::pair{"model.safetensors", &modelMeta}, std::pair{"optimizer.safetensors", &optMeta}}) {
    const auto it = meta->find("step");
    if (it == meta->end() || it->second != std::to_string(step))
      throw std::invalid_argument(dir + "/" + file + " holds step " + (it == meta->end() ? std::string("(none)") : it->second) +
                                  " but trainer_state.json says step " + std::to_string(step) +
                                  ": the files are not one checkpoint");
  }
  std::vector<std::pair<std::string, torch::Tensor>> given(weights.begin(), weights.end());
  try {
    model_->loadWeights(given);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(dir + "/model.safetensors: " + e.what());
  }
  const std::map<std::string, torch::Tensor> opt(optList.begin(), optList.end());
  optimizer_->loadState(opt, optimizerStep);
  auto rngState = opt.find("rng.torch_cpu");
  if (rngState == opt.end()) throw std::invalid_argument(dir + "/optimizer.safetensors lacks rng.torch_cpu");
  auto gen = at::detail::getDefaultCPUGenerator();
  gen.set_state(rngState->second);
  step_ = step;
  dataRng_ = rng;
  if (!weightsFinite())
    throw std::invalid_argument(dir + "/model.safetensors holds non-finite weights; it is not a checkpoint to resume");
}

}  // namespace tensorscope::model_core
