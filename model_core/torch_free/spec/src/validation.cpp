#include "spec/validation.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <string>
#include <tuple>

namespace tensorscope::spec {
namespace {

using std::to_string;

class Collector {
 public:
  void add(std::string field, std::string message) {
    issues_.push_back({std::move(field), std::move(message)});
  }
  std::vector<Issue> take() { return std::move(issues_); }

 private:
  std::vector<Issue> issues_;
};

void checkRange(Collector& c, const char* name, int value, int lo, int hi, const char* meaning) {
  if (value < lo || value > hi)
    c.add(std::string("sizes.") + name, std::string(name) + " (" + meaning + ") must be in [" +
                                            to_string(lo) + ", " + to_string(hi) + "]; got " +
                                            to_string(value));
}

std::string shortNumber(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

bool allFinite(const std::vector<double>& v) {
  for (double x : v)
    if (!std::isfinite(x)) return false;
  return true;
}

// Every model built from a spec runs in float32, so a value beyond ±FLT_MAX (3.4e38) would be
// Inf in the first forward pass, and so would a product of finite values (s·A⊗B, U·Vᵀ) beyond it.
constexpr double kFloat32Max = double(FLT_MAX);

double largestMagnitude(const std::vector<double>& v) {
  double m = 0;
  for (double x : v) m = std::max(m, std::fabs(x));
  return m;
}

void checkFloat32(Collector& c, const std::string& field, const std::vector<double>& v) {
  for (size_t i = 0; i < v.size(); ++i)
    if (std::isfinite(v[i]) && std::fabs(v[i]) > kFloat32Max) {
      c.add(field, "value " + shortNumber(v[i]) + " (index " + to_string(i) +
                       ") is beyond the float32 range (|x| <= 3.4e38) in which models run");
      return;
    }
}

/// The largest |entry| a Kronecker factor can contribute (identity and ones: 1; rank1: max|c2|·max|c3|).
double factorMagnitude(const CoreFactor& f, int dim) {
  switch (f.kind) {
    case FactorKind::Identity:
    case FactorKind::Ones:
      return 1.0;
    case FactorKind::Rank1: {
      const auto half = f.values.begin() + std::min<ptrdiff_t>(dim, ptrdiff_t(f.values.size()));
      return largestMagnitude({f.values.begin(), half}) * largestMagnitude({half, f.values.end()});
    }
    default:
      return largestMagnitude(f.values);
  }
}

void checkFactor(Collector& c, const std::string& field, const CoreFactor& f, int dim, char sym,
                 bool isB) {
  const std::string dims = std::string(1, sym) + "=" + to_string(dim);
  switch (f.kind) {
    case FactorKind::Identity:
    case FactorKind::Ones:
      if (!f.values.empty())
        c.add(field + ".values", "factor kind " + std::string(toString(f.kind)) +
                                     " takes no values; got " + to_string(f.values.size()));
      break;
    case FactorKind::Fixed:
    case FactorKind::Trainable: {
      const size_t need = static_cast<size_t>(dim) * dim;
      if (f.values.size() != need)
        c.add(field + ".values", "factor kind " + std::string(toString(f.kind)) + " needs " +
                                     sym + "x" + sym + " = " + to_string(need) + " values (" + dims +
                                     "); got " + to_string(f.values.size()));
      break;
    }
    case FactorKind::Rank1:
      if (!isB)
        c.add(field + ".kind", "rank1 (c2 c3^T) is a kind for factor B only; A must be identity, "
                               "ones, fixed or trainable");
      else if (f.values.size() != 2 * static_cast<size_t>(dim))
        c.add(field + ".values", "factor kind rank1 needs c2 and c3, 2*D = " + to_string(2 * dim) +
                                     " values (" + dims + "); got " + to_string(f.values.size()));
      break;
  }
  if (!allFinite(f.values)) c.add(field + ".values", "values must be finite numbers (no NaN or Inf)");
  else checkFloat32(c, field + ".values", f.values);
}

// 16777216 -> "16,777,216" (values here are positive).
std::string withCommas(long long v) {
  const std::string digits = to_string(v);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out.push_back(',');
    out.push_back(digits[i]);
  }
  return out;
}

void checkCoreValues(Collector& c, const std::string& field, long long values, const std::string& what) {
  if (values > kMaxCoreValues)
    c.add(field, what + " holds " + withCommas(values) + " values, more than the " + withCommas(kMaxCoreValues) +
                     " a core may hold (a dense core up to R = 4096); use structure kronecker or a smaller low_rank");
}

void checkCore(Collector& c, const AttentionSpec& s) {
  const CoreSpec& core = *s.core;
  const int H = s.sizes.H, D = s.sizes.D, R = s.sizes.R;
  if (core.structure == CoreStructure::LowRank) {
    if (core.rank >= 1 && core.rank <= R)
      checkCoreValues(c, "core.rank", 2LL * R * core.rank, "U and V (R x rank each, R=" + to_string(R) + ", rank=" + to_string(core.rank) + ")");
    if (core.rank < 1 || core.rank > R) {
      c.add("core.rank", "rank must be in [1, R] (R=" + to_string(R) + "); got " + to_string(core.rank));
    } else {
      const size_t need = static_cast<size_t>(R) * core.rank;
      for (const auto& [name, values] : {std::pair{"core.U", &core.u_values}, std::pair{"core.V", &core.v_values}}) {
        if (values->size() != need)
          c.add(name, std::string("structure low_rank needs R*rank = ") + to_string(need) + " values (R=" +
                          to_string(R) + ", rank=" + to_string(core.rank) + "); got " + to_string(values->size()));
        else if (!allFinite(*values))
          c.add(name, "values must be finite numbers (no NaN or Inf)");
        else
          checkFloat32(c, name, *values);
      }
      if (core.u_values.size() == need && core.v_values.size() == need && allFinite(core.u_values) &&
          allFinite(core.v_values)) {
        // |C_ij| = |Σ_k U_ik V_jk| <= Σ_k max_i|U_ik| · max_j|V_jk|
        double bound = 0;
        for (int k = 0; k < core.rank; ++k) {
          double mu = 0, mv = 0;
          for (int i = 0; i < R; ++i) {
            mu = std::max(mu, std::fabs(core.u_values[size_t(i) * core.rank + k]));
            mv = std::max(mv, std::fabs(core.v_values[size_t(i) * core.rank + k]));
          }
          bound += mu * mv;
        }
        if (!(bound <= kFloat32Max))
          c.add("core.U", "entries of C = U·Vᵀ can reach " + shortNumber(bound) +
                              ", beyond the float32 range (3.4e38) in which models run; scale U or V down");
      }
    }
    if (!core.dense_values.empty() || !core.trainable_mask.empty())
      c.add("core.values", "a low_rank core takes its values from U and V; remove 'values'");
  } else if (core.structure == CoreStructure::Kronecker) {
    if (static_cast<long long>(H) * D != R)
      c.add("sizes.R", "core structure kronecker needs R = H*D; got R=" + to_string(R) +
                           ", H=" + to_string(H) + ", D=" + to_string(D));
    if (!std::isfinite(core.scale) || core.scale == 0.0)
      c.add("core.scale", "core scale s must be a finite, non-zero number");
    checkFactor(c, "core.A", core.a, H, 'H', false);
    checkFactor(c, "core.B", core.b, D, 'D', true);
    for (const auto& [field, f, dim] : {std::tuple{"core.A", &core.a, H}, std::tuple{"core.B", &core.b, D}})
      if (f->kind == FactorKind::Fixed || f->kind == FactorKind::Trainable)
        checkCoreValues(c, std::string(field) + ".kind", static_cast<long long>(dim) * dim,
                        "a " + std::string(toString(f->kind)) + " factor (" + to_string(dim) + " x " + to_string(dim) + ")");
    if (std::isfinite(core.scale) && allFinite(core.a.values) && allFinite(core.b.values)) {
      const double largest = std::fabs(core.scale) * factorMagnitude(core.a, H) * factorMagnitude(core.b, D);
      if (!(largest <= kFloat32Max))
        c.add("core.scale", "entries of C = s·(A⊗B) reach " + shortNumber(largest) + " (s=" + shortNumber(core.scale) +
                                "), beyond the float32 range (3.4e38) in which models run");
    }
    if (!core.dense_values.empty() || !core.trainable_mask.empty())
      c.add("core.values", "a kronecker core takes its values from its factors A and B; remove "
                           "'values' and 'trainable', or use structure dense");
  } else {
    const size_t need = static_cast<size_t>(R) * R;
    checkCoreValues(c, "sizes.R", static_cast<long long>(R) * R, "a dense core (R x R, R=" + to_string(R) + ")");
    if (core.dense_values.size() != need)
      c.add("core.values", "core structure dense needs R*R = " + to_string(need) +
                               " values (R=" + to_string(R) + "); got " +
                               to_string(core.dense_values.size()));
    else if (!allFinite(core.dense_values))
      c.add("core.values", "values must be finite numbers (no NaN or Inf)");
    else
      checkFloat32(c, "core.values", core.dense_values);
    if (core.trainable_mask.size() != need)
      c.add("core.trainable", "core structure dense needs an R*R = " + to_string(need) +
                                  " trainable mask (R=" + to_string(R) + "); got " +
                                  to_string(core.trainable_mask.size()));
  }
  const std::string& p = core.preset;
  if (p != "custom" && !isCorePreset(p))
    c.add("core.preset", "unknown core preset '" + p + "'; use a preset name or \"custom\"");
  if (p == "low_rank" && core.structure == CoreStructure::LowRank && core.rank != H)
    c.add("core.rank", "core preset low_rank has rank H=" + to_string(H) + "; got " + to_string(core.rank) +
                           " (a different rank is preset \"custom\")");
  if ((p == "heads_only" || p == "trainable_heads_only") && D != 1)
    c.add("sizes.D", "core preset " + p + " needs D = 1 (one latent dimension per head); got D=" +
                         to_string(D));
}

}  // namespace

static void checkSizes(Collector& c, Variant v, const Sizes& z) {
  checkRange(c, "F", z.F, 1, kMaxWidth, "model width");
  checkRange(c, "seq_len", z.seq_len, 1, kMaxSeqLen, "tokens");
  const bool headed = v == Variant::Mhsa || v == Variant::FixedHead || v == Variant::Tp;
  if (headed || hasCore(v)) {
    checkRange(c, "H", z.H, 1, kMaxHeads, "heads");
    checkRange(c, "D", z.D, 1, kMaxWidth, "head size");
  }
  if (hasCore(v) || v == Variant::Multilinear || v == Variant::Dimwise)
    checkRange(c, "R", z.R, 1, kMaxWidth, v == Variant::Dimwise ? "projection width d" : "rank");
  if (v == Variant::Multilinear) checkRange(c, "P", z.P, 1, kMaxBlockTerms, "block terms");
  if (v == Variant::Dimwise) checkRange(c, "c", z.c, 1, kMaxFilters, "filters");
  if (headed && static_cast<long long>(z.H) * z.D > kMaxWidth)
    c.add("sizes.D", "H*D must be at most " + to_string(kMaxWidth) + "; got H*D=" +
                         to_string(static_cast<long long>(z.H) * z.D));
}

std::vector<Issue> coreSizeIssues(CoreStructure structure, int R, int rank) {
  Collector c;
  if (structure == CoreStructure::Dense)
    checkCoreValues(c, "sizes.R", static_cast<long long>(R) * R, "a dense core (R x R, R=" + to_string(R) + ")");
  else if (structure == CoreStructure::LowRank)
    checkCoreValues(c, "core.rank", 2LL * R * rank,
                    "U and V (R x rank each, R=" + to_string(R) + ", rank=" + to_string(rank) + ")");
  return c.take();
}

std::vector<Issue> corePresetIssues(std::string_view preset, const Sizes& z) {
  Collector c;
  checkRange(c, "H", z.H, 1, kMaxHeads, "heads");
  checkRange(c, "D", z.D, 1, kMaxWidth, "head size");
  const long long R = static_cast<long long>(z.H) * z.D;
  if (R > kMaxWidth)
    c.add("sizes.D", "core preset " + std::string(preset) + " has R = H*D, at most " + to_string(kMaxWidth) +
                         "; got H*D=" + to_string(R));
  else if (z.H >= 1 && z.D >= 1 && preset == "thsa")
    checkCoreValues(c, "sizes.R", R * R, "core preset thsa (dense R x R, R=H*D=" + to_string(R) + ")");
  else if (z.H >= 1 && z.D >= 1 && preset == "low_rank")
    checkCoreValues(c, "sizes.R", 2 * R * z.H, "core preset low_rank (U and V, R x H each, R=H*D=" + to_string(R) + ")");
  return c.take();
}

/// Multi-token attention (§8.8; RAM projects/mta/mta_transformer.py, class Attention, L200–284).
/// Every problem is reported, each on its own field.
static void checkMta(Collector& c, const AttentionSpec& s) {
  const Slots& q = s.slots;
  const Mta& m = q.mta;
  const int H = s.sizes.H;
  // A kernel larger than this covers more offsets than a convolution of attention logits is meant
  // to (the paper's largest is 6 x 11); it also bounds the parameter count.
  constexpr int kMaxMtaKernel = 256;
  auto kernel = [&](const char* qField, const char* kField, int cq, int ck, const char* what) {
    const std::string qf = std::string("slots.mta.") + qField, kf = std::string("slots.mta.") + kField;
    if (cq < 0 || cq > kMaxMtaKernel)
      c.add(qf, std::string(what) + " query kernel size must be 0 (no convolution) or from 1 to " +
                    to_string(kMaxMtaKernel) + "; got " + to_string(cq));
    if (ck < 0 || ck > kMaxMtaKernel)
      c.add(kf, std::string(what) + " key kernel size must be 0 (no convolution) or from 1 to " +
                    to_string(kMaxMtaKernel) + "; got " + to_string(ck));
    if ((cq == 0) != (ck == 0))
      c.add(qf, std::string(what) + " convolution needs both kernel sizes (the official kernel is built only when "
                    "both are given); got " + qField + " = " + to_string(cq) + ", " + kField + " = " + to_string(ck));
    else if (ck > 0 && m.pad == MtaPad::Both && ck % 2 == 0)
      c.add(kf, std::string(what) + " key kernel size must be odd with pad 'both' ((c_k - 1)/2 keys each side); got " +
                    to_string(ck) + " (or set pad to left or right)");
  };
  kernel("q_kernel", "k_kernel", m.q_kernel, m.k_kernel, "the pre-softmax");
  kernel("post_q_kernel", "post_k_kernel", m.post_q_kernel, m.post_k_kernel, "the post-softmax");
  if (m.head_group < 0 || m.head_group > kMaxHeads)
    c.add("slots.mta.head_group", "head_group (head_kernel_size) must be 0 (no head convolution) or a group size from 1 "
                                  "to H; got " + to_string(m.head_group));
  else if (m.head_group > 0 && H >= 1 && (m.head_group > H || H % m.head_group != 0))
    c.add("slots.mta.head_group", "head_group must divide H=" + to_string(H) +
                                      " (the heads are mixed in H/head_group groups); got " + to_string(m.head_group));
  if (m.head_group > 0 && q.post_mix)
    c.add("slots.mta.head_group", "the head convolution and post_mix are two post-softmax head mixings; the official "
                                  "code refuses both at once (mta_transformer.py L242-245): set head_group 0 or post_mix false");
  if (m.norm_rescale && !m.group_norm)
    c.add("slots.mta.norm_rescale", "norm_rescale scales the head norm by 1 - lambda_init; set group_norm to true");
  if (q.differential || q.latent.enabled() || q.tpa.enabled())
    c.add("slots.mta", "multi-token attention convolves one map per head of MHSA's logits; it takes no differential, "
                       "latent or tpa slot (kv_groups, pre_mix and post_mix it takes)");
  if (q.gate != Gate::None)
    c.add("slots.gate", "multi-token attention gates each head from its own normalised output (slots.mta.out_gate, "
                        "the official add_gating), not from x; set gate to none");
}

/// The values drawn into the slots (spec/slot_values.h): a mixing's values and mask only with its
/// mixing on, H·H each, finite, mask entries 0 or 1; an MTA kernel's values only with its
/// convolution on, H·c_q·c_k of them, finite.
static void checkSlotValues(Collector& c, const AttentionSpec& s) {
  const Slots& q = s.slots;
  const long long hh = static_cast<long long>(s.sizes.H) * s.sizes.H;
  auto mixing = [&](const HeadMixing& m, bool on, const char* field, const char* flag) {
    if (m.isDefault()) return;
    const std::string f = std::string("slots.") + field;
    if (!on) {
      c.add(f, std::string(field) + " gives the starting values of a mixing that is off; set " + flag +
                   " to true or remove " + field);
      return;
    }
    if (static_cast<long long>(m.values.size()) != hh)
      c.add(f + ".values", "must be H x H = " + to_string(hh) + " values (one row per head it writes to); got " +
                               to_string(m.values.size()));
    else if (!allFinite(m.values))
      c.add(f + ".values", "values must be finite numbers");
    else
      checkFloat32(c, f + ".values", m.values);
    if (static_cast<long long>(m.trainable_mask.size()) != hh)
      c.add(f + ".trainable", "must be H x H = " + to_string(hh) + " entries; got " + to_string(m.trainable_mask.size()));
    else if (std::any_of(m.trainable_mask.begin(), m.trainable_mask.end(), [](unsigned char t) { return t > 1; }))
      c.add(f + ".trainable", "mask entries must be 0 (frozen) or 1 (trainable)");
  };
  mixing(q.pre_mixing, q.pre_mix, "pre_mixing", "pre_mix");
  mixing(q.post_mixing, q.post_mix, "post_mixing", "post_mix");
  auto kernel = [&](const std::vector<double>& values, int cq, int ck, const char* field, const char* what) {
    if (values.empty()) return;
    const std::string f = std::string("slots.mta.") + field;
    if (cq <= 0 || ck <= 0) {
      c.add(f, std::string("gives the starting values of the ") + what + " convolution, which is off; remove " + field);
      return;
    }
    const long long want = static_cast<long long>(s.sizes.H) * cq * ck;
    if (static_cast<long long>(values.size()) != want)
      c.add(f, "must be H x c_q x c_k = " + to_string(s.sizes.H) + " x " + to_string(cq) + " x " + to_string(ck) + " = " +
                   to_string(want) + " values; got " + to_string(values.size()));
    else if (!allFinite(values))
      c.add(f, "values must be finite numbers");
    else
      checkFloat32(c, f, values);
  };
  kernel(q.mta.kernel_values, q.mta.q_kernel, q.mta.k_kernel, "kernel", "pre-softmax");
  kernel(q.mta.post_kernel_values, q.mta.post_q_kernel, q.mta.post_k_kernel, "post_kernel", "post-softmax");
}

std::vector<Issue> validate(const AttentionSpec& s) {
  Collector c;
  const Sizes& z = s.sizes;
  const Variant v = s.variant;
  checkSizes(c, v, z);
  if (!(s.dropout >= 0.0 && s.dropout < 1.0))
    c.add("dropout", "dropout must be in [0, 1); got " + shortNumber(s.dropout));
  else if (s.dropout > 0.0 && (v == Variant::ThsaLinear || v == Variant::Multilinear))
    c.add("dropout", std::string("dropout acts on attention probabilities, which ") +
                         std::string(toString(v)) + " does not form; set dropout to 0");
  if (!s.slots.isMhsa()) {
    const Slots& q = s.slots;
    if (!hasSlots(v)) {
      c.add("slots", "variant " + std::string(toString(v)) +
                         " has no slots; kv_groups, pre_mix, post_mix, gate, differential, latent, tpa, mta and collaborative belong to "
                         "mhsa and fixed_head");
    } else if (q.kv_groups < 0 || q.kv_groups > kMaxHeads) {
      c.add("slots.kv_groups", "kv_groups must be 0 (a key and value head per query head) or a number of groups "
                               "from 1 to H; got " + to_string(q.kv_groups));
    } else if (q.kv_groups > 0 && z.H >= 1 && (q.kv_groups > z.H || z.H % q.kv_groups != 0)) {
      c.add("slots.kv_groups", "kv_groups must divide H=" + to_string(z.H) + " (each group serves H/G query heads); got " +
                                   to_string(q.kv_groups));
    }
    if (hasSlots(v) && q.differential) {
      // Differential attention is its own post-softmax mixing (A₁ − λ·A₂) with its own head norm;
      // combined with the other slots it would be a design nobody has published or checked.
      if (q.pre_mix || q.post_mix)
        c.add("slots.differential", "differential attention mixes its two maps itself; it cannot take the talking-heads "
                                    "mixings (set pre_mix and post_mix to false)");
      if (q.gate != Gate::None)
        c.add("slots.differential", "differential attention with an output gate is not supported; set gate to none");
    }
    if (hasSlots(v) && q.latent.enabled()) {
      // Multi-head latent attention (§8.6) brings its own keys and values (one latent, a shared
      // rotary key): the other slots would combine it with designs nobody has published or checked.
      const Latent& l = q.latent;
      if (l.kv_rank < 1 || l.kv_rank > kMaxWidth)
        c.add("slots.latent.kv_rank", "kv_rank (the latent size, kv_lora_rank) must be from 1 to " + to_string(kMaxWidth) +
                                          "; got " + to_string(l.kv_rank));
      if (l.q_rank < 0 || l.q_rank > kMaxWidth)
        c.add("slots.latent.q_rank", "q_rank must be 0 (a full W^Q) or a query latent size from 1 to " +
                                         to_string(kMaxWidth) + "; got " + to_string(l.q_rank));
      if (l.rope_dim < 0 || l.rope_dim > kMaxWidth || l.rope_dim % 2 != 0)
        c.add("slots.latent.rope_dim", "rope_dim (the rotary part, qk_rope_head_dim) must be even (rotary turns pairs) "
                                           "and from 0 to " + to_string(kMaxWidth) + "; got " + to_string(l.rope_dim));
      else if (static_cast<long long>(z.H) * (z.D + l.rope_dim) > kMaxWidth)
        c.add("slots.latent.rope_dim", "the queries H*(D+rope_dim) may be at most " + to_string(kMaxWidth) + " wide; got " +
                                           to_string(static_cast<long long>(z.H) * (z.D + l.rope_dim)));
      if (q.kv_groups > 0 || q.pre_mix || q.post_mix || q.gate != Gate::None || q.differential)
        c.add("slots.latent", "multi-head latent attention takes no other slot (its latent is already one shared key/value "
                              "source); set kv_groups 0, pre_mix and post_mix false, gate none, differential false");
      if (s.bias)
        c.add("bias", "multi-head latent attention has no biases (DeepSeek-V3's projections have none); set bias to false");
    }
    if (hasSlots(v) && q.tpa.enabled()) {
      // Tensor Product Attention (§8.7) makes its own queries, keys and values from factors; the
      // other slots would combine it with designs nobody has published or checked.
      const Tpa& t = q.tpa;
      auto rank = [&](const char* field, const char* what, int r, int lo) {
        if (r < lo || r > kMaxWidth)
          c.add(std::string("slots.tpa.") + field, std::string(what) + " must be " +
                    (lo == 0 ? "0 (queries as MHSA, T6_kvonly) or " : "") + "from 1 to " + to_string(kMaxWidth) +
                    "; got " + to_string(r));
        else if (r > 0 && static_cast<long long>(r) * std::max(z.H, z.D) > kMaxWidth)
          c.add(std::string("slots.tpa.") + field, std::string(what) + " times max(H, D) (the factor widths R*H and R*D) "
                    "may be at most " + to_string(kMaxWidth) + "; got " + to_string(static_cast<long long>(r) * std::max(z.H, z.D)));
      };
      rank("q_rank", "q_rank (R_Q, the query rank)", t.q_rank, 0);
      rank("k_rank", "k_rank (R_K, the key rank)", t.k_rank, 1);
      rank("v_rank", "v_rank (R_V, the value rank)", t.v_rank, 1);
      if (!t.contextual_a && !t.contextual_b)
        c.add("slots.tpa.contextual_b", "with constant head factors (contextual_a false) the feature factors must be "
                                        "contextual: with both constant the keys and values would not depend on the "
                                        "token; set contextual_a or contextual_b to true");
      if (t.rope && z.D % 2 != 0)
        c.add("slots.tpa.rope", "the rotary turns pairs of the feature factor (T6 pairs d with d + D/2), so D must be "
                                "even; got D = " + to_string(z.D) + " (or set rope to false)");
      if (t.rope && !(t.rope_base > 1.0 && t.rope_base <= 1e9))
        c.add("slots.tpa.rope_base", "rope_base must be above 1 and at most 1e9; got " + std::to_string(t.rope_base));
      if (q.kv_groups > 0 || q.pre_mix || q.post_mix || q.gate != Gate::None || q.differential || q.latent.enabled())
        c.add("slots.tpa", "tensor product attention takes no other slot (its factors already tie the heads); set "
                           "kv_groups 0, pre_mix and post_mix false, gate none, differential false and no latent");
      if (s.bias)
        c.add("bias", "tensor product attention has no biases (T6's projections have none); set bias to false");
    }
    if (hasSlots(v)) checkSlotValues(c, s);
    if (hasSlots(v) && q.mta.enabled()) checkMta(c, s);
    if (hasSlots(v) && q.collaborative.enabled()) {
      // Collaborative attention (§8.9) shares one key space among the heads itself; the output gate
      // acts after it and is allowed, the other slots would combine it with unpublished designs.
      const Collaborative& k = q.collaborative;
      if (k.key_dim < 1 || k.key_dim > kMaxWidth)
        c.add("slots.collaborative.key_dim", "key_dim (D~, the width of the shared query/key space, dim_key_query_all) "
                                             "must be from 1 to " + to_string(kMaxWidth) + "; got " + to_string(k.key_dim));
      if (q.kv_groups > 0 || q.pre_mix || q.post_mix || q.differential || q.latent.enabled() || q.tpa.enabled() ||
          q.mta.enabled())
        c.add("slots.collaborative", "collaborative attention already shares its key space among the heads; it takes "
                                     "no kv_groups, pre_mix, post_mix, differential, latent, tpa or mta slot (gate it takes)");
    }
  }
  if (hasCore(v)) {
    if (!s.core)
      c.add("core", "variant " + std::string(toString(v)) +
                        " needs a core; give \"core\": {\"preset\": \"thsa\"} or a custom core");
    else
      checkCore(c, s);
  } else if (s.core) {
    c.add("core", "variant " + std::string(toString(v)) +
                      " has no core matrix C; remove \"core\" or use thsa / thsa_linear");
  }
  return c.take();
}

std::string formatIssues(const std::vector<Issue>& issues) {
  std::string out;
  for (const auto& i : issues) {
    if (!out.empty()) out += '\n';
    out += i.field + ": " + i.message;
  }
  return out;
}

}  // namespace tensorscope::spec
