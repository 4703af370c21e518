#pragma once
/// Analytic cost of one attention layer: parameters, forward FLOPs and activation memory.
///
/// Conventions (docs/cost-model.md has the per-variant formulas):
///  * a multiply-add counts 2 FLOPs; an elementwise op (scale, add, multiply, exp, mask) 1 FLOP;
///    a softmax over L values 5*L (max, subtract, exp, sum, divide); ELU+1 counts 2 per element;
///  * activation memory = bytes of every intermediate tensor the forward pass creates and keeps
///    for the backward pass (inputs and weights excluded), at `bytes_per_element`;
///  * the formulas follow the contraction order Tensorscope's modules use, so a structured THSA
///    core (e.g. the `mhsa` preset) costs what MHSA costs.

#include <cstdint>
#include <string>
#include <vector>

#include "spec/attention_spec.h"

namespace tensorscope::spec {

/// One named term of a cost, so the UI can show where the cost goes.
struct CostTerm {
  std::string name;  ///< e.g. "logits q·kᵀ"
  double flops = 0;
  double activation_elements = 0;
};

struct LayerCost {
  std::int64_t parameters = 0;            ///< trainable scalars
  std::int64_t frozen_parameters = 0;     ///< stored but not trained (fixed entries of C or of a head mixing)
  double forward_flops = 0;
  /// One forward and backward pass: 3 x forward_flops (the backward of each contraction is two
  /// products of its size; elementwise terms are counted the same way).
  double training_flops = 0;
  double activation_bytes = 0;
  double largest_intermediate_bytes = 0;  ///< biggest single tensor of the forward pass
  std::vector<CostTerm> terms;
};

/// The multilinear layer's CPU formulation (docs/attention-variants.md §6) contracts the output
/// features in blocks of Fb whose work tensors ([N, Fb, B, R] data, [N, Fb, N] masked Wo rows)
/// hold at most this many values each.
inline constexpr std::int64_t kMultilinearBlockElements = std::int64_t(1) << 22;

/// Fb for a budget of `blockElements` values per work tensor: at least 1, at most F.
inline std::int64_t multilinearFeatureBlock(std::int64_t F, std::int64_t B, std::int64_t N, std::int64_t R,
                                            std::int64_t blockElements = kMultilinearBlockElements) {
  const std::int64_t data = B * N * R, weights = N * N;
  const std::int64_t perFeature = data > weights ? data : (weights > 0 ? weights : 1);
  const std::int64_t fb = blockElements / perFeature;
  return fb < 1 ? 1 : (fb > F ? F : fb);
}

/// Cost for batch B and sequence length N (multilinear ignores N and uses seq_len, which its
/// output projection fixes). The spec must be valid.
LayerCost estimateCost(const AttentionSpec& spec, std::int64_t batch, std::int64_t seq,
                       int bytes_per_element = 4);

/// Autoregressive decoding of one new token against a cache of M earlier tokens, one layer.
struct DecodeCost {
  bool supported = true;                ///< false: the layer cannot decode token by token (see note)
  double cache_elements_per_token = 0;  ///< what a KV cache keeps per token (0 with a fixed state)
  double state_elements = 0;            ///< a fixed-size state instead of a cache (linear THSA, dimwise)
  double flops = 0;                     ///< FLOPs for the new token
  std::string note;                     ///< what is cached, or why the layer does not decode
};

/// Decoding cost against `cached` earlier tokens (the spec must be valid). The new token's q, k
/// and v are projected; its query meets the cached keys and itself (M + 1 keys).
DecodeCost estimateDecodeCost(const AttentionSpec& spec, std::int64_t cached);

/// Trainable parameter count alone (what the modules must report).
std::int64_t parameterCount(const AttentionSpec& spec);

}  // namespace tensorscope::spec
