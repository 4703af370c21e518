#include "spec/design_baseline.h"

#include <algorithm>

namespace tensorscope::spec {

AttentionSpec mhsaAtSizeOf(const AttentionSpec& s) {
  AttentionSpec m = makeSpecPreset("mhsa");
  const bool headed = hasSlots(s.variant) || s.variant == Variant::Tp || hasCore(s.variant);
  m.sizes.F = s.sizes.F;
  m.sizes.H = s.sizes.H;
  m.sizes.D = headed ? s.sizes.D : std::max(1, s.sizes.F / std::max(1, s.sizes.H));
  m.sizes.R = m.sizes.H * m.sizes.D;
  m.sizes.seq_len = s.sizes.seq_len;
  m.bias = s.bias;
  m.causal = s.causal;
  return m;
}

AttentionSpec presetAtSizeOf(const std::string& name, const AttentionSpec& s) {
  AttentionSpec b = makeSpecPreset(name);
  b.sizes.F = s.sizes.F;
  b.sizes.H = s.sizes.H;
  b.sizes.D = s.sizes.D;
  b.sizes.R = b.sizes.H * b.sizes.D;
  b.sizes.seq_len = s.sizes.seq_len;
  b.causal = s.causal;
  keepPresetProportions(b);
  return b;
}

void keepPresetProportions(AttentionSpec& s) {
  const int H = s.sizes.H, D = s.sizes.D;
  if (s.slots.collaborative.enabled()) s.slots.collaborative.key_dim = std::max(1, H * D / 2);
  if (s.slots.latent.enabled()) {
    s.slots.latent.kv_rank = 2 * D;
    s.slots.latent.rope_dim = 2 * std::max(1, D / 4);  // even: the rotary turns pairs
  }
}

}  // namespace tensorscope::spec
