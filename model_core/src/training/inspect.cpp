// TrainingSession::inspect: what the live views show about the model's insides.
#include <ATen/core/grad_mode.h>

#include <stdexcept>

#include "analysis/core_analysis_torch.h"
#include "diagram/network_evaluator.h"
#include "io/host_tensor_torch.h"
#include "training/training_session.h"

namespace tensorscope::model_core {
namespace {

/// Examples whose role vectors are shown (every non-padding token of each).
constexpr int64_t kRoleExamples = 8;

std::string inQuotes(const std::string& text) { return "\u201c" + text + "\u201d"; }

/// The validation image index a probe names: digits only, in [0, 1e6).
int64_t imageIndex(const std::string& probe) {
  const auto first = probe.find_first_not_of(" \t");
  const auto last = probe.find_last_not_of(" \t");
  const std::string digits = first == std::string::npos ? "" : probe.substr(first, last - first + 1);
  if (digits.empty() || digits.size() > 6 || digits.find_first_not_of("0123456789") != std::string::npos)
    throw std::invalid_argument("the probe of an image task is the number of a validation image (0, 1, 2, ...), not " +
                                inQuotes(probe));
  return std::stoll(digits);
}

}  // namespace

TrainingSession::Probe TrainingSession::probeInput(const std::string& probe) {
  Probe p;
  bool fixedLength = false;  // multilinear layers take exactly seq_len positions
  for (int i = 0; i < config_.model.layers; ++i)
    fixedLength = fixedLength || layerSpec(config_.model, i).variant == spec::Variant::Multilinear;
  if (task_->isImage()) {
    const int64_t index = probe.empty() ? 0 : imageIndex(probe);
    const auto img = task_->imageEvalSet(Split::Validation, index + 1);
    if (img.batch <= index)
      throw std::invalid_argument("the validation set has " + std::to_string(img.batch) + " images (0 to " +
                                  std::to_string(img.batch - 1) + "), not image " + std::to_string(index));
    const int64_t per = img.tokens * img.patch_dim;
    std::vector<float> one(img.patches.begin() + index * per, img.patches.begin() + (index + 1) * per);
    p.input = torch::tensor(one, torch::kFloat).view({1, img.tokens, img.patch_dim}).to(device_);
    // Appended, not "p" + to_string(t): GCC 12 warns falsely (-Wstringop-overflow) on that form.
    for (int64_t t = 0; t < img.tokens; ++t) p.tokens.push_back(std::string("p").append(std::to_string(t)));
    p.description = "validation image " + std::to_string(index) + " (class " + std::to_string(img.labels.at(index)) + ")";
    return p;
  }
  const auto& vocab = task_->vocabulary();
  const int64_t N = task_->tokenEvalSet(evalSplits().front().first, 1).seq_len;
  std::vector<int64_t> seq;
  if (probe.empty()) {
    const auto [split, name] = evalSplits().front();
    const auto b = task_->tokenEvalSet(split, 1);
    seq.assign(b.inputs.begin(), b.inputs.begin() + b.seq_len);
    p.description = name + " example 0";
    if (!b.questions.empty()) p.description += " " + inQuotes(b.questions.front());
  } else {
    std::vector<int64_t> ids;
    try {
      ids = vocab.encode(probe);
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(std::string("the probe cannot be read by this model: ") + e.what());
    }
    if (task_->isQuestionAnswer()) {
      seq.push_back(Vocabulary::kBos);
      seq.insert(seq.end(), ids.begin(), ids.end());
      seq.push_back(Vocabulary::kSep);
      if (static_cast<int64_t>(seq.size()) >= N)
        throw std::invalid_argument("the question has " + std::to_string(ids.size()) + " characters; with its " +
                                    "markers and an answer it must fit the model's context of " + std::to_string(N) +
                                    " tokens");
      // The model answers (greedy decoding, as exact match does), so the maps show how the answer
      // attends to the question.
      std::string answer;
      while (static_cast<int64_t>(seq.size()) < N) {
        std::vector<int64_t> padded = seq;
        if (fixedLength) padded.resize(N, Vocabulary::kPad);
        const auto x = torch::tensor(padded, torch::kLong).view({1, static_cast<int64_t>(padded.size())}).to(device_);
        const int64_t next = model_->forward(x)[0][static_cast<int64_t>(seq.size()) - 1].argmax().item<int64_t>();
        seq.push_back(next);
        if (next == Vocabulary::kEos) break;
        answer += vocab.tokens.at(next);
      }
      p.description = inQuotes(probe) + " \u2192 " + inQuotes(answer);  // question → the model's answer
    } else {
      if (static_cast<int64_t>(ids.size()) > N)
        throw std::invalid_argument("the probe has " + std::to_string(ids.size()) + " characters; the model's context is " +
                                    std::to_string(N));
      seq = ids;
      p.description = inQuotes(probe);
    }
  }
  if (fixedLength) seq.resize(N, Vocabulary::kPad);
  for (int64_t t : seq) p.tokens.push_back(vocab.tokens.at(t));
  p.input = torch::tensor(seq, torch::kLong).view({1, static_cast<int64_t>(seq.size())}).to(device_);
  return p;
}

namespace {
/// Puts a model in evaluation mode and back into training mode however the scope ends (a probe it
/// cannot read throws).
struct EvalScope {
  explicit EvalScope(Transformer& m) : model(m) { model->eval(); }
  ~EvalScope() { model->train(); }
  Transformer& model;
};
}  // namespace

NetworkValues TrainingSession::networkValues(int layer, const Probe& p, const std::vector<AttentionOutput>& outs) const {
  const auto blocks = model_->blocks();
  if (layer < 0 || layer >= static_cast<int>(blocks.size()))
    throw std::invalid_argument("the model has " + std::to_string(blocks.size()) + " layers (0 to " +
                                std::to_string(blocks.size() - 1) + "), not layer " + std::to_string(layer));
  const auto attention = blocks[static_cast<size_t>(layer)]->attention();
  NetworkValues v;
  // A rotary layer's diagram carries the turns of its queries and keys (contract §9).
  evaluateNetworkValues(attention->spec(), attention->namedWeights(), outs.at(static_cast<size_t>(layer)).input, v,
                        attention->rotary());
  v.layer = layer;
  v.step = step_;
  v.probe = p.description;
  v.tokens = p.tokens;
  return v;
}

NetworkValues TrainingSession::inspectNetwork(int layer, const std::string& probe) {
  torch::NoGradGuard noGrad;
  EvalScope evalScope(model_);
  const Probe p = probeInput(probe);
  std::vector<AttentionOutput> outs;
  model_->forward(p.input, {}, &outs);
  return networkValues(layer, p, outs);
}

InspectionSnapshot TrainingSession::inspect(const std::string& probe, int networkLayer) {
  torch::NoGradGuard noGrad;
  EvalScope evalScope(model_);
  InspectionSnapshot snap;
  snap.step = step_;
  const auto blocks = model_->blocks();
  for (size_t i = 0; i < blocks.size(); ++i) {
    const auto C = blocks[i]->attention()->effectiveCore();
    if (!C.defined()) continue;
    const auto a = analyzeCore(C);
    snap.core_layers.push_back(static_cast<int>(i));
    snap.cores.push_back(toHost(C));
    snap.stable_ranks.push_back(a.stable_rank);
    snap.spectra.push_back(a.singular_values);
  }
  // The head mixings and MTA kernels as trained so far (their values are in no spec).
  for (const auto& block : blocks) {
    std::vector<NamedHostTensor> weights;
    // As saved (namedWeights): a mixing with frozen entries as it applies, drawn values in place.
    const auto saved = block->attention()->namedWeights();
    for (const auto& name : slotWeightNames())
      for (const auto& w : saved)
        if (w.name == name) weights.push_back({name, toHost(w.value.detach())});
    snap.slot_weights.push_back(std::move(weights));
  }

  // Attention maps of the probe (a typed one, or the first evaluation example / image).
  const Probe p = probeInput(probe);
  snap.probe_tokens = p.tokens;
  snap.probe = p.description;
  std::vector<AttentionOutput> outs;
  model_->forward(p.input, {true, false}, &outs);
  // The diagram's values of one layer on the same probe and forward (a typed question is answered
  // by greedy decoding once, not again for the values).
  if (networkLayer >= 0 && networkLayer < static_cast<int>(blocks.size()))
    snap.network = std::make_shared<const NetworkValues>(networkValues(networkLayer, p, outs));
  for (const auto& o : outs) {
    std::vector<HostTensor> layer;
    if (o.maps.defined()) {
      const auto m = o.maps[0];
      if (m.dim() == 2) layer.push_back(toHost(m));
      else
        for (int64_t h = 0; h < m.size(0); ++h) layer.push_back(toHost(m[h]));
    }
    snap.maps.push_back(std::move(layer));
  }

  bool tp = false;
  for (const auto& b : blocks) tp = tp || b->attention()->spec().variant == spec::Variant::Tp;
  if (!tp || task_->isImage()) return snap;
  // Role vectors of every head of every TP layer, for every non-padding token of the first
  // evaluation examples (their structural labels come from the task).
  const auto [split, name] = evalSplits().front();
  const auto tokens = task_->tokenEvalSet(split, kRoleExamples);
  const auto input = torch::tensor(tokens.inputs, torch::kLong).view({tokens.batch, tokens.seq_len}).to(device_);
  outs.clear();
  model_->forward(input, {false, true}, &outs);
  const int64_t B = tokens.batch, N = tokens.seq_len;
  const auto& vocab = task_->vocabulary();
  std::vector<int64_t> rows;  // flat (example, token) positions that are not padding
  for (int64_t b = 0; b < B; ++b)
    for (int64_t n = 0; n < N; ++n) {
      const int64_t tok = tokens.inputs[b * N + n];
      if (tok == Vocabulary::kPad) continue;
      rows.push_back(b * N + n);
      snap.role_tokens.push_back(vocab.tokens.at(tok));
      snap.role_labels.push_back(std::string(tokenRoleName(tokens.roles[b * N + n])));
      snap.role_contexts.push_back(b < static_cast<int64_t>(tokens.questions.size()) ? tokens.questions[b] : "");
    }
  snap.role_probe = std::to_string(B) + " " + name + " examples";
  for (size_t l = 0; l < outs.size(); ++l) {
    if (!outs[l].roles.defined()) continue;
    const auto r = outs[l].roles;  // [B, H, N, D]
    const auto index = torch::tensor(rows, torch::kLong).to(r.device());
    for (int64_t h = 0; h < r.size(1); ++h)
      snap.roles.push_back({static_cast<int>(l), static_cast<int>(h),
                            toHost(r.select(1, h).reshape({B * N, r.size(3)}).index_select(0, index))});
  }
  return snap;
}

}  // namespace tensorscope::model_core
