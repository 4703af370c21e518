#include "training/transformer.h"

#include <torch/nn/init.h>

#include <cmath>

#include "attention/kernels.h"
#include "training/fused_gelu.h"

namespace tensorscope::model_core {
namespace {

torch::Tensor sinusoidTable(int64_t n, int64_t f) {
  // Vaswani et al.: PE[p, 2i] = sin(p / 10000^(2i/F)), PE[p, 2i+1] = cos(...)
  auto pe = torch::zeros({n, f});
  const auto pos = torch::arange(n, torch::kFloat).unsqueeze(1);
  const auto div = torch::exp(torch::arange(0, f, 2, torch::kFloat) * (-std::log(10000.0) / double(f)));
  pe.index_put_({torch::indexing::Slice(), torch::indexing::Slice(0, torch::indexing::None, 2)}, torch::sin(pos * div));
  const auto cosPart = torch::cos(pos * div).narrow(1, 0, f / 2);
  pe.index_put_({torch::indexing::Slice(), torch::indexing::Slice(1, torch::indexing::None, 2)}, cosPart);
  return pe;
}

}  // namespace

BlockImpl::BlockImpl(const spec::AttentionSpec& s, int ffnMultiplier, double residualDropout, int layer) {
  const int64_t F = s.sizes.F;
  ln1_ = register_module("ln1", torch::nn::LayerNorm(torch::nn::LayerNormOptions({F})));
  attn_ = register_module("attn", makeAttentionModule(s, layer));
  ln2_ = register_module("ln2", torch::nn::LayerNorm(torch::nn::LayerNormOptions({F})));
  fc1_ = register_module("fc1", torch::nn::Linear(F, ffnMultiplier * F));
  fc2_ = register_module("fc2", torch::nn::Linear(ffnMultiplier * F, F));
  drop_ = register_module("drop", torch::nn::Dropout(residualDropout));
}

torch::Tensor BlockImpl::forward(const torch::Tensor& x, const ForwardOptions& options, AttentionOutput* inspect) {
  const auto input = ln1_(x);
  auto a = attn_->forward(input, options);
  auto h = x + drop_(a.y);
  if (inspect) {
    a.input = input;
    *inspect = std::move(a);
  }
  return h + drop_(project(fc2_, fusedGelu(project(fc1_, ln2_(h)))));
}

TransformerImpl::TransformerImpl(const ModelConfig& config, const ModelShape& shape)
    : config_(config), shape_(shape), classifier_(config.kind == "encoder_classifier") {
  const int64_t F = config.d_model, N = shape.seq_len;
  if (classifier_) {
    patchIn_ = register_module("patch_in", torch::nn::Linear(shape.patch_dim, F));
  } else {
    tokens_ = register_module("embed", torch::nn::Embedding(shape.vocab, F));
    torch::nn::init::normal_(tokens_->weight, 0.0, 0.02);
    if (config.tp_role_embedding) {
      roles_ = register_module("role_embed", torch::nn::Embedding(shape.vocab, F));
      torch::nn::init::normal_(roles_->weight, 0.0, 0.02);
    }
  }
  const Rotary rotary = rotaryFromPositions(config.positions);
  if (config.positions == "learned") {
    positions_ = register_module("pos", torch::nn::Embedding(N, F));
    torch::nn::init::normal_(positions_->weight, 0.0, 0.02);
  } else if (!rotary.on) {
    sinusoid_ = register_buffer("sinusoid", sinusoidTable(N, F));
  }  // rotary positions: no table; every layer turns its queries and keys (§9)
  auto list = register_module("blocks", torch::nn::ModuleList());
  for (int i = 0; i < config.layers; ++i) {
    auto s = layerSpec(config, i);
    if (classifier_) s.causal = false;
    blocks_.push_back(Block(s, config.ffn_multiplier, config.residual_dropout, i));
    blocks_.back()->attention()->setRotary(rotary);
    list->push_back(blocks_.back());
  }
  lnF_ = register_module("ln_f", torch::nn::LayerNorm(torch::nn::LayerNormOptions({F})));
  if (classifier_) head_ = register_module("head", torch::nn::Linear(F, shape.classes));
  else if (!config.tied_embeddings) head_ = register_module("head", torch::nn::Linear(torch::nn::LinearOptions(F, shape.vocab).bias(false)));
}

torch::Tensor TransformerImpl::embed(const torch::Tensor& input) {
  const int64_t N = input.size(1);
  if (!positions_ && !sinusoid_.defined()) return classifier_ ? project(patchIn_, input) : tokens_(input);  // rotary
  const auto pos = positions_ ? positions_->weight.narrow(0, 0, N) : sinusoid_.narrow(0, 0, N);  // [N, F]
  if (classifier_) return project(patchIn_, input) + pos;
  auto x = tokens_(input) + pos;
  if (roles_) x = x + roles_(input) * pos;  // TP-Transformer eq. 2: symbol-dependent role ⊙ position
  return x;
}

torch::Tensor TransformerImpl::forward(const torch::Tensor& input, const ForwardOptions& options,
                                       std::vector<AttentionOutput>* inspect) {
  if (input.size(1) > shape_.seq_len)
    throw std::invalid_argument("input has " + std::to_string(input.size(1)) + " tokens; the model was built for " +
                                std::to_string(shape_.seq_len));
  auto x = embed(input);
  if (inspect) inspect->assign(blocks_.size(), {});
  for (size_t i = 0; i < blocks_.size(); ++i) x = blocks_[i]->forward(x, options, inspect ? &(*inspect)[i] : nullptr);
  x = lnF_(x);
  if (classifier_) return project(head_, x.mean(1));          // [B, classes]
  if (head_) return project(head_, x);                          // [B, N, V]
  return torch::matmul(x, tokens_->weight.t());        // tied: h·Eᵀ
}

std::vector<NamedWeight> TransformerImpl::namedWeights() const {
  std::vector<NamedWeight> out;
  for (const auto& p : named_parameters(true)) {
    if (p.key().find(".attn.") != std::string::npos) continue;
    out.push_back({p.key(), p.value(), p.value()});
  }
  for (size_t i = 0; i < blocks_.size(); ++i)
    for (auto& w : blocks_[i]->attention()->namedWeights()) {
      w.name = "blocks." + std::to_string(i) + ".attn." + w.name;
      out.push_back(std::move(w));
    }
  return out;
}

void TransformerImpl::loadWeights(const std::vector<std::pair<std::string, torch::Tensor>>& weights) {
  loadNamedWeights([this] { return namedWeights(); }, weights, "model");
}

Transformer makeTransformer(const ModelConfig& config, const ModelShape& shape) {
  return Transformer(config, shape);
}

}  // namespace tensorscope::model_core
