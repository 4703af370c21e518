#include "attention/attention_module.h"
#include "attention/head_mixing.h"
#include "attention/rotary_rule.h"

#include <ATen/core/grad_mode.h>

#include <map>
#include <sstream>
#include <stdexcept>

namespace tensorscope::model_core {
namespace {

std::string shapeText(const torch::Tensor& t) {
  std::ostringstream s;
  s << '[';
  for (int64_t i = 0; i < t.dim(); ++i) s << (i ? ", " : "") << t.size(i);
  s << ']';
  return s.str();
}

}  // namespace

std::vector<NamedWeight> AttentionModuleImpl::namedWeights() const {
  std::vector<NamedWeight> out;
  for (const auto& p : named_parameters(/*recurse=*/true)) {
    // A head mixing with frozen entries is saved as it applies (head_mixing.h); loading writes the
    // parameter and checks that the frozen entries read back as drawn.
    const auto mixing = effectiveHeadMixing(*this, p.key());
    out.push_back({p.key(), mixing.defined() ? mixing : p.value(), p.value()});
  }
  return out;
}

void AttentionModuleImpl::loadWeights(const std::vector<std::pair<std::string, torch::Tensor>>& weights) {
  loadNamedWeights([this] { return namedWeights(); }, weights, std::string(spec::toString(spec_.variant)));
}

void loadNamedWeights(const std::function<std::vector<NamedWeight>()>& current,
                      const std::vector<std::pair<std::string, torch::Tensor>>& weights, const std::string& what) {
  std::map<std::string, torch::Tensor> given;
  std::vector<std::string> problems;
  for (const auto& [name, t] : weights)
    if (!given.emplace(name, t).second) problems.push_back("'" + name + "' appears twice");
  const auto expected = current();
  std::map<std::string, const NamedWeight*> byName;
  for (const auto& w : expected) byName[w.name] = &w;
  for (const auto& [name, t] : given)
    if (!byName.count(name)) problems.push_back("unexpected tensor '" + name + "'");
  for (const auto& w : expected) {
    auto it = given.find(w.name);
    if (it == given.end()) {
      if (!w.derived()) problems.push_back("missing tensor '" + w.name + "' " + shapeText(w.value));
      continue;
    }
    if (!it->second.sizes().equals(w.value.sizes()))
      problems.push_back("'" + w.name + "' has shape " + shapeText(it->second) + ", expected " + shapeText(w.value));
  }
  // Copy every tensor that fits, check what must read back, and roll back on any problem, so a
  // rejected load reports everything at once and leaves the model as it was.
  torch::NoGradGuard noGrad;
  std::vector<std::pair<torch::Tensor, torch::Tensor>> backup;  // (target, previous value)
  for (const auto& w : expected) {
    auto it = given.find(w.name);
    if (it == given.end() || w.derived() || !it->second.sizes().equals(w.value.sizes())) continue;
    backup.emplace_back(w.target, w.target.detach().clone());
    w.target.copy_(it->second.to(w.target.device(), w.target.scalar_type()));
  }
  // Derived tensors follow from the parameters; frozen entries of a dense core keep the spec's values.
  for (const auto& w : current()) {
    auto it = given.find(w.name);
    if (it == given.end() || !it->second.sizes().equals(w.value.sizes())) continue;
    const auto a = it->second.to(torch::kCPU, torch::kDouble);
    const auto b = w.value.detach().to(torch::kCPU, torch::kDouble);
    const double diff = a.numel() ? (a - b).abs().max().item<double>() : 0.0;
    const double scale = std::max(1.0, b.numel() ? b.abs().max().item<double>() : 0.0);
    if (diff > 1e-5 * scale)
      problems.push_back("'" + w.name + "' disagrees with the spec" +
                         (w.derived() ? " and the other weights" : " (frozen entries)") +
                         ": max difference " + std::to_string(diff));
  }
  if (!problems.empty())
    for (auto& [target, previous] : backup) target.copy_(previous);
  if (!problems.empty()) {
    std::string msg = "cannot load " + what + " weights:";
    for (const auto& p : problems) msg += "\n  " + p;
    throw std::invalid_argument(msg);
  }
}

void AttentionModuleImpl::setRotary(const Rotary& rotary) {
  if (!rotary.on) {
    rotary_ = rotary;
    return;
  }
  const std::string why = rotaryProblem(spec_);
  if (!why.empty()) throw std::invalid_argument("rotary positions: " + why);
  if (!turnsQueriesAndKeys())
    throw std::invalid_argument("rotary positions: this " + std::string(spec::toString(spec_.variant)) +
                                " layer does not turn its queries and keys");
  rotary_ = rotary;
}

std::int64_t AttentionModuleImpl::trainableParameterCount() const {
  std::int64_t n = 0;
  for (const auto& p : parameters(true))
    if (p.requires_grad()) n += p.numel();
  // Frozen entries of a head mixing are stored but not trained (head_mixing.h).
  for (const auto& b : named_buffers(/*recurse=*/false))
    if (b.key().size() > 5 && b.key().compare(b.key().size() - 5, 5, "_mask") == 0 &&
        named_parameters(false).contains(b.key().substr(0, b.key().size() - 5)))
      n -= (b.value().to(torch::kBool) == false).sum().item<std::int64_t>();
  return n;
}

void AttentionModuleImpl::checkInput(const torch::Tensor& x, bool fixedLength) const {
  if (x.dim() != 3 || x.size(2) != spec_.sizes.F)
    throw std::invalid_argument("attention input must be [B, N, F] with F = " + std::to_string(spec_.sizes.F) +
                                "; got " + shapeText(x));
  if (fixedLength && x.size(1) != spec_.sizes.seq_len)
    throw std::invalid_argument(std::string(spec::toString(spec_.variant)) + " is built for N = seq_len = " +
                                std::to_string(spec_.sizes.seq_len) + " tokens; got N = " +
                                std::to_string(x.size(1)));
  if (x.size(1) == 0 || x.size(0) == 0) throw std::invalid_argument("attention input is empty: " + shapeText(x));
}

}  // namespace tensorscope::model_core
