#include "spec/attention_spec.h"

#include <array>
#include <cmath>
#include <stdexcept>

namespace tensorscope::spec {
namespace {
constexpr std::array<std::string_view, 7> kVariantNames = {
    "mhsa", "fixed_head", "thsa", "thsa_linear", "tp", "multilinear", "dimwise"};
constexpr std::string_view kCorePrefix = "core:";
constexpr std::array<std::string_view, 3> kGateNames = {"none", "headwise", "elementwise"};
constexpr std::array<std::string_view, 2> kLatentOrderNames = {"naive", "absorbed"};
constexpr std::array<std::string_view, 3> kMtaPadNames = {"both", "left", "right"};
constexpr std::array<std::string_view, 2> kMixingInitNames = {"normal", "concatenate"};

/// The enumerator whose name (in enumerator order) is `text`.
template <typename Enum, size_t N>
bool parseName(const std::array<std::string_view, N>& names, std::string_view text, Enum& out) {
  for (size_t i = 0; i < N; ++i)
    if (names[i] == text) {
      out = static_cast<Enum>(i);
      return true;
    }
  return false;
}

/// The design presets: an mhsa layer with the slots of the design.
bool designSlots(std::string_view name, Slots& out) {
  Slots s;
  if (name == "mqa") s.kv_groups = 1;
  else if (name == "gqa") s.kv_groups = 2;
  else if (name == "talking_heads") s.pre_mix = s.post_mix = true;
  else if (name == "gated") s.gate = Gate::Elementwise;
  else if (name == "gated_headwise") s.gate = Gate::Headwise;
  else if (name == "diff") s.differential = true;
  else if (name == "mla") {
    // The default sizes (F = 64, H = 4, D = 16) in DeepSeek-V3's proportions: a latent of 2D
    // (kv_lora_rank 512 for heads of 128 + 64), a rotary part of D/2, a full W^Q (q_lora_rank 0,
    // as the base ModelArgs).
    s.latent.kv_rank = 32;
    s.latent.rope_dim = 8;
  }
  else if (name == "tpa" || name == "tpa_kv_only") {
    // T6's small configurations (tensorgi/TPA config/train_T6_small_adam.py: q_rank 6, rank 2;
    // train_T6_kvonly_small_adam.py: rank 2 with full queries) on the default sizes F = 64, H = 4,
    // D = 16: contextual factors and the rotary on the feature factors, base 10000.
    s.tpa.q_rank = name == "tpa" ? 6 : 0;
    s.tpa.k_rank = 2;
    s.tpa.v_rank = 2;
  }
  else if (name == "mta") {
    // One MTA layer of RAM's projects/mta/configs/300M_mta.yaml (use_mta, query_kernel_size 6,
    // key_kernel_size 11, after_sm 6 × 11, pad_key both, pre_sm_linear_head, head_kernel_size =
    // n_heads, group_norm, add_gating with gate_1d, no layer_norm_rescale) on the default sizes
    // F = 64, H = 4, D = 16. A head convolution over all n_heads heads is one full H x H mixing
    // after the softmax: slots.post_mix (mix_post = head_kernel[0]ᵀ), whatever H becomes.
    s.pre_mix = true;
    s.post_mix = true;
    s.mta.q_kernel = s.mta.post_q_kernel = 6;
    s.mta.k_kernel = s.mta.post_k_kernel = 11;
    s.mta.group_norm = true;
    s.mta.out_gate = Gate::Headwise;
  }
  else if (name == "collaborative") {
    // The paper's compression: a shared key space half as wide as MHSA's H·D (Cordonnier et al.
    // 2020, Table 2, D̃ from 768 down to 384 for BERT-base), with the content bias and the
    // official default mixing N(0, 0.2²).
    s.collaborative.key_dim = 32;
  }
  else return false;
  out = s;
  return true;
}
}  // namespace

std::string_view toString(Gate g) { return kGateNames[static_cast<size_t>(g)]; }

bool parseGate(std::string_view text, Gate& out) { return parseName(kGateNames, text, out); }

std::string_view toString(LatentOrder o) { return kLatentOrderNames[static_cast<size_t>(o)]; }

bool parseLatentOrder(std::string_view text, LatentOrder& out) { return parseName(kLatentOrderNames, text, out); }

std::string_view toString(MtaPad p) { return kMtaPadNames[static_cast<size_t>(p)]; }

bool parseMtaPad(std::string_view text, MtaPad& out) { return parseName(kMtaPadNames, text, out); }

std::string_view toString(MixingInit m) { return kMixingInitNames[static_cast<size_t>(m)]; }

bool parseMixingInit(std::string_view text, MixingInit& out) { return parseName(kMixingInitNames, text, out); }

bool hasSlots(Variant v) { return v == Variant::Mhsa || v == Variant::FixedHead; }

const std::vector<std::string>& designPresetNames() {
  static const std::vector<std::string> names = {"mqa", "gqa", "talking_heads", "gated", "gated_headwise", "diff", "mla", "tpa", "tpa_kv_only", "mta", "collaborative"};
  return names;
}

bool hasCore(Variant v) { return v == Variant::Thsa || v == Variant::ThsaLinear; }


const std::vector<std::string>& variantNames() {
  static const std::vector<std::string> names(kVariantNames.begin(), kVariantNames.end());
  return names;
}

std::string_view toString(Variant v) { return kVariantNames[static_cast<size_t>(v)]; }

bool parseVariant(std::string_view text, Variant& out) { return parseName(kVariantNames, text, out); }

std::vector<std::string> specPresetNames() {
  std::vector<std::string> names = variantNames();
  for (const auto& core : corePresetNames()) {
    Variant v;
    if (!parseVariant(core, v)) names.push_back(core);
  }
  for (const auto& core : corePresetNames()) names.push_back(std::string(kCorePrefix) + core);
  for (const auto& design : designPresetNames()) names.push_back(design);
  return names;
}

AttentionSpec makeSpecPreset(std::string_view name) {
  AttentionSpec s;
  s.sizes = Sizes{};  // F=64, H=4, D=16, R=64, P=2, c=2, seq_len=32
  Variant v;
  std::string_view corePreset;
  if (Slots slots; designSlots(name, slots)) {
    s.variant = Variant::Mhsa;
    s.slots = slots;
    s.causal = slots.mta.enabled();  // the official MTA layer is causal only (mta_transformer.py _update_mask, L444–448)
  } else if (parseVariant(name, v)) {
    s.variant = v;
    if (hasCore(v)) corePreset = "thsa";
  } else {
    corePreset = name.substr(0, kCorePrefix.size()) == kCorePrefix ? name.substr(kCorePrefix.size()) : name;
    if (!isCorePreset(corePreset)) {
      std::string list;
      for (const auto& n : specPresetNames()) list += (list.empty() ? "" : ", ") + n;
      throw std::invalid_argument("unknown preset '" + std::string(name) + "' (known: " + list + ")");
    }
    s.variant = Variant::Thsa;
  }
  // Differential attention halves the heads of the MHSA it replaces (two maps per head; the value
  // head is 2D wide), as its paper compares: F = 2·H·D.
  if (s.slots.differential) s.sizes.H = s.sizes.H / 2;
  switch (s.variant) {
    case Variant::FixedHead: s.sizes.D = 32; break;  // d_p independent of F/H: the paper's point
    case Variant::Multilinear: s.sizes.R = 32; s.sizes.seq_len = 16; break;
    case Variant::Dimwise: s.sizes.R = 32; break;
    default: break;
  }
  if (!corePreset.empty()) {
    if (corePreset == "heads_only" || corePreset == "trainable_heads_only") s.sizes.D = 1;
    s.sizes.R = s.sizes.H * s.sizes.D;
    s.core = makeCorePreset(corePreset, s.sizes.H, s.sizes.D);
  }
  return s;
}

double diffLambdaInit(int layer) { return 0.8 - 0.6 * std::exp(-0.3 * layer); }

std::vector<double> effectiveCore(const AttentionSpec& spec) {
  if (!spec.core) return {};
  return materializeCore(*spec.core, spec.sizes.H, spec.sizes.D, spec.sizes.R);
}

}  // namespace tensorscope::spec
