#include "spec/core_spec.h"

#include <array>
#include <cmath>
#include <stdexcept>

namespace tensorscope::spec {
namespace {

// Value of an n x n factor at (i, j); `dim` is n (H for A, D for B).
double factorAt(const CoreFactor& f, int dim, int i, int j) {
  switch (f.kind) {
    case FactorKind::Identity: return i == j ? 1.0 : 0.0;
    case FactorKind::Ones: return 1.0;
    case FactorKind::Fixed:
    case FactorKind::Trainable: return f.values[static_cast<size_t>(i) * dim + j];
    case FactorKind::Rank1: return f.values[i] * f.values[dim + j];
  }
  return 0.0;
}

bool factorTrainable(const CoreFactor& f) {
  return f.kind == FactorKind::Trainable || (f.kind == FactorKind::Rank1 && f.trainable_rank1);
}

long long factorTrainableCount(const CoreFactor& f, int dim) {
  if (f.kind == FactorKind::Trainable) return static_cast<long long>(dim) * dim;
  if (f.kind == FactorKind::Rank1 && f.trainable_rank1) return 2LL * dim;
  return 0;
}

std::vector<double> scaledIdentity(int n, double s) {
  std::vector<double> v(static_cast<size_t>(n) * n, 0.0);
  for (int i = 0; i < n; ++i) v[static_cast<size_t>(i) * n + i] = s;
  return v;
}

}  // namespace

bool CoreSpec::isFrozen() const {
  if (structure == CoreStructure::LowRank) return !factors_trainable;
  if (structure == CoreStructure::Dense) {
    for (unsigned char m : trainable_mask)
      if (m) return false;
    return true;
  }
  return !factorTrainable(a) && !factorTrainable(b);
}

long long CoreSpec::trainableCount(int H, int D, int R) const {
  if (structure == CoreStructure::LowRank) return factors_trainable ? 2LL * R * rank : 0;
  if (structure == CoreStructure::Dense) {
    long long n = 0;
    for (unsigned char m : trainable_mask) n += m ? 1 : 0;
    (void)R;
    return n;
  }
  return factorTrainableCount(a, H) + factorTrainableCount(b, D);
}

const std::vector<std::string>& corePresetNames() {
  static const std::vector<std::string> names = {
      "mhsa", "thsa", "skip_left", "skip_right", "trainable_heads_only", "heads_only", "single_head", "low_rank"};
  return names;
}

bool isCorePreset(std::string_view name) {
  for (const auto& n : corePresetNames())
    if (n == name) return true;
  return false;
}

CoreSpec makeCorePreset(std::string_view name, int H, int D) {
  CoreSpec c;
  c.preset = std::string(name);
  c.structure = CoreStructure::Kronecker;
  const double sqrtH = std::sqrt(static_cast<double>(H));
  if (name == "mhsa" || name == "heads_only") {
    // sqrt(H) * (I_H (x) 1 1^T): the sqrt(H) turns THSA's 1/sqrt(R) scale into MHSA's 1/sqrt(D).
    c.scale = sqrtH;
    c.a.kind = FactorKind::Identity;
    c.b.kind = FactorKind::Ones;
  } else if (name == "thsa") {
    CoreSpec m = makeCorePreset("mhsa", H, D);
    const int R = H * D;
    c.structure = CoreStructure::Dense;
    c.dense_values = materializeCore(m, H, D, R);
    c.trainable_mask.assign(static_cast<size_t>(R) * R, 1);
    c.a = {};
    c.b = {};
  } else if (name == "skip_left") {
    // I_H (x) (c2 c3^T), c2 = c3 = H^(1/4) * 1 so that c2 c3^T = sqrt(H) * 1 1^T at init.
    c.a.kind = FactorKind::Identity;
    c.b.kind = FactorKind::Rank1;
    c.b.values.assign(2 * static_cast<size_t>(D), std::pow(static_cast<double>(H), 0.25));
  } else if (name == "skip_right" || name == "trainable_heads_only") {
    c.a.kind = FactorKind::Trainable;
    c.a.values = scaledIdentity(H, sqrtH);
    c.b.kind = FactorKind::Ones;
  } else if (name == "single_head") {
    c.a.kind = FactorKind::Ones;
    c.b.kind = FactorKind::Ones;
  } else if (name == "low_rank") {
    return makeLowRankCore(H, D, H);
  } else {
    std::string list;
    for (const auto& n : corePresetNames()) list += (list.empty() ? "" : ", ") + n;
    throw std::invalid_argument("unknown core preset '" + std::string(name) + "' (known: " + list + ")");
  }
  return c;
}

CoreSpec makeLowRankCore(int H, int D, int rank) {
  CoreSpec c;
  c.preset = rank == H ? "low_rank" : "custom";
  c.structure = CoreStructure::LowRank;
  c.rank = rank;
  const int R = H * D;
  c.u_values.assign(static_cast<size_t>(R) * rank, 0.0);
  c.v_values.assign(static_cast<size_t>(R) * rank, 0.0);
  const double q = std::pow(static_cast<double>(H), 0.25);
  for (int r = 0; r < R; ++r)
    for (int j = 0; j < rank; ++j) {
      const size_t k = static_cast<size_t>(r) * rank + j;
      if (j < H) {
        if (r / D == j) c.u_values[k] = c.v_values[k] = q;
      } else {
        c.v_values[k] = ((r * 7 + j * 13) % 5 - 2) * 0.005;  // in {-0.01, ..., 0.01}
      }
    }
  return c;
}

std::vector<double> materializeCore(const CoreSpec& core, int H, int D, int R) {
  if (core.structure == CoreStructure::Dense) return core.dense_values;
  if (core.structure == CoreStructure::LowRank) {
    std::vector<double> out(static_cast<size_t>(R) * R, 0.0);
    const int k = core.rank;
    for (int r = 0; r < R; ++r)
      for (int s = 0; s < R; ++s) {
        double sum = 0;
        for (int j = 0; j < k; ++j) sum += core.u_values[static_cast<size_t>(r) * k + j] * core.v_values[static_cast<size_t>(s) * k + j];
        out[static_cast<size_t>(r) * R + s] = sum;
      }
    return out;
  }
  std::vector<double> out(static_cast<size_t>(R) * R, 0.0);
  // C[(h,d), (h',d')] = s * A[h,h'] * B[d,d'], channel index r = h*D + d.
  for (int h = 0; h < H; ++h)
    for (int hp = 0; hp < H; ++hp) {
      const double av = core.scale * factorAt(core.a, H, h, hp);
      if (av == 0.0) continue;
      for (int d = 0; d < D; ++d)
        for (int dp = 0; dp < D; ++dp)
          out[static_cast<size_t>(h * D + d) * R + (hp * D + dp)] = av * factorAt(core.b, D, d, dp);
    }
  return out;
}

std::vector<unsigned char> coreTrainableEntries(const CoreSpec& core, int H, int D, int R) {
  if (core.structure == CoreStructure::Dense) return core.trainable_mask;
  if (core.structure == CoreStructure::LowRank)
    return std::vector<unsigned char>(static_cast<size_t>(R) * R, core.factors_trainable ? 1 : 0);
  std::vector<unsigned char> out(static_cast<size_t>(R) * R, 0);
  const bool ta = factorTrainable(core.a), tb = factorTrainable(core.b);
  if (!ta && !tb) return out;
  for (int h = 0; h < H; ++h)
    for (int hp = 0; hp < H; ++hp) {
      // A fixed zero in A (identity off-diagonal) blocks any influence of B there.
      const bool aNonZero = ta || factorAt(core.a, H, h, hp) != 0.0;
      if (!aNonZero) continue;
      for (int d = 0; d < D; ++d)
        for (int dp = 0; dp < D; ++dp) {
          const bool bNonZero = tb || factorAt(core.b, D, d, dp) != 0.0;
          if (bNonZero) out[static_cast<size_t>(h * D + d) * R + (hp * D + dp)] = 1;
        }
    }
  return out;
}

namespace {
constexpr std::array<std::string_view, 3> kStructureNames = {"dense", "kronecker", "low_rank"};
constexpr std::array<std::string_view, 5> kFactorNames = {"identity", "ones", "fixed", "trainable",
                                                          "rank1"};
}  // namespace

std::string_view toString(CoreStructure s) { return kStructureNames[static_cast<size_t>(s)]; }
std::string_view toString(FactorKind k) { return kFactorNames[static_cast<size_t>(k)]; }

bool parseCoreStructure(std::string_view text, CoreStructure& out) {
  for (size_t i = 0; i < kStructureNames.size(); ++i)
    if (kStructureNames[i] == text) {
      out = static_cast<CoreStructure>(i);
      return true;
    }
  return false;
}

bool parseFactorKind(std::string_view text, FactorKind& out) {
  for (size_t i = 0; i < kFactorNames.size(); ++i)
    if (kFactorNames[i] == text) {
      out = static_cast<FactorKind>(i);
      return true;
    }
  return false;
}

}  // namespace tensorscope::spec
