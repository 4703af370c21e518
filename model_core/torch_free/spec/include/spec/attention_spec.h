#pragma once
/// AttentionSpec: the single source of truth for one attention layer. The same spec builds the
/// LibTorch module and the tensor diagram. Plain C++ (no Qt, no torch).

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "spec/core_spec.h"

namespace tensorscope::spec {

enum class Variant { Mhsa, FixedHead, Thsa, ThsaLinear, Tp, Multilinear, Dimwise };

/// Sizes of a layer. Which ones a variant uses is documented in docs/spec-format.md:
/// mhsa/fixed_head/tp use F, H, D; thsa/thsa_linear use F, R and (Kronecker cores) H, D;
/// multilinear uses F, R, P, seq_len; dimwise uses F, R (its projection width d) and c.
struct Sizes {
  int F = 64;        ///< model width
  int H = 4;         ///< heads
  int D = 16;        ///< head (latent) size
  int R = 64;        ///< rank / channels (THSA), projection width (multilinear, dimwise)
  int P = 2;         ///< block terms (multilinear)
  int c = 2;         ///< filters (dimwise)
  int seq_len = 32;  ///< tokens N; fixed at build time for multilinear, the default elsewhere

  bool operator==(const Sizes&) const = default;
};

struct AttentionSpec {
  Variant variant = Variant::Mhsa;
  Sizes sizes;
  bool causal = false;
  bool bias = false;
  double dropout = 0.0;      ///< attention-probability dropout, in [0, 1)
  bool core_softmax = true;  ///< multilinear: softmax(g_p) (paper) or g_p (authors' code)
  std::optional<CoreSpec> core;  ///< present exactly for thsa and thsa_linear

  bool operator==(const AttentionSpec&) const = default;
};

/// Whether the variant has a core matrix C.
bool hasCore(Variant v);

const std::vector<std::string>& variantNames();
std::string_view toString(Variant v);
bool parseVariant(std::string_view text, Variant& out);

/// Names accepted by `spec preset`: every variant name, then every THSA core preset that is not
/// also a variant name ("mhsa" names the variant; "thsa" names THSA with its dense core).
std::vector<std::string> specPresetNames();

/// A complete default spec for a variant name or a THSA core preset name (core presets give a
/// `thsa` layer with that core). Throws std::invalid_argument listing the valid names.
AttentionSpec makeSpecPreset(std::string_view name);

/// Effective C (R x R, row-major) of a THSA-family spec; empty for other variants.
std::vector<double> effectiveCore(const AttentionSpec& spec);

}  // namespace tensorscope::spec
