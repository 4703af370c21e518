#pragma once
/// The THSA core matrix C: its structure, trainable parts and values (plain C++, no Qt, no torch).
///
/// C is R x R. It is either dense (values plus a per-entry trainable mask; frozen entries keep
/// their value), a scaled Kronecker product C = s * (A (x) B) with A (H x H) and B (D x D), each
/// factor of a kind below, or low rank C = U * V^T with U, V (R x rank) (wave 2: its cost and its
/// number of heads both follow the rank). Presets from the layer contract expand to one of these.

#include <string>
#include <string_view>
#include <vector>

namespace tensorscope::spec {

enum class CoreStructure { Dense, Kronecker, LowRank };

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
  int rank = 0;                               ///< rho (LowRank)
  std::vector<double> u_values, v_values;     ///< U and V, each R*rank row-major (LowRank)
  bool factors_trainable = true;              ///< whether U and V are trained (LowRank)

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
/// `low_rank` is makeLowRankCore(H, D, H): the mhsa preset written as U·Vᵀ.
CoreSpec makeCorePreset(std::string_view name, int H, int D);

/// A low-rank core of rank `rank` (1 <= rank <= R = H*D) that starts as close to the mhsa preset as
/// its rank allows: the first min(rank, H) columns of U and V are H^(1/4)·(I_H (x) 1_D) (so with
/// rank >= H, U·Vᵀ = sqrt(H)·(I_H (x) 1_D 1_Dᵀ) exactly); further columns are zero in U and a small
/// fixed pattern (+-0.01) in V, so they start silent yet receive gradient (zero in both would
/// never move).
CoreSpec makeLowRankCore(int H, int D, int rank);

/// The effective R x R matrix C (row-major), materialised from the structure.
std::vector<double> materializeCore(const CoreSpec& core, int H, int D, int R);

/// Per-entry trainable mask of the effective C: 1 where some trainable parameter influences C[r,s].
std::vector<unsigned char> coreTrainableEntries(const CoreSpec& core, int H, int D, int R);

std::string_view toString(CoreStructure s);
std::string_view toString(FactorKind k);
bool parseCoreStructure(std::string_view text, CoreStructure& out);
bool parseFactorKind(std::string_view text, FactorKind& out);

}  // namespace tensorscope::spec
