#pragma once
/// The THSA core matrix C: its structure, trainable parts and values (plain C++, no Qt, no torch).
///
/// C is R x R. It is either dense (values plus a per-entry trainable mask; frozen entries keep
/// their value) or a scaled Kronecker product C = s * (A (x) B) with A (H x H) and B (D x D),
/// each factor of a kind below. Presets from the layer contract expand to one of these forms.

#include <string>
#include <string_view>
#include <vector>

namespace tensorscope::spec {

enum class CoreStructure { Dense, Kronecker };

/// What a Kronecker factor is. `Rank1` (c2 c3^T) is only meaningful for B.
enum class FactorKind { Identity, Ones, Fixed, Trainable, Rank1 };

/// One Kronecker factor. `values` is row-major (rows*cols) for Fixed/Trainable; for Rank1 it holds
/// c2 followed by c3 (2*D numbers). Identity and Ones carry no values.
struct CoreFactor {
  FactorKind kind = FactorKind::Identity;
  std::vector<double> values;
  bool trainable_rank1 = true;  ///< Rank1 only: whether c2, c3 are trained.

  bool operator==(const CoreFactor&) const = default;
};

struct CoreSpec {
  /// Preset name this core came from, or "custom". A label: the explicit fields below are what count.
  std::string preset = "mhsa";
  CoreStructure structure = CoreStructure::Kronecker;
  double scale = 1.0;  ///< s in C = s * (A (x) B); unused for Dense.
  CoreFactor a;        ///< H x H
  CoreFactor b;        ///< D x D
  std::vector<double> dense_values;         ///< R*R row-major (Dense)
  std::vector<unsigned char> trainable_mask;  ///< R*R, 1 = trainable (Dense)

  bool operator==(const CoreSpec&) const = default;

  /// True when no part of C is trained.
  [[nodiscard]] bool isFrozen() const;
  /// Number of trainable scalars in C.
  [[nodiscard]] long long trainableCount(int H, int D, int R) const;
};

/// Names of the THSA core presets, in display order.
const std::vector<std::string>& corePresetNames();
bool isCorePreset(std::string_view name);

/// Expands a preset for sizes H, D (R = H*D). Throws std::invalid_argument for an unknown name.
CoreSpec makeCorePreset(std::string_view name, int H, int D);

/// The effective R x R matrix C (row-major), materialised from the structure.
std::vector<double> materializeCore(const CoreSpec& core, int H, int D, int R);

/// Per-entry trainable mask of the effective C: 1 where some trainable parameter influences C[r,s].
std::vector<unsigned char> coreTrainableEntries(const CoreSpec& core, int H, int D, int R);

std::string_view toString(CoreStructure s);
std::string_view toString(FactorKind k);
bool parseCoreStructure(std::string_view text, CoreStructure& out);
bool parseFactorKind(std::string_view text, FactorKind& out);

}  // namespace tensorscope::spec
