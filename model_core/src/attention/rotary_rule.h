#pragma once
// Which layers take rotary positions (docs/attention-variants.md §9): plain C++, shared by the run
// configuration's validation (torch-free; also built into the fuzz harnesses) and the modules.

#include <string>

#include "spec/attention_spec.h"

namespace tensorscope::model_core {

/// Empty when `s` can turn its queries and keys by position; otherwise why not, in one sentence.
/// Rotary positions act on the token-wise softmax designs whose q·k products pair feature d of a
/// query with feature d of a key: mhsa, fixed_head, tp and their slots (GQA/MQA, talking heads,
/// gates, differential attention) per head of size D, and thsa per block of D features (R = H·D).
inline std::string rotaryProblem(const spec::AttentionSpec& s) {
  using spec::Variant;
  const std::string name(spec::toString(s.variant));
  switch (s.variant) {
    case Variant::Mhsa:
    case Variant::FixedHead:
    case Variant::Tp:
      if (s.slots.latent.enabled())
        return "multi-head latent attention turns only its own decoupled rotary key part (slots.latent.rope_dim, "
               "§8.6); use learned or sinusoidal positions with it";
      if (s.slots.tpa.enabled())
        return "tensor product attention turns its own feature factors (slots.tpa.rope, §8.7); use learned or "
               "sinusoidal positions with it";
      if (s.slots.collaborative.enabled())
        return "collaborative attention scales its shared key space per head (q ⊙ m_h, §8.9), which does not commute "
               "with a turn of feature pairs by position; use learned or sinusoidal positions with it";
      if (s.sizes.D % 2 != 0)
        return "the head size D = " + std::to_string(s.sizes.D) + " is odd; rotary positions turn pairs of features";
      return {};
    case Variant::Thsa:
      if (s.sizes.R != s.sizes.H * s.sizes.D)
        return "thsa turns blocks of D features, so it needs R = H·D; got R = " + std::to_string(s.sizes.R) +
               ", H·D = " + std::to_string(s.sizes.H * s.sizes.D);
      if (s.sizes.D % 2 != 0)
        return "the block size D = " + std::to_string(s.sizes.D) + " is odd; rotary positions turn pairs of features";
      return {};
    case Variant::ThsaLinear:
      return "thsa_linear takes no rotary positions: linear attention's rotary form (RoFormer §3.4 turns the "
             "feature maps φ(q), φ(k) in the numerator only) is another layer than contract §4 defines";
    case Variant::Multilinear:
      return "multilinear attention has no per-position query-key products to turn (its core is over token triples)";
    case Variant::Dimwise:
      return "dimwise attention's softmax runs over features, not tokens, so a turn by position has no relative meaning";
  }
  return name + " does not define rotary positions";
}

}  // namespace tensorscope::model_core
