#pragma once
/// Rotary positions on a layer's tensor diagram (docs/attention-variants.md §9; plain C++).
///
/// Rotary positions are a model option (`model.positions` "rotary" or "rotary_interleaved"), not
/// part of the AttentionSpec, so the network of buildTensorNetwork has no turn; withRotaryTurns adds
/// one on the query leg and one on the key leg, as a constant node R[token, a, a′] between the
/// projection W^Q (W^K) and everything that meets the queries (keys):
///   q[n, …, a] = Σ_{a′} R[n, a, a′]·(X W^Q)[n, …, a′]   (k likewise at the key's position m),
/// R block-diagonal with one 2×2 turn per pair of each block of `block` features (a head):
/// cos and ∓sin of the angle n·base^(−2j/block) on pair j, the pairs (j, j + block/2) ("half",
/// Hugging Face's rotate_half) or (2j, 2j + 1) ("interleaved", RoFormer / Meta Llama). The turned
/// legs are the trailing feature legs of the query whose sizes multiply to a multiple of `block`
/// (the head leg D in MHSA's diagram; THSA's channel leg R = H·D); W^Q's (and its bias's) copies of
/// them get new letters, so the drawing shows W^Q — R^Q — (what q met before).
///
/// The turn node's binding is "rotary_turn:PAIRS:BLOCK:BASE" (PAIRS "half" or "interleaved"); its
/// legs are [token, the turned legs (out)…, their copies on W^Q's side (in)…]; the evaluator makes it
/// with the modules' own turn (model_core attention/rotary.h, applyRotary), so the diagram and the
/// layer use one definition.

#include <cstdint>

#include "spec/tensor_network.h"

namespace tensorscope::spec {

/// How a layer turns its queries and keys.
struct RotaryTurns {
  bool interleaved = false;  ///< pairs (2j, 2j + 1); false: (j, j + block/2)
  double base = 10000.0;     ///< θ
  std::int64_t block = 0;    ///< features per turned block: the head size D (thsa: blocks of D in R)
};

/// `network` (from buildTensorNetwork of a layer that takes rotary positions: mhsa, fixed_head, tp
/// and their slots, differential attention, thsa) with the turns R^Q and R^K on its query and key
/// legs and the plan steps that apply them ("q_raw" → "q", "k_raw" → "k"). Throws
/// std::invalid_argument when the network has no query or key step to turn or no trailing legs
/// whose size is a multiple of an even `block`.
TensorNetwork withRotaryTurns(TensorNetwork network, const RotaryTurns& turns);

}  // namespace tensorscope::spec
