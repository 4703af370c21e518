#include "spec/design_names.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "spec/core_spec.h"
#include "spec/slot_values.h"

namespace tensorscope::spec {
namespace {

using std::to_string;

constexpr double kTolerance = 1e-9;

bool near(double a, double b) { return std::abs(a - b) <= kTolerance * std::max(1.0, std::abs(b)); }

/// The H x H matrix A when C (R x R, R = H·D, row-major) is A ⊗ 1_D 1_Dᵀ: every D x D block
/// constant. Empty otherwise.
std::vector<double> headMixing(const std::vector<double>& C, int H, int D) {
  const int R = H * D;
  std::vector<double> A(static_cast<size_t>(H) * H);
  for (int h = 0; h < H; ++h)
    for (int g = 0; g < H; ++g) {
      const double a = C[static_cast<size_t>(h * D) * R + g * D];
      for (int d = 0; d < D; ++d)
        for (int e = 0; e < D; ++e)
          if (!near(C[static_cast<size_t>(h * D + d) * R + g * D + e], a)) return {};
      A[static_cast<size_t>(h) * H + g] = a;
    }
  return A;
}

bool isDiagonal(const std::vector<double>& A, int n) {
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j)
      if (i != j && !near(A[static_cast<size_t>(i) * n + j], 0.0)) return false;
  return true;
}

bool allEqual(const std::vector<double>& A, double v) {
  for (double a : A)
    if (!near(a, v)) return false;
  return true;
}

/// C = I_H ⊗ c₂c₃ᵀ with c₂c₃ᵀ of rank one (not constant): Tuformer's skip-left.
bool isSkipLeft(const std::vector<double>& C, int H, int D) {
  const int R = H * D;
  for (int h = 0; h < H; ++h)
    for (int g = 0; g < H; ++g)
      for (int d = 0; d < D; ++d)
        for (int e = 0; e < D; ++e) {
          const double c = C[static_cast<size_t>(h * D + d) * R + g * D + e];
          if (h != g && !near(c, 0.0)) return false;
          if (h == g && !near(c, C[static_cast<size_t>(d) * R + e])) return false;  // the same block on the diagonal
        }
  // Rank one: every 2 x 2 minor of the block vanishes.
  for (int d = 1; d < D; ++d)
    for (int e = 1; e < D; ++e) {
      const auto at = [&](int i, int j) { return C[static_cast<size_t>(i) * R + j]; };
      if (!near(at(0, 0) * at(d, e), at(0, e) * at(d, 0))) return false;
    }
  return true;
}

/// What the naming reads of C: the head mixing A where C = A ⊗ 1_D 1_Dᵀ (empty otherwise), whether C
/// is Tuformer's skip-left, diagonal, zero, and C[0, 0].
struct CoreShape {
  std::vector<double> A;
  bool skipLeft = false, diagonal = false, zero = false;
  double first = 0.0;
};

/// From the materialised C (R x R).
CoreShape shapeOf(const std::vector<double>& C, int H, int D, int R) {
  CoreShape k;
  k.A = headMixing(C, H, D);
  k.skipLeft = k.A.empty() && isSkipLeft(C, H, D);
  k.diagonal = isDiagonal(C, R);
  k.zero = allEqual(C, 0.0);
  k.first = C[0];
  return k;
}

/// From the factors of a Kronecker core C = sA ⊗ B, in O(H² + D²): the same tests as shapeOf on
/// the materialised C, each entry (s·A[h,g])·B[d,e] as materializeCore forms it, each condition
/// over a block read at its worst entry. At R = H·D = 16384 the materialised C is 2 GiB (a user who
/// types H = 1024 waited a minute per name); tests/spec/test_design_names.cpp holds both to one answer.
CoreShape shapeOfKronecker(const CoreSpec& core, int H, int D) {
  CoreSpec a = core, b = core;  // one factor each, materialised alone (scale 1, the other factor ones)
  a.scale = b.scale = 1.0;
  a.b.kind = FactorKind::Ones;
  b.a.kind = FactorKind::Ones;
  std::vector<double> sA = materializeCore(a, H, 1, H);
  const std::vector<double> B = materializeCore(b, 1, D, D);
  for (double& x : sA) x = core.scale * x;
  double spread = 0.0, maxB = 0.0, maxOffB = 0.0;  // max |B - B[0,0]|, max |B|, max |B| off its diagonal
  for (int d = 0; d < D; ++d)
    for (int e = 0; e < D; ++e) {
      const double v = B[static_cast<size_t>(d) * D + e];
      spread = std::max(spread, std::abs(v - B[0]));
      maxB = std::max(maxB, std::abs(v));
      if (d != e) maxOffB = std::max(maxOffB, std::abs(v));
    }
  const auto x = [&](int h, int g) { return sA[static_cast<size_t>(h) * H + g]; };
  const auto nearZero = [](double worst) { return worst <= kTolerance; };
  CoreShape k;
  k.first = x(0, 0) * B[0];
  // A ⊗ 1 1ᵀ: every block (h, g) constant, |x|·|B[d,e] − B[0,0]| within the tolerance of x·B[0,0].
  bool blocksConstant = true;
  for (int h = 0; h < H && blocksConstant; ++h)
    for (int g = 0; g < H && blocksConstant; ++g)
      blocksConstant = std::abs(x(h, g)) * spread <= kTolerance * std::max(1.0, std::abs(x(h, g) * B[0]));
  if (blocksConstant) {
    k.A.resize(static_cast<size_t>(H) * H);
    for (int h = 0; h < H; ++h)
      for (int g = 0; g < H; ++g) k.A[static_cast<size_t>(h) * H + g] = x(h, g) * B[0];
  }
  bool offHeadsZero = true, diagonalBlocksZero = true, sameDiagonal = true;
  for (int h = 0; h < H; ++h)
    for (int g = 0; g < H; ++g) {
      if (h != g) offHeadsZero = offHeadsZero && nearZero(std::abs(x(h, g)) * maxB);
      else diagonalBlocksZero = diagonalBlocksZero && nearZero(std::abs(x(h, h)) * maxOffB);
      // C[hD+d, hD+e] near C[d, e]: |x_hh − x_00|·|B[d,e]| within the tolerance of x_00·B[d,e]; the
      // worst (d, e) is the largest |B[d,e]|.
      if (h == g && std::abs(x(h, h) - x(0, 0)) * maxB > kTolerance * std::max(1.0, std::abs(x(0, 0)) * maxB))
        sameDiagonal = false;
    }
  k.zero = true;
  for (int h = 0; h < H && k.zero; ++h)
    for (int g = 0; g < H && k.zero; ++g) k.zero = nearZero(std::abs(x(h, g)) * maxB);
  k.diagonal = offHeadsZero && diagonalBlocksZero;
  if (k.A.empty() && offHeadsZero && sameDiagonal) {
    // The diagonal block x_00·B of rank one: every 2 x 2 minor through its first row and column vanishes.
    const auto at = [&](int i, int j) { return x(0, 0) * B[static_cast<size_t>(i) * D + j]; };
    k.skipLeft = true;
    for (int d = 1; d < D && k.skipLeft; ++d)
      for (int e = 1; e < D && k.skipLeft; ++e) k.skipLeft = near(at(0, 0) * at(d, e), at(0, e) * at(d, 0));
  }
  return k;
}

std::vector<DesignName> nameThsa(const AttentionSpec& s) {
  const auto& z = s.sizes;
  const int H = z.H, D = z.D, R = z.R;
  const std::string family = s.variant == Variant::ThsaLinear ? "linear THSA (Tuformer, kernelised)" : "THSA (Tuformer)";
  if (s.variant == Variant::ThsaLinear)
    return {{family, true, "φ(C_r ⊙ q)·φ(k) similarities instead of a softmax per channel"}};
  std::vector<DesignName> out;
  const auto generic = [&](const std::string& why) {
    const bool lowRank = s.core && s.core->structure == CoreStructure::LowRank;
    return std::vector<DesignName>{{family + (lowRank ? ", low-rank core" : ", dense core"), true, why},
                                   {"MHSA", false, "THSA contains MHSA at C = √H·I_H ⊗ 1_D 1_Dᵀ"},
                                   {"talking heads, pre-softmax half", false, "and the head mixings C = A ⊗ 1_D 1_Dᵀ"}};
  };
  // A trainable core is named by what it can learn (its structure), a frozen one by its values.
  if (s.core && !s.core->isFrozen()) {
    const CoreSpec& c = *s.core;
    if (c.structure == CoreStructure::Kronecker) {
      const bool perHead = c.b.kind == FactorKind::Ones || (D == 1 && c.b.kind == FactorKind::Identity);
      if (perHead && c.a.kind == FactorKind::Trainable)
        return {{"talking heads, pre-softmax half", true,
                 "C = A ⊗ 1_D 1_Dᵀ with a trainable A: each map learns a mixing of the heads' q·k products "
                 "(Tuformer's skip-right)"},
                {"MHSA", false, "at A = √H·I"}};
      if (c.a.kind == FactorKind::Identity && c.b.kind == FactorKind::Rank1)
        return {{"Tuformer skip-left", true, "C = I_H ⊗ c₂c₃ᵀ with trainable c₂, c₃: heads kept apart"},
                {"MHSA", false, "at c₂ = c₃ = H^¼·1"}};
    }
    if (c.structure != CoreStructure::Kronecker)
      return generic("a trainable " + std::string(c.structure == CoreStructure::LowRank ? "low-rank" : "dense") +
                     " core C: channels may mix across heads");
  }
  const std::string noKronecker = "a core C that is no Kronecker product with 1_D 1_Dᵀ: channels mix across heads";
  const bool factored = s.core && s.core->structure == CoreStructure::Kronecker && static_cast<long long>(H) * D == R;
  const auto C = factored ? std::vector<double>{} : effectiveCore(s);
  if (!factored && C.empty()) return generic(noKronecker);
  const CoreShape k = factored                               ? shapeOfKronecker(*s.core, H, D)
                      : static_cast<long long>(H) * D == R ? shapeOf(C, H, D, R)
                                                           : CoreShape{{}, false, isDiagonal(C, R), allEqual(C, 0.0), C[0]};
  if (static_cast<long long>(H) * D == R) {
    if (const auto& A = k.A; !A.empty()) {
      if (allEqual(A, A[0]) && H > 1) {
        out.push_back({"single-head attention (one head of size " + to_string(R) + ")", true,
                       "C = a·1_R 1_Rᵀ: one map shared by every channel"});
      } else if (isDiagonal(A, H)) {
        bool sameScale = true;
        for (int h = 0; h < H; ++h) sameScale = sameScale && near(A[static_cast<size_t>(h) * H + h], std::sqrt(double(H)));
        out.push_back({"MHSA (" + to_string(H) + " heads of size " + to_string(D) + ")", sameScale,
                       sameScale ? "C = √H·I_H ⊗ 1_D 1_Dᵀ: THSA's 1/√R scale becomes MHSA's 1/√D"
                                 : "C = diag(a) ⊗ 1_D 1_Dᵀ: MHSA's heads with a temperature of their own"});
      } else {
        out.push_back({"talking heads, pre-softmax half", true,
                       "C = A ⊗ 1_D 1_Dᵀ with A (" + to_string(H) + " x " + to_string(H) +
                           ") not diagonal: each map mixes the heads' q·k products (Tuformer's skip-right)"});
      }
      return out;
    }
    if (k.skipLeft)
      return {{"Tuformer skip-left", true, "C = I_H ⊗ c₂c₃ᵀ: heads kept apart, a rank-one channel weighting inside each"}};
  }
  // "equals" when C is I_R: every entry equal to C[0, 0] and that 1, which a diagonal C with R > 1 never is.
  if (k.diagonal && !k.zero)
    return {{"MHSA (" + to_string(R) + " heads of size 1, Tuformer heads-only)", R == 1 && near(k.first, 1.0),
             "C diagonal: every channel is a head of size one"}};
  return generic(noKronecker);
}

/// Tensor Product Attention (§8.7). Contextual head factors: TPA (or T6's keys-and-values-only
/// form). Constant head factors (paper §4, "non-contextual TPA"): each head's projection is
/// (1/R)·Σ_r a[h, r]·W_B_r, so with every rank ≥ H the heads' projections are any matrices (a_r =
/// H·e_r gives MHSA's): the design is MHSA (with the rotary, when on); key and value ranks G < H
/// make every head's key and value a fixed mix of G shared ones, which contains GQA-G (MQA at 1).
std::vector<DesignName> nameTpa(const AttentionSpec& s) {
  const Tpa& t = s.slots.tpa;
  const int H = s.sizes.H;
  const std::string ranks = "R_Q = " + (t.q_rank == 0 ? std::string("— (queries as MHSA)") : to_string(t.q_rank)) +
                            ", R_K = " + to_string(t.k_rank) + ", R_V = " + to_string(t.v_rank);
  const std::string rope = std::string(t.rope ? ", with the rotary on the feature factors" : ", no rotary") +
                           (t.group_norm ? ", each head's output RMS-normalised (T6 using_groupnorm)" : "");
  const std::string norm = t.group_norm ? " with a head RMSNorm" : "";
  const std::string mhsa = t.rope ? "MHSA with rotary positions (RoPE)" + std::string(t.group_norm ? " and a head RMSNorm" : "")
                                  : "MHSA" + norm;
  if (!t.contextual_b) {
    // Constant feature factors b[r, :] (validation makes the head factors contextual): each head's
    // projection is (1/R)·bᵀ·W_A,h, any [D, F] matrix once R ≥ D; the rotary, linear, turns the sum.
    const int rq = t.q_rank == 0 ? s.sizes.D : t.q_rank;
    if (rq >= s.sizes.D && t.k_rank >= s.sizes.D && t.v_rank >= s.sizes.D)
      return {{mhsa, true,
               "TPA with constant feature factors and every rank ≥ D (" + ranks +
                   "): each head's projection (1/R)·bᵀ·W_A,h is any matrix, as in MHSA (b = R·I)" + rope}};
    return {{"TPA with constant feature factors (non-contextual B)", true,
             "q, k, v per token sums of rank-1 products a(x)⊗b/R with learned constant feature factors (" + ranks +
                 rope + "): every head's keys and values in the span of the same R_K and R_V vectors"}};
  }
  if (t.contextual_a) {
    if (t.q_rank == 0)
      return {{"TPA, keys and values only (T6-KVonly)", true,
               "keys and values per token sums of rank-1 products a(x)⊗b(x) of contextual head and feature factors (" +
                   ranks + rope + "); queries as MHSA"},
              {"Tensor Product Attention (TPA)", false, "the contextual factorisation of K and V"}};
    return {{"Tensor Product Attention (TPA)", true,
             "q, k, v per token sums of rank-1 products a(x)⊗b(x)/R of contextual head and feature factors (" + ranks +
                 rope + ")"}};
  }
  const int rq = t.q_rank == 0 ? H : t.q_rank;
  if (rq >= H && t.k_rank >= H && t.v_rank >= H)
    return {{mhsa, true,
             "non-contextual TPA with every rank ≥ H (" + ranks +
                 "): each head's projection (1/R)·Σ_r a[h,r]·W_B_r is any matrix, as in MHSA (a_r = H·e_r)" + rope}};
  std::vector<DesignName> out = {
      {"non-contextual TPA" + norm, true,
       "q, k, v per token sums of rank-1 products a⊗b(x)/R with learned constant head factors (" + ranks + rope + ")"}};
  if (rq >= H && t.k_rank == t.v_rank && t.k_rank < H) {
    const int G = t.k_rank;
    out.push_back({G == 1 ? "MQA" : "GQA-" + to_string(G), false,
                   "every head's key and value a fixed mix of " + to_string(G) +
                       " shared ones (a_j = G·mask_j, ones on the heads of group j, gives it exactly; paper §4.2)"});
  }
  return out;
}

std::vector<DesignName> nameHeaded(const AttentionSpec& s) {
  const auto& z = s.sizes;
  const Slots& slot = s.slots;
  std::string base = "MHSA";
  std::string baseWhy = to_string(z.H) + " heads of size " + to_string(z.D) + ", one softmax map each";
  if (s.variant == Variant::Tp) {
    base = "TP-attention";
    baseWhy = "each head's output bound to its role vector r = x·W^R by a Hadamard product";
  } else if (s.variant == Variant::FixedHead && static_cast<long long>(z.H) * z.D != z.F) {
    base = "fixed head size (Low-Rank Bottleneck)";
    baseWhy = "head size D = " + to_string(z.D) + " chosen apart from F/H = " + to_string(z.F) + "/" + to_string(z.H);
  }
  if (slot.tpa.enabled()) return nameTpa(s);  // validation keeps TPA apart from the other slots
  std::vector<DesignName> parts;
  const int G = slot.kv_groups > 0 ? slot.kv_groups : z.H;
  if (G != z.H) {
    if (G == 1) parts.push_back({"MQA", true, "one key and value head shared by all " + to_string(z.H) + " query heads"});
    else
      parts.push_back({"GQA-" + to_string(G), true,
                       "K and V shared by " + to_string(G) + " groups of " + to_string(z.H / G) + " query heads"});
  }
  const Mta& mta = slot.mta;
  const bool convolves = mta.q_kernel > 0 || mta.post_q_kernel > 0;
  // A mixing drawn as the identity with every entry frozen (spec/slot_values.h) mixes nothing.
  const auto mixes = [&](bool on, const HeadMixing& m) {
    return on && !(mixingValues(m, z.H) == mixingValues({}, z.H) && mixingTrainableCount(m, z.H) == 0);
  };
  const bool preMixes = mixes(slot.pre_mix, slot.pre_mixing);
  // A head convolution over all H heads is a full post-softmax head mixing (RAM's talking-heads
  // baseline configs use head_kernel_size = n_heads with pre_sm_linear_head).
  const bool postMixes = mixes(slot.post_mix, slot.post_mixing) || mta.head_group == z.H;
  if (convolves) {
    // Multi-token attention (§8.8): its head mixings are part of the design.
    std::string why;
    if (mta.q_kernel > 0)
      why = "each head's logits convolved over " + to_string(mta.q_kernel) + " x " + to_string(mta.k_kernel) +
            " (query, key) offsets before the softmax";
    if (mta.post_q_kernel > 0)
      why += std::string(why.empty() ? "" : ", ") + "its weights over " + to_string(mta.post_q_kernel) + " x " +
             to_string(mta.post_k_kernel) + " offsets after it";
    if (preMixes) why += ", the logits mixed across heads";
    if (mta.head_group > 0 && mta.head_group < z.H)
      why += ", the weights mixed in groups of " + to_string(mta.head_group) + " heads";
    else if (postMixes) why += ", the weights mixed across all heads";
    if (mta.group_norm) why += std::string(", each head's output RMS-normalised") + (mta.norm_rescale ? " and scaled by 1 − λ_init" : "");
    if (mta.out_gate != Gate::None) why += ", each head gated by σ of a linear map of its output";
    parts.push_back({"multi-token attention (MTA)", true, why});
  } else if (preMixes && postMixes)
    parts.push_back({"talking heads", true, "the heads mixed by trainable H x H matrices before and after the softmax"});
  else if (!preMixes && mta.head_group > 0 && mta.head_group < z.H)
    parts.push_back({"grouped head mixing (MTA head convolution)", true,
                     "the attention weights mixed across heads in groups of " + to_string(mta.head_group)});
  else if (preMixes && mta.head_group > 0 && mta.head_group < z.H)
    parts.push_back({"talking heads, post-softmax half in groups", true,
                     "the logits mixed across heads before the softmax, the weights in groups of " +
                         to_string(mta.head_group) + " heads after it"});
  else if (preMixes)
    parts.push_back({"talking heads, pre-softmax half", true,
                     "the logits mixed across heads before the softmax (THSA skip-right's C = A ⊗ 1_D 1_Dᵀ)"});
  else if (postMixes)
    parts.push_back({"talking heads, post-softmax half", true, "the attention weights mixed across heads after the softmax"});
  if (!convolves && (mta.group_norm || mta.out_gate != Gate::None))
    parts.push_back({"gated head norm (MTA)", true,
                     std::string(mta.group_norm ? "each head's output RMS-normalised over its D features" : "") +
                         (mta.norm_rescale ? " and scaled by 1 − λ_init" : "") +
                         (mta.out_gate != Gate::None
                              ? std::string(mta.group_norm ? ", then " : "") + "gated by σ of a linear map of itself"
                              : "")});
  if (slot.differential)
    parts.push_back({"differential attention (Diff Transformer)", true,
                     "two softmax maps per head, A = P₁ − λ·P₂, each head RMS-normalised and scaled by 1 − λ_init"});
  if (slot.latent.enabled())
    parts.push_back({"multi-head latent attention (DeepSeek MLA)", true,
                     "keys and values from one normalised latent of size " + std::to_string(slot.latent.kv_rank) +
                         " per token, with a rotary key part of size " + std::to_string(slot.latent.rope_dim) +
                         " shared by all heads"});
  // Designs a collaborative layer contains (§8.9), listed after what it equals.
  std::vector<DesignName> contained;
  if (const Collaborative& k = slot.collaborative; k.enabled()) {
    parts.push_back({"collaborative attention (D̃ = " + to_string(k.key_dim) + ")", true,
                     "one query/key space of " + to_string(k.key_dim) + " features shared by the " + to_string(z.H) +
                         " heads, head h reading it through its mixing vector m_h" +
                         (k.content_bias ? ", plus a content bias x_m·w^c_h per head and key" : "")});
    contained.push_back({"THSA with a rectangular core", false,
                         "C[r, s] = m_h(r)[s]: an R x D̃ core whose rows are tied within each head, over a key space "
                         "of its own width"});
    if (static_cast<long long>(z.H) * z.D <= k.key_dim)
      contained.push_back({base, false,
                           "D̃ ≥ H·D: mixing vectors with ones on disjoint blocks of D features (and no content "
                           "bias) give " + base + "'s heads"});
  }
  if (slot.gate != Gate::None)
    parts.push_back({std::string("gated attention (") + (slot.gate == Gate::Headwise ? "headwise" : "elementwise") + ")",
                     true, "each head's output multiplied by σ(x·W^G) before W^O"});
  if (parts.empty()) return {{base, true, baseWhy}};
  std::vector<DesignName> out;
  if (parts.size() == 1 && base == "MHSA") {
    parts.insert(parts.end(), contained.begin(), contained.end());
    return parts;
  }
  std::string combined = base == "MHSA" ? "" : base;
  std::string why;
  for (const auto& p : parts) {
    combined += (combined.empty() ? "" : " + ") + p.name;
    why += (why.empty() ? "" : "; ") + p.why;
  }
  out.push_back({combined, true, why});
  if (base != "MHSA") out.push_back({base, false, baseWhy});
  for (auto p : parts) {
    p.equals = false;
    out.push_back(std::move(p));
  }
  out.insert(out.end(), contained.begin(), contained.end());
  return out;
}

}  // namespace

std::vector<DesignName> nameDesigns(const AttentionSpec& s) {
  switch (s.variant) {
    case Variant::Mhsa:
    case Variant::FixedHead:
    case Variant::Tp: return nameHeaded(s);
    case Variant::Thsa:
    case Variant::ThsaLinear: return nameThsa(s);
    case Variant::Multilinear:
      return {{"multi-linear attention (Tensorized Transformer)", true,
               to_string(s.sizes.P) + " block terms T = Σ_r g_r q_r ⊗ k_r ⊗ v_r, no softmax over keys"}};
    case Variant::Dimwise:
      return {{"dimension-wise attention (TensorCoder)", true,
               "softmax over the d x d feature-pair map qᵀk, not over tokens"}};
  }
  return {{"attention", false, "an unknown variant"}};
}

}  // namespace tensorscope::spec
