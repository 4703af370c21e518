// set_slot and slot_is: a slot of the one attention network (docs/attention-variants.md §8) by the
// Design dock's field name, read and written as text; cost_ratio_in: a design's cost against MHSA at
// the same F, H, D, from spec/cost_model.h exactly as the Cost dock computes it.
#include <algorithm>
#include <charconv>
#include <stdexcept>

#include "lesson/checks.h"
#include "spec/design_baseline.h"
#include "spec/cost_model.h"
#include "spec/validation.h"

namespace tensorscope::spec {
namespace {

int wholeValue(const std::string& slot, const std::string& value) {
  int out = 0;
  const auto* end = value.data() + value.size();
  const auto r = std::from_chars(value.data(), end, out);
  if (value.empty() || r.ec != std::errc() || r.ptr != end || out < 0)
    throw std::invalid_argument(slot + " takes a whole number ≥ 0; got \"" + value + "\"");
  return out;
}

bool boolValue(const std::string& slot, const std::string& value) {
  if (value == "true") return true;
  if (value == "false") return false;
  throw std::invalid_argument(slot + " takes true or false; got \"" + value + "\"");
}

int* wholeSlot(AttentionSpec& s, const std::string& slot) {
  if (slot == "slots.kv_groups") return &s.slots.kv_groups;
  if (slot == "slots.latent.kv_rank") return &s.slots.latent.kv_rank;
  if (slot == "slots.latent.q_rank") return &s.slots.latent.q_rank;
  if (slot == "slots.latent.rope_dim") return &s.slots.latent.rope_dim;
  return nullptr;
}

bool* boolSlot(AttentionSpec& s, const std::string& slot) {
  if (slot == "slots.pre_mix") return &s.slots.pre_mix;
  if (slot == "slots.post_mix") return &s.slots.post_mix;
  if (slot == "slots.differential") return &s.slots.differential;
  return nullptr;
}

void requireKnown(const std::string& slot) {
  const auto& names = lessonSlotNames();
  if (std::find(names.begin(), names.end(), slot) == names.end()) {
    std::string known;
    for (const auto& n : names) known += (known.empty() ? "" : ", ") + n;
    throw std::invalid_argument("unknown slot \"" + slot + "\"; one of " + known);
  }
}


/// One cost of `s` per token at context L (nullopt: the layer has no such cost, e.g. no KV cache).
std::optional<double> costOf(const AttentionSpec& s, const std::string& cost, std::int64_t L) {
  if (cost == "parameters") return static_cast<double>(parameterCount(s));
  if (cost == "training_flops") {
    const std::int64_t tokens = s.variant == Variant::Multilinear ? s.sizes.seq_len : L;
    return estimateCost(s, 1, tokens).training_flops / static_cast<double>(tokens);
  }
  // A KV cache is a decoder's: a layer that is not causal is costed as the same layer made causal.
  AttentionSpec decoder = s;
  decoder.causal = true;
  const DecodeCost d = estimateDecodeCost(decoder, L);
  if (!d.supported) return std::nullopt;
  if (cost == "kv_cache") return d.cache_elements_per_token > 0 ? std::optional<double>(d.cache_elements_per_token) : std::nullopt;
  if (cost == "decode_flops") return d.flops;
  throw std::invalid_argument("unknown cost \"" + cost + "\"");
}

}  // namespace

AttentionSpec applyLessonSlot(const AttentionSpec& design, const std::string& slot, const std::string& value) {
  requireKnown(slot);
  AttentionSpec s = design;
  if (int* w = wholeSlot(s, slot)) {
    *w = wholeValue(slot, value);
  } else if (bool* b = boolSlot(s, slot)) {
    *b = boolValue(slot, value);
  } else if (slot == "slots.gate") {
    if (!parseGate(value, s.slots.gate)) throw std::invalid_argument("slots.gate takes none, headwise or elementwise; got \"" + value + "\"");
  } else if (slot == "slots.latent.order") {
    if (value == "naive") s.slots.latent.order = LatentOrder::Naive;
    else if (value == "absorbed") s.slots.latent.order = LatentOrder::Absorbed;
    else throw std::invalid_argument("slots.latent.order takes naive or absorbed; got \"" + value + "\"");
  }
  if (const auto issues = validate(s); !issues.empty())
    throw std::invalid_argument("setting " + slot + " to " + value + " gives an invalid design: " + formatIssues(issues));
  return s;
}

std::string lessonSlotValue(const AttentionSpec& design, const std::string& slot) {
  requireKnown(slot);
  AttentionSpec s = design;
  if (const int* w = wholeSlot(s, slot)) return std::to_string(*w);
  if (const bool* b = boolSlot(s, slot)) return *b ? "true" : "false";
  if (slot == "slots.gate") return std::string(toString(s.slots.gate));
  return s.slots.latent.order == LatentOrder::Absorbed ? "absorbed" : "naive";
}

std::optional<double> lessonCostRatio(const AttentionSpec& design, const std::string& cost, std::int64_t context) {
  const auto& names = lessonCostNames();
  if (std::find(names.begin(), names.end(), cost) == names.end()) throw std::invalid_argument("unknown cost \"" + cost + "\"");
  if (context < 1) throw std::invalid_argument("lessonCostRatio: the context length must be ≥ 1");
  if (!validate(design).empty()) return std::nullopt;
  const AttentionSpec base = mhsaAtSizeOf(design);
  if (!validate(base).empty()) return std::nullopt;
  const auto mine = costOf(design, cost, context);
  const auto theirs = costOf(base, cost, context);
  if (!mine || !theirs || *theirs <= 0) return std::nullopt;
  return *mine / *theirs;
}

}  // namespace tensorscope::spec
