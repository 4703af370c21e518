// The values of every tensor of a layer's diagram (model_core/network_values.h).
#include "model_core/network_values.h"

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>
#include <torch/utils.h>

#include <mutex>

#include "diagram/network_evaluator.h"
#include "io/host_tensor_torch.h"
#include "model_core/memory_guard.h"
#include "spec/rotary_network.h"
#include "spec/validation.h"

namespace tensorscope::model_core {

spec::TensorNetwork layerNetwork(const spec::AttentionSpec& spec, std::int64_t seq, const Rotary& rotary) {
  auto network = spec::buildTensorNetwork(spec, seq);
  if (!rotary.on) return network;
  spec::RotaryTurns turns;
  turns.interleaved = rotary.pairs == RotaryPairs::Interleaved;
  turns.base = rotary.base;
  turns.block = spec.sizes.D;
  return spec::withRotaryTurns(std::move(network), turns);
}

void evaluateNetworkValues(const spec::AttentionSpec& spec, const std::vector<NamedWeight>& weights,
                           const torch::Tensor& x, NetworkValues& out, const Rotary& rotary) {
  at::NoGradGuard noGrad;
  out.spec = spec;
  NetworkEvaluator evaluator(layerNetwork(spec, x.size(1), rotary));
  for (const auto& [id, value] : evaluator.evaluateAll(weights, x)) out.values[id] = toHost(value);
  out.network = evaluator.network();
}

NetworkValues designNetworkValues(const spec::AttentionSpec& spec, std::int64_t seq, std::uint64_t seed) {
  if (const auto problems = spec::validate(spec); !problems.empty())
    throw std::invalid_argument("the design is not valid: " + problems.front().field + ": " + problems.front().message);
  const std::int64_t N = spec.variant == spec::Variant::Multilinear ? spec.sizes.seq_len : seq;
  if (N < 1) throw std::invalid_argument("the input needs at least one token; got " + std::to_string(N));
  // Every intermediate of the network is kept: the evaluation's own estimate, twice over.
  requireMemory(2.0 * estimateNetworkMemory(spec, 1, N, 4),
                "showing every tensor of this design's diagram at N=" + std::to_string(N), "Use fewer tokens.");
  // One at a time: two calls seeding and drawing from the global generator at once would not give
  // each its seed's values.
  static std::mutex generatorUse;
  const std::lock_guard lock(generatorUse);
  torch::manual_seed(seed);
  auto module = makeAttentionModule(spec);
  module->eval();
  at::NoGradGuard noGrad;
  for (auto& p : module->parameters()) p.add_(0.1 * at::randn_like(p));
  const auto x = at::randn({1, N, spec.sizes.F});
  NetworkValues out;
  evaluateNetworkValues(spec, module->namedWeights(), x, out);
  out.probe = "a random input x ~ N(0, 1) of " + std::to_string(N) + " tokens, random weights (seed " +
              std::to_string(seed) + ")";
  return out;
}

}  // namespace tensorscope::model_core
