#include "model_core/attention_layer.h"

#include <ATen/core/grad_mode.h>
#include <torch/types.h>
#include <torch/utils.h>

#include <sstream>
#include <stdexcept>

#include "attention/attention_module.h"
#include "io/tensor_convert.h"
#include "model_core/memory_guard.h"
#include "spec/cost_model.h"
#include "spec/spec_json.h"

namespace tensorscope::model_core {
namespace {

std::string shapeText(const torch::Tensor& t) {
  std::ostringstream s;
  s << t.sizes();
  return s.str();
}

}  // namespace

struct AttentionLayer::Impl {
  AttentionModule module{nullptr};
};

AttentionLayer::AttentionLayer(const spec::AttentionSpec& spec, std::uint64_t seed) : impl_(std::make_unique<Impl>()) {
  // The weights alone can exceed memory (a multilinear W_o holds N²·F values): refuse before
  // allocating them. Initialisation briefly needs a temporary of the largest weight's size.
  const auto cost = spec::estimateCost(spec, 1, spec.sizes.seq_len);
  requireMemory(2.0 * 4.0 * double(cost.parameters + cost.frozen_parameters),
                std::string("the weights of this ") + std::string(spec::toString(spec.variant)) + " layer",
                "Use smaller sizes (F, R, H·D; for multilinear the sequence length N, since W_o is N²×F).");
  torch::manual_seed(seed);
  impl_->module = makeAttentionModule(spec);
  impl_->module->eval();
}

AttentionLayer::~AttentionLayer() = default;
AttentionLayer::AttentionLayer(AttentionLayer&&) noexcept = default;
AttentionLayer& AttentionLayer::operator=(AttentionLayer&&) noexcept = default;

const spec::AttentionSpec& AttentionLayer::spec() const { return impl_->module->spec(); }

std::int64_t AttentionLayer::trainableParameterCount() const { return impl_->module->trainableParameterCount(); }

std::vector<WeightInfo> AttentionLayer::weights() const {
  std::vector<WeightInfo> out;
  for (const auto& w : impl_->module->namedWeights()) out.push_back({w.name, w.value.sizes().vec(), w.derived()});
  return out;
}

void AttentionLayer::saveWeights(const std::string& path) const {
  NamedTensors tensors;
  for (const auto& w : impl_->module->namedWeights()) tensors.emplace_back(w.name, w.value.detach().to(torch::kFloat));
  writeTensors(path, tensors,
               {{"format", "tensorscope.attention_weights"},
                {"variant", std::string(spec::toString(spec().variant))},
                {"spec", spec::toJson(spec(), -1)}});
}

void AttentionLayer::loadWeights(const std::string& path) {
  const auto tensors = readTensors(path);
  std::vector<std::pair<std::string, torch::Tensor>> given;
  for (const auto& [name, t] : tensors) {
    if (!t.is_floating_point())
      throw std::invalid_argument(path + ": weight '" + name + "' is not a floating-point tensor");
    given.emplace_back(name, t);
  }
  try {
    impl_->module->loadWeights(given);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(path + ": " + e.what());
  }
}

std::vector<std::string> AttentionLayer::runOnFiles(const std::string& input, const std::string& output,
                                                   bool withMaps) const {
  const auto tensors = readTensorMap(input);
  const auto it = tensors.find("x");
  if (it == tensors.end()) {
    std::string names;
    for (const auto& [n, t] : tensors) names += (names.empty() ? "" : ", ") + n;
    throw std::invalid_argument(input + ": no tensor named 'x' (found: " + (names.empty() ? "none" : names) + ")");
  }
  const auto& x = it->second;
  if (!x.is_floating_point()) throw std::invalid_argument(input + ": 'x' must be a floating-point tensor");
  if (x.dim() != 3 || x.size(2) != spec().sizes.F)
    throw std::invalid_argument(input + ": 'x' must be [B, N, F] with F = " + std::to_string(spec().sizes.F) +
                                "; got " + shapeText(x));
  requireMemory(estimateLayerMemory(spec(), x.size(0), x.size(1), 4, false),
                "this layer on an input of " + std::to_string(x.size(0)) + " x " + std::to_string(x.size(1)) + " tokens",
                "Use a smaller batch or sequence (or smaller layer sizes).");
  torch::NoGradGuard noGrad;
  const auto out = impl_->module->forward(x.to(torch::kFloat), {withMaps, withMaps});
  NamedTensors result{{"y", out.y}};
  if (withMaps && out.maps.defined()) result.emplace_back("maps", out.maps);
  if (withMaps && out.roles.defined()) result.emplace_back("roles", out.roles);
  if (withMaps && out.map_parts.defined()) result.emplace_back("map_parts", out.map_parts);
  writeTensors(output, result, {{"spec", spec::toJson(spec(), -1)}});
  std::vector<std::string> names;
  for (const auto& [name, tensor] : result) names.push_back(name);
  return names;
}

}  // namespace tensorscope::model_core
