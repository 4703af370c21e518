#pragma once
/// The values a user draws into a headed layer's slots (plain C++, no Qt, no torch): the starting
/// head mixings of talking heads (mix_pre, and C′ = mix_post) with their frozen entries, and the
/// starting kernels of multi-token attention. The module, the Design dock's editors, the cost
/// model and the spec's validation all read them through here, so "empty means the identity" is
/// one rule.

#include <string>
#include <string_view>
#include <vector>

#include "spec/attention_spec.h"

namespace tensorscope::spec {

/// The H x H starting values of a mixing, row-major [to-head, from-head]: its values, or the
/// identity when it has none.
std::vector<double> mixingValues(const HeadMixing& m, int H);
/// Its per-entry trainable mask (H·H, 1 = trained): all ones when it has none.
std::vector<unsigned char> mixingMask(const HeadMixing& m, int H);
/// Trained entries of the mixing (H·H when none is frozen).
long long mixingTrainableCount(const HeadMixing& m, int H);
/// The form a spec keeps: empty when the values are the identity and every entry trains (so a
/// talking-heads layer drawn back to its start is the preset again, byte for byte).
HeadMixing canonicalMixing(std::vector<double> values, std::vector<unsigned char> mask, int H);

/// Presets of a head mixing, in display order: identity (MHSA until it learns), average (every
/// head reads the mean of all heads' maps: one head's worth, stable rank 1), swap (each head reads
/// its neighbour's map, h ← h+1 mod H), identity_frozen (exactly MHSA, nothing learned),
/// diagonal_only (the off-diagonal frozen at 0: each head only rescales its own map).
const std::vector<std::string>& mixingPresetNames();
/// Preset `name` for H heads; throws std::invalid_argument listing the names.
HeadMixing makeMixingPreset(std::string_view name, int H);

/// The starting kernel of multi-token attention's pre-softmax (post = false) or post-softmax
/// convolution, H x c_q x c_k row-major: its values, or the official identity init (a 1 at the last
/// query offset and at the key offset that reads the key itself: (c_k − 1)/2 for pad both, c_k − 1
/// for left, 0 for right; mta_transformer.py L589–601). Empty when that convolution is off.
std::vector<double> mtaKernelValues(const Mta& m, int H, bool post);
/// The key index of a c_k-wide kernel that reads the key itself under `pad`.
int mtaKeySelf(int ck, MtaPad pad);
/// Sets the kernel values as a spec keeps them: empty when they equal the identity init.
void setMtaKernelValues(Mta& m, int H, bool post, std::vector<double> values);
/// Presets of an MTA kernel: identity (the official init), average (1/(c_q·c_k) everywhere: every
/// logit the mean of its window), key_blur (1/c_k along the query's own row).
const std::vector<std::string>& mtaKernelPresetNames();
/// Preset `name` for every head of the pre- or post-softmax kernel; throws std::invalid_argument.
std::vector<double> makeMtaKernelPreset(std::string_view name, const Mta& m, int H, bool post);

/// Whether the design draws its own starting values for the slot weight `name` (the module's
/// names: "mix_pre", "mix_post", "mta_kernel", "mta_kernel_after_sm"); false for every other name
/// and for a slot that starts as its identity. The warm start of a fork and the Design dock's
/// editors both ask this, so "drawn" means one thing.
bool drawsSlotWeight(const AttentionSpec& s, std::string_view name);

/// Drops drawn values that no longer fit the spec after a structural edit (H changed, a mixing
/// or a convolution switched off, a kernel resized): the slot then starts from its identity again.
/// Returns true when something was dropped. Validation rejects such values; editors call this
/// first so that changing a size never leaves an invalid spec.
bool dropStaleSlotValues(AttentionSpec& s);

}  // namespace tensorscope::spec
