// TrainingSession::inspect: what the live views show about the model's insides.
#include <ATen/core/grad_mode.h>

#include "analysis/core_analysis_torch.h"
#include "io/host_tensor_torch.h"
#include "training/training_session.h"

namespace tensorscope::model_core {
InspectionSnapshot TrainingSession::inspect() {
  torch::NoGradGuard noGrad;
  model_->eval();
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

  std::vector<AttentionOutput> outs;
  const bool tp = [&] {
    for (const auto& b : blocks)
      if (b->attention()->spec().variant == spec::Variant::Tp) return true;
    return false;
  }();
  const int64_t probeCount = tp ? 8 : 1;
  torch::Tensor input;
  TokenBatch tokens;
  if (task_->isImage()) {
    const auto img = task_->imageEvalSet(Split::Validation, 1);
    input = torch::tensor(img.patches, torch::kFloat).view({1, img.tokens, img.patch_dim}).to(device_);
    // Appended, not "p" + to_string(t): GCC 12 warns falsely (-Wstringop-overflow) on that form.
    for (int64_t t = 0; t < img.tokens; ++t) snap.probe_tokens.push_back(std::string("p").append(std::to_string(t)));
  } else {
    tokens = task_->tokenEvalSet(evalSplits().front().first, probeCount);
    input = torch::tensor(tokens.inputs, torch::kLong).view({tokens.batch, tokens.seq_len}).to(device_);
    const auto& vocab = task_->vocabulary();
    for (int64_t t = 0; t < tokens.seq_len; ++t) snap.probe_tokens.push_back(vocab.tokens.at(tokens.inputs[t]));
  }
  model_->forward(input, {true, tp}, &outs);
  for (const auto& o : outs) {
    std::vector<HostTensor> layer;
    if (o.maps.defined()) {
      const auto m = o.maps[0];  // the first probe example
      if (m.dim() == 2) layer.push_back(toHost(m));
      else
        for (int64_t h = 0; h < m.size(0); ++h) layer.push_back(toHost(m[h]));
    }
    snap.maps.push_back(std::move(layer));
  }
  if (tp && !task_->isImage()) {
    // Role vectors of head 0 of the last TP layer, for every non-padding token of the probe batch.
    const AttentionOutput* last = nullptr;
    for (size_t i = 0; i < outs.size(); ++i)
      if (outs[i].roles.defined()) last = &outs[i];
    const auto r = last->roles.select(1, 0);  // [B, N, D]
    const int64_t B = r.size(0), N = r.size(1), D = r.size(2);
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
    const auto index = torch::tensor(rows, torch::kLong).to(r.device());
    snap.roles = toHost(r.reshape({B * N, D}).index_select(0, index));
  }
  model_->train();
  return snap;
}

}  // namespace tensorscope::model_core
