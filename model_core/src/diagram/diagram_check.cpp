#include "model_core/diagram_check.h"

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>
#include <torch/utils.h>

#include <algorithm>
#include <cstdio>
#include <exception>
#include <limits>

#include "attention/attention_module.h"
#include "attention/rotary_rule.h"
#include "diagram/network_evaluator.h"
#include "model_core/memory_guard.h"
#include "spec/tensor_network.h"

namespace tensorscope::model_core {
namespace {

constexpr double kRelativeTolerance = 1e-9;

/// max |a - b| and whether it is within tolerance of b's magnitude.
std::pair<double, bool> compare(const torch::Tensor& got, const torch::Tensor& want) {
  if (!got.defined() && !want.defined()) return {0.0, true};
  if (!got.defined() || !want.defined() || !got.sizes().equals(want.sizes()))
    return {std::numeric_limits<double>::infinity(), false};
  const double diff = (got - want).abs().max().item<double>();
  const double scale = std::max(1.0, want.abs().max().item<double>());
  return {diff, diff <= kRelativeTolerance * scale};
}

}  // namespace

DiagramCheck checkDiagram(const spec::AttentionSpec& spec, std::int64_t batch, std::int64_t seq, std::uint64_t seed,
                          const std::string& positions) {
  DiagramCheck out;
  out.max_abs_diff_y = out.max_abs_diff_maps = std::numeric_limits<double>::infinity();
  try {
    if (batch < 1) throw std::invalid_argument("batch must be at least 1; got " + std::to_string(batch));
    const std::int64_t N = spec.variant == spec::Variant::Multilinear ? spec.sizes.seq_len : seq;
    // float64, and the module and the network each evaluate the layer: refuse what cannot fit.
    requireMemory(2.0 * estimateNetworkMemory(spec, batch, N, 8),
                  "checking this diagram at B=" + std::to_string(batch) + ", N=" + std::to_string(N) + " in float64",
                  spec.variant == spec::Variant::Multilinear
                      ? "Use a smaller --batch or a spec with a smaller sizes.seq_len (multilinear fixes N)."
                      : "Use a smaller --batch or --seq.");
    const Rotary rotary = rotaryFromPositions(positions);
    if (rotary.on)
      if (const std::string why = rotaryProblem(spec); !why.empty())
        throw std::invalid_argument("model.positions " + positions + ": " + why);
    NetworkEvaluator evaluator(layerNetwork(spec, N, rotary));
    torch::manual_seed(seed);
    auto module = makeAttentionModule(spec);
    if (rotary.on) module->setRotary(rotary);
    toFloat64(*module);
    module->eval();
    at::NoGradGuard noGrad;
    for (auto& p : module->parameters()) p.add_(0.1 * at::randn_like(p));
    const auto x = at::randn({batch, N, spec.sizes.F}, at::TensorOptions().dtype(at::kDouble));
    ForwardOptions options;
    options.with_maps = true;
    const auto want = module->forward(x, options);
    const auto got = evaluator.evaluate(module->namedWeights(), x, /*withMaps=*/true);
    const auto [dy, okY] = compare(got.y, want.y);
    const auto [dm, okM] = compare(got.maps, want.maps);
    out.max_abs_diff_y = dy;
    out.max_abs_diff_maps = dm;
    out.ok = okY && okM;
    char msg[512];
    std::snprintf(msg, sizeof msg, "%s: diagram vs module (B=%lld, N=%lld, float64): max |Δy| = %.3g, max |Δmaps| = %.3g%s",
                  evaluator.network().title.c_str(), static_cast<long long>(batch), static_cast<long long>(N), dy, dm,
                  out.ok ? "" : " — exceeds 1e-9 relative");
    out.message = msg;
  } catch (const std::exception& e) {
    out.ok = false;
    out.message = e.what();
  }
  return out;
}

}  // namespace tensorscope::model_core
