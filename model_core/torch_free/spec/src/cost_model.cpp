#include "spec/cost_model.h"

#include "spec/slot_values.h"

#include <algorithm>

namespace tensorscope::spec {
namespace {

constexpr double kSoftmaxFlopsPerElement = 5.0;
constexpr double kEluPlusOneFlopsPerElement = 2.0;
constexpr double kSigmoidFlopsPerElement = 4.0;  // negate, exp, add one, divide

/// Accumulates named terms; each term produces (at most) one kept intermediate tensor.
class CostBuilder {
 public:
  CostBuilder(const AttentionSpec& s, double B, double N) : s_(s), B_(B), N_(N) {}

  void term(std::string name, double flops, double actElements) {
    cost_.terms.push_back({std::move(name), flops, actElements});
  }

  /// x[B, N, in] -> [B, N, out] through an nn.Linear (bias per spec).
  void linear(const std::string& name, double in, double out, bool keep = true) {
    const double rows = B_ * N_;
    term(name, 2 * rows * in * out + (s_.bias ? rows * out : 0), keep ? rows * out : 0);
    params_ += static_cast<std::int64_t>(in * out) + (s_.bias ? static_cast<std::int64_t>(out) : 0);
  }

  void addParams(std::int64_t n) { params_ += n; }
  void addFrozen(std::int64_t n) { frozen_ += n; }

  LayerCost finish(int bytes) {
    cost_.parameters = params_;
    cost_.frozen_parameters = frozen_;
    double act = 0, largest = 0;
    for (const auto& t : cost_.terms) {
      cost_.forward_flops += t.flops;
      act += t.activation_elements;
      largest = std::max(largest, t.activation_elements);
    }
    cost_.training_flops = 3 * cost_.forward_flops;
    cost_.activation_bytes = act * bytes;
    cost_.largest_intermediate_bytes = largest * bytes;
    return cost_;
  }

 private:
  const AttentionSpec& s_;
  double B_, N_;
  std::int64_t params_ = 0, frozen_ = 0;
  LayerCost cost_;
};

/// An H x H talking-heads mixing: its trained entries are parameters, its frozen ones are stored.
void mixingParams(CostBuilder& c, const HeadMixing& m, int H) {
  const std::int64_t trained = mixingTrainableCount(m, H);
  c.addParams(trained);
  c.addFrozen(static_cast<std::int64_t>(H) * H - trained);
}

/// Differential attention (§8.5): 2H maps of size D, H value heads of size 2D.
void differentialAttention(CostBuilder& c, const AttentionSpec& s, double B, double N, double M) {
  const double F = s.sizes.F, H = s.sizes.H, D = s.sizes.D, HD2 = 2 * H * D;
  const double G = s.slots.kv_groups > 0 ? s.slots.kv_groups : H;  // key/value heads
  const std::string shared = s.slots.kv_groups > 0 ? ", " + std::to_string(s.slots.kv_groups) + " shared heads" : "";
  c.linear("q = x·Wqᵀ (two maps per head)", F, HD2);
  c.linear("k = x·Wkᵀ (two maps per head" + shared + ")", F, 2 * G * D);
  c.linear("v = x·Wvᵀ (value heads of size 2D" + shared + ")", F, 2 * G * D);
  c.term("logits q·kᵀ/√D (2H maps)", 2 * B * 2 * H * N * M * D + B * 2 * H * N * M, B * 2 * H * N * M);
  c.term("softmax (2H maps)", kSoftmaxFlopsPerElement * B * 2 * H * N * M, B * 2 * H * N * M);
  c.term("λ = e^(λq1·λk1) − e^(λq2·λk2) + λ_init", 4 * D + 4, 1);
  c.addParams(static_cast<std::int64_t>(4 * D));
  c.term("A = P₁ − λ·P₂", 2 * B * H * N * M, B * H * N * M);
  c.term("o = A·v", 2 * B * H * N * M * 2 * D, B * N * HD2);
  c.term("head RMSNorm · weight · (1 − λ_init)", 5 * B * N * HD2, B * N * HD2);
  c.addParams(static_cast<std::int64_t>(2 * D));
  c.linear("y = o·Woᵀ", HD2, F);
}

/// Multi-head latent attention (§8.6). L = kv_rank, r = rope_dim; the query of a head is D + r
/// wide. An RMSNorm costs 4 flops an element (square and sum, scale, weight); a rotary turn 3 an
/// element (two products and a sum). The naive order forms each head's key and value from the
/// latent; the absorbed order folds W^UK into the queries and W^UV after the softmax, so its logits
/// and its P·c run over the L + r latent features. `M` rows feed the keys (the new token in decode).
void latentAttention(CostBuilder& c, const AttentionSpec& s, double B, double N, double M) {
  const double F = s.sizes.F, H = s.sizes.H, D = s.sizes.D, HD = H * D;
  const Latent& l = s.slots.latent;
  const double L = l.kv_rank, Rq = l.q_rank, r = l.rope_dim, Dq = D + r;
  const bool absorbed = l.order == LatentOrder::Absorbed;
  if (Rq > 0) {
    c.linear("query latent x·Wq_aᵀ", F, Rq);
    c.term("q_norm (RMSNorm)", 4 * B * N * Rq, B * N * Rq);
    c.addParams(static_cast<std::int64_t>(Rq));
    c.linear("q = q_norm(…)·Wq_bᵀ (content D + rotary r per head)", Rq, H * Dq);
  } else {
    c.linear("q = x·Wqᵀ (content D + rotary r per head)", F, H * Dq);
  }
  c.linear("latent and rotary key x·Wkv_aᵀ", F, L + r);
  c.term("kv_norm (RMSNorm) of the latent c", 4 * B * N * L, B * N * L);
  c.addParams(static_cast<std::int64_t>(L));
  if (r > 0) c.term("rotary turns of q_pe and k_pe", 3 * B * N * H * r + 3 * B * N * r, B * N * (H + 1) * r);
  if (!absorbed) {
    c.linear("k_nope, v = c·Wkv_bᵀ (per head)", L, 2 * HD);
    c.term("logits q·kᵀ·(D + r)^-½", 2 * B * H * N * M * Dq + B * H * N * M, B * H * N * M);
    c.term("softmax", kSoftmaxFlopsPerElement * B * H * N * M, B * H * N * M);
    c.term("o = P·v", 2 * B * H * N * M * D, B * N * HD);
  } else {
    c.addParams(static_cast<std::int64_t>(2 * HD * L));  // Wkv_b, used in two halves
    c.term("absorbed query q_nope·W^UK (per head)", 2 * B * N * H * D * L, B * N * H * L);
    c.term("logits [q̃, q_pe]·[c, k_pe]ᵀ·(D + r)^-½", 2 * B * H * N * M * (L + r) + B * H * N * M, B * H * N * M);
    c.term("softmax", kSoftmaxFlopsPerElement * B * H * N * M, B * H * N * M);
    c.term("P·c (the latent as the value)", 2 * B * H * N * M * L, B * N * H * L);
    c.term("o = (P·c)·W^UVᵀ (per head)", 2 * B * N * H * L * D, B * N * HD);
  }
  c.linear("y = o·Woᵀ", HD, F);
}

/// Tensor Product Attention (§8.7). Each of q, k, v (rank R) is made of a head factor A (x·W_Aᵀ,
/// H·R a token; or a constant [H, R] when not contextual) and a feature factor B (x·W_Bᵀ, R·D a token;
/// or a constant [R, D], turned per position),
/// contracted over the rank, 2·H·R·D a token, and divided by R (H·D). The rotary turns the feature
/// factors of q and k (3 flops an element). The queries are made for the N new tokens, the keys and
/// values for the M keys: in decoding, from the cached factors (the cache holds A and the turned B of
/// every earlier token, paper Table 1), so only the new token is projected.
void tpaAttention(CostBuilder& c, const AttentionSpec& s, double B, double N, double M) {
  const double F = s.sizes.F, H = s.sizes.H, D = s.sizes.D, HD = H * D;
  const Tpa& t = s.slots.tpa;
  const double ranks[3] = {double(t.q_rank), double(t.k_rank), double(t.v_rank)};
  const char* names[3] = {"q", "k", "v"};
  if (t.q_rank == 0) {
    c.linear("q = x·Wqᵀ (queries as MHSA)", F, HD);
    if (t.rope) c.term("rotary turn of q", 3 * B * N * HD, B * N * HD);
  }
  for (int i = 0; i < 3; ++i) {
    const double R = ranks[i];
    if (R == 0) continue;
    const std::string v = names[i];
    if (t.contextual_a) {
      c.linear("head factors A_" + v + " = x·W_A_" + v + "ᵀ (R = " + std::to_string(static_cast<int>(R)) + ")", F, H * R);
    } else {
      c.addParams(static_cast<std::int64_t>(H * R));  // the constant head factors a[h, r]
    }
    const double rows = i == 0 ? N : M;
    if (t.contextual_b) {
      c.linear("feature factors B_" + v + " = x·W_B_" + v + "ᵀ", F, R * D);
      if (t.rope && i < 2) c.term("rotary turn of B_" + v, 3 * B * N * R * D, B * N * R * D);
    } else {
      c.addParams(static_cast<std::int64_t>(R * D));  // the constant feature factors b[r, d]
      // Turned by position only: one turn per row, whatever the batch.
      if (t.rope && i < 2) c.term("rotary turn of the constant b_" + v + " per position", 3 * rows * R * D, rows * R * D);
    }
    c.term(v + " = Σ_r A_" + v + "·B_" + v + " / R_" + (i == 0 ? "Q" : i == 1 ? "K" : "V"),
           2 * B * rows * H * R * D + B * rows * HD, B * rows * HD);
  }
  c.term("logits q·kᵀ/√D", 2 * B * H * N * M * D + B * H * N * M, B * H * N * M);
  c.term("softmax", kSoftmaxFlopsPerElement * B * H * N * M, B * H * N * M);
  c.term("o = P·v", 2 * B * H * N * M * D, B * N * HD);
  if (t.group_norm) {
    c.term("head RMSNorm · subln.weight (T6 using_groupnorm)", 4 * B * N * HD, B * N * HD);
    c.addParams(static_cast<std::int64_t>(D));
  }
  c.linear("y = o·Woᵀ", HD, F);
}

/// The output gate of a headed layer (slot d): σ(x·Wgᵀ), one per head or per element, times o.
void outputGate(CostBuilder& c, const AttentionSpec& s, double B, double N) {
  const Slots& slot = s.slots;
  if (slot.gate == Gate::None) return;
  const double F = s.sizes.F, H = s.sizes.H, HD = H * s.sizes.D;
  const double gates = slot.gate == Gate::Headwise ? H : HD;
  c.linear(slot.gate == Gate::Headwise ? "gate g = x·Wgᵀ (one per head)" : "gate g = x·Wgᵀ", F, gates);
  c.term("o ⊙ σ(g)", kSigmoidFlopsPerElement * B * N * gates + B * N * HD, B * N * HD);
}

/// Collaborative attention (§8.9): one shared query/key space of D̃ features (projections without
/// bias), each head's query scaled by its mixing vector, the content bias x·W^cᵀ added per head.
void collaborativeAttention(CostBuilder& c, const AttentionSpec& s, double B, double N, double M) {
  const double F = s.sizes.F, H = s.sizes.H, D = s.sizes.D, HD = H * D;
  const Collaborative& k = s.slots.collaborative;
  const double Dk = k.key_dim;
  c.term("shared queries q̃ = x·Wqᵀ", 2 * B * N * F * Dk, B * N * Dk);
  c.term("shared keys k̃ = x·Wkᵀ", 2 * B * N * F * Dk, B * N * Dk);
  c.addParams(static_cast<std::int64_t>(2 * F * Dk));
  c.linear("v = x·Wvᵀ", F, HD);
  c.term("mixed queries q̃ ⊙ m_h", B * H * N * Dk, B * H * N * Dk);
  c.addParams(static_cast<std::int64_t>(H * Dk));
  if (k.content_bias) {
    c.term("content bias x·W^cᵀ (one per head and key)", 2 * B * N * F * H, B * N * H);
    c.addParams(static_cast<std::int64_t>(F * H));
  }
  c.term(std::string("logits (q̃ ⊙ m_h)·k̃ᵀ") + (k.content_bias ? " + content bias" : "") + ", /√(D̃/H)",
         2 * B * H * N * M * Dk + B * H * N * M * (k.content_bias ? 2 : 1), B * H * N * M);
  c.term("softmax", kSoftmaxFlopsPerElement * B * H * N * M, B * H * N * M);
  c.term("o = P·v", 2 * B * H * N * M * D, B * N * HD);
  outputGate(c, s, B, N);
  c.linear("y = o·Woᵀ", HD, F);
}

void headedAttention(CostBuilder& c, const AttentionSpec& s, double B, double N, double M) {
  if (s.slots.differential) return differentialAttention(c, s, B, N, M);
  if (s.slots.collaborative.enabled()) return collaborativeAttention(c, s, B, N, M);
  if (s.slots.latent.enabled()) return latentAttention(c, s, B, N, M);
  if (s.slots.tpa.enabled()) return tpaAttention(c, s, B, N, M);
  const double F = s.sizes.F, H = s.sizes.H, D = s.sizes.D, HD = H * D;
  const Slots& slot = s.slots;
  const double G = slot.kv_groups > 0 ? slot.kv_groups : H;  // key/value heads
  const std::string groups = slot.kv_groups > 0 ? " (" + std::to_string(slot.kv_groups) + " shared heads)" : "";
  c.linear("q = x·Wqᵀ", F, HD);
  c.linear("k = x·Wkᵀ" + groups, F, G * D);
  c.linear("v = x·Wvᵀ" + groups, F, G * D);
  c.term("logits q·kᵀ/√D", 2 * B * H * N * M * D + B * H * N * M, B * H * N * M);
  // Multi-token attention (§8.8): a depthwise c_q x c_k convolution of each head's map (masked
  // entries zeroed first, a padded copy kept for backward), before and/or after the softmax.
  const Mta& mta = slot.mta;
  const double maps = B * H * N * M;
  auto convolution = [&](const std::string& name, double cq, double ck) {
    c.term(name + " (" + std::to_string(static_cast<long long>(cq)) + " x " + std::to_string(static_cast<long long>(ck)) +
               " per head)",
           maps + 2 * cq * ck * maps, 2 * maps);
    c.addParams(static_cast<std::int64_t>(H * cq * ck));
  };
  if (mta.q_kernel > 0) convolution("key-query convolution", mta.q_kernel, mta.k_kernel);
  if (slot.pre_mix) {
    c.term("pre-softmax head mixing", 2 * B * H * H * N * M, B * H * N * M);
    mixingParams(c, slot.pre_mixing, s.sizes.H);
  }
  c.term("softmax", kSoftmaxFlopsPerElement * B * H * N * M, B * H * N * M);
  if (mta.post_q_kernel > 0) convolution("post-softmax convolution", mta.post_q_kernel, mta.post_k_kernel);
  if (mta.head_group > 0) {
    const double g = mta.head_group;
    c.term("head convolution (groups of " + std::to_string(mta.head_group) + ")", 2 * g * maps, maps);
    c.addParams(static_cast<std::int64_t>(H * g));
  }
  if (slot.post_mix) {
    c.term("post-softmax head mixing", 2 * B * H * H * N * M, B * H * N * M);
    mixingParams(c, slot.post_mixing, s.sizes.H);
  }
  c.term("o = P·v", 2 * B * H * N * M * D, B * N * HD);
  if (mta.group_norm) {
    c.term("head RMSNorm" + std::string(mta.norm_rescale ? " · (1 − λ_init)" : ""), 4 * B * N * HD, B * N * HD);
    c.addParams(static_cast<std::int64_t>(D));
  }
  if (mta.out_gate != Gate::None) {
    const double outs = mta.out_gate == Gate::Headwise ? 1 : D;  // Linear(D, 1) or Linear(D, D), with bias
    c.term(mta.out_gate == Gate::Headwise ? "head gate σ(o_h·w + b)" : "head gate σ(o_h·Wᵀ + b)",
           B * N * H * (2 * D * outs + outs + kSigmoidFlopsPerElement * outs) + B * N * HD, 2 * B * N * HD);
    c.addParams(static_cast<std::int64_t>(D * outs + outs));
  }
  if (s.variant == Variant::Tp) {
    c.linear("roles r = x·Wrᵀ", F, HD);
    c.term("binding o ⊙ r", B * N * HD, B * N * HD);
  }
  outputGate(c, s, B, N);
  c.linear("y = o·Woᵀ", HD, F);
}

bool isIdentity(const CoreFactor& f) { return f.kind == FactorKind::Identity; }

void thsaSoftmax(CostBuilder& c, const AttentionSpec& s, double B, double N, double M) {
  const double F = s.sizes.F, H = s.sizes.H, D = s.sizes.D, R = s.sizes.R;
  const CoreSpec& core = *s.core;
  c.linear("q = x·Wqᵀ", F, R);
  c.linear("k = x·Wkᵀ", F, R);
  c.linear("v = x·Wvᵀ", F, R);
  double maps = R;  // distinct N x M maps that reach the softmax
  if (core.structure == CoreStructure::Dense) {
    c.term("q̃[r,n,s] = C[r,s]·q[n,s]", B * R * N * R, B * R * N * R);
    c.term("logits q̃·kᵀ (batched over r)", 2 * B * R * N * M * R, B * R * N * M);
  } else if (core.structure == CoreStructure::LowRank) {
    const double k = core.rank;
    c.term("q ⊙ V_j", B * k * N * R, B * k * N * R);
    c.term("base maps G_j = (q ⊙ V_j)·kᵀ", 2 * B * k * N * M * R, B * k * N * M);
    c.term("logits_r = Σ_j U[r,j]·G_j", 2 * B * R * k * N * M, B * R * N * M);
  } else {
    switch (core.b.kind) {
      case FactorKind::Ones:
        c.term("per-head q_h·k_hᵀ", 2 * B * H * N * M * D, B * H * N * M);
        maps = H;
        break;
      case FactorKind::Rank1:
        c.term("q ⊙ c₃", B * N * R, B * N * R);
        c.term("per-head (q⊙c₃)_h·k_hᵀ", 2 * B * H * N * M * D, B * H * N * M);
        break;
      case FactorKind::Identity:
        c.term("per-channel q[n,s]·k[m,s]", B * R * N * M, B * R * N * M);
        break;
      case FactorKind::Fixed:
      case FactorKind::Trainable:
        c.term("q̃[h,d,n,d'] = B[d,d']·q[n,h,d']", B * H * D * N * D, B * H * D * N * D);
        c.term("logits q̃·kᵀ (batched over h,d)", 2 * B * H * D * N * M * D, B * R * N * M);
        break;
    }
    if (!isIdentity(core.a)) {
      const double mixed = maps;  // A mixes heads of each kept map
      c.term("head mixing by A", 2 * B * H * mixed * N * M, B * mixed * N * M);
    }
    if (core.b.kind == FactorKind::Rank1) c.term("channel scale c₂[d]", B * R * N * M, B * R * N * M);
  }
  c.term("scale s/√R", B * maps * N * M, 0);
  c.term("softmax", kSoftmaxFlopsPerElement * B * maps * N * M, B * maps * N * M);
  c.term("Ω[n,r] = Σ_m P[r,n,m]·v[m,r]", 2 * B * R * N * M, B * N * R);
  c.linear("y = Ω·Woᵀ", R, F);
}

void thsaLinear(CostBuilder& c, const AttentionSpec& s, double B, double N) {
  const double F = s.sizes.F, R = s.sizes.R;
  c.linear("q = x·Wqᵀ", F, R);
  c.linear("k = x·Wkᵀ", F, R);
  c.linear("v = x·Wvᵀ", F, R);
  c.term("C_r ⊙ q_n", B * N * R * R, B * N * R * R);
  c.term("φ(C_r ⊙ q_n)", kEluPlusOneFlopsPerElement * B * N * R * R, B * N * R * R);
  c.term("φ(k)", kEluPlusOneFlopsPerElement * B * N * R, B * N * R);
  if (s.causal) {
    c.term("φ(k_m)·v_mᵀ", B * N * R * R, B * N * R * R);
    c.term("prefix sums S_n", B * N * R * R, B * N * R * R);
    c.term("prefix sums z_n", B * N * R, B * N * R);
  } else {
    c.term("S = Σ_m φ(k_m)·v_mᵀ", 2 * B * N * R * R, B * R * R);
    c.term("z = Σ_m φ(k_m)", B * N * R, B * R);
  }
  c.term("numerator Σ_s φ·S", 2 * B * N * R * R, B * N * R);
  c.term("denominator Σ_s φ·z", 2 * B * N * R * R, B * N * R);
  c.term("Ω = numerator / denominator", B * N * R, B * N * R);
  c.linear("y = Ω·Woᵀ", R, F);
}

void multilinear(CostBuilder& c, const AttentionSpec& s, double B) {
  const double F = s.sizes.F, R = s.sizes.R, P = s.sizes.P, N = s.sizes.seq_len;
  c.linear("q = x·Wqᵀ", F, R);
  c.linear("k = x·Wkᵀ", F, R);
  c.linear("v = x·Wvᵀ", F, R);
  c.addParams(static_cast<std::int64_t>(P * R));
  c.term(s.core_softmax ? "ḡ = mean_p softmax(g_p)" : "ḡ = mean_p g_p",
         (s.core_softmax ? kSoftmaxFlopsPerElement * P * R : 0) + P * R, R);
  c.term("a = q ⊙ ḡ", B * N * R, B * N * R);
  // The CPU formulation (docs/attention-variants.md §6): T is never formed. Wo is contracted with
  // k and v first, one block of Fb output features at a time; the work tensors of a block
  // ([N, Fb, B, R]) are freed before the next and recomputed in backward, so what is kept for
  // backward is a, k, v (above) and y: linear in N. The CUDA path still forms T (B·N³).
  const double Fb = static_cast<double>(multilinearFeatureBlock(
      static_cast<std::int64_t>(F), static_cast<std::int64_t>(B), static_cast<std::int64_t>(N),
      static_cast<std::int64_t>(R)));
  const double work = N * Fb * B * R;  // one [N, Fb, B, R] work tensor
  if (s.causal) {
    c.term("U_i = Σ_{j<i} Wo[f,j,i]·k_j (per feature block)", B * F * R * N * (N - 1), work);
    c.term("V_i = Σ_{k≤i} Wo[f,i,k]·v_k (per feature block)", B * F * R * N * (N + 1), work);
    c.term("M_i = Σ_{i'≤i} (v ⊙ U + k ⊙ V)_{i'}", 4 * B * F * N * R, work);
  } else {
    c.term("X[j] = Σ_k Wo[f,j,k]·v_k (per feature block)", 2 * B * F * N * N * R, work);
    c.term("M = Σ_j k_j ⊙ X[j]", 2 * B * F * N * R, Fb * B * R);
  }
  c.term("y_i[f] = Σ_r a[i,r]·M_i[f,r]", 2 * B * N * F * R + (s.bias ? B * N * F : 0), B * N * F);
  c.addParams(static_cast<std::int64_t>(N * N * F) + (s.bias ? static_cast<std::int64_t>(F) : 0));
}

void dimwise(CostBuilder& c, const AttentionSpec& s, double B, double N) {
  const double F = s.sizes.F, d = s.sizes.R, C = s.sizes.c;
  c.linear("q = x·Wqᵀ", F, d);
  c.linear("k = x·Wkᵀ", F, d);
  c.linear("v = x·Wvᵀ", F, d);
  c.addParams(static_cast<std::int64_t>(C * d * d));
  if (s.causal) {
    c.term("q_nᵀ·k_n per token", B * N * d * d, B * N * d * d);
    c.term("prefix sums S⁽ⁱ⁾", B * N * d * d, B * N * d * d);
    c.term("scale 1/√i", B * N * d * d, B * N * d * d);
    c.term("softmax", kSoftmaxFlopsPerElement * B * N * d * d, B * N * d * d);
    c.term("f⁽ⁱ⁾[j,m]·v[i,m]", B * N * d * d, B * N * d * d);
    c.term("O_c[i,j] = Σ_m W_c[j,m]·(f⊙v)[i,j,m]", 2 * B * N * C * d * d, B * N * C * d);
  } else {
    c.term("S = qᵀ·k", 2 * B * N * d * d, B * d * d);
    c.term("scale 1/√N", B * d * d, 0);
    c.term("softmax", kSoftmaxFlopsPerElement * B * d * d, B * d * d);
    c.term("W_c ⊙ f(S)", B * C * d * d, B * C * d * d);
    c.term("O_c = v·(W_c ⊙ f)ᵀ", 2 * B * N * C * d * d, B * N * C * d);
  }
  c.linear("y = O·Woᵀ", C * d, F);
}

}  // namespace

LayerCost estimateCost(const AttentionSpec& s, std::int64_t batch, std::int64_t seq, int bytes) {
  const double B = static_cast<double>(batch);
  const double N = s.variant == Variant::Multilinear ? s.sizes.seq_len : static_cast<double>(seq);
  CostBuilder c(s, B, N);
  switch (s.variant) {
    case Variant::Mhsa:
    case Variant::FixedHead:
    case Variant::Tp: headedAttention(c, s, B, N, N); break;
    case Variant::Thsa:
    case Variant::ThsaLinear:
      if (s.variant == Variant::Thsa) thsaSoftmax(c, s, B, N, N);
      else thsaLinear(c, s, B, N);
      if (s.core) {
        const auto& z = s.sizes;
        const std::int64_t trainable = s.core->trainableCount(z.H, z.D, z.R);
        c.addParams(trainable);
        if (s.core->structure == CoreStructure::Dense)
          c.addFrozen(static_cast<std::int64_t>(z.R) * z.R - trainable);
        if (s.core->structure == CoreStructure::LowRank && !s.core->factors_trainable)
          c.addFrozen(2LL * z.R * s.core->rank);
      }
      break;
    case Variant::Multilinear: multilinear(c, s, B); break;
    case Variant::Dimwise: dimwise(c, s, B, N); break;
  }
  return c.finish(bytes);
}

std::int64_t parameterCount(const AttentionSpec& spec) { return estimateCost(spec, 1, 1).parameters; }

DecodeCost estimateDecodeCost(const AttentionSpec& s, std::int64_t cached) {
  DecodeCost d;
  const double K = static_cast<double>(cached) + 1;  // the cache and the new token
  const auto& z = s.sizes;
  const double F = z.F, R = z.R, H = z.H, D = z.D;
  CostBuilder c(s, 1, 1);
  switch (s.variant) {
    case Variant::Mhsa:
    case Variant::FixedHead:
    case Variant::Tp: {
      headedAttention(c, s, 1, 1, K);
      if (s.slots.latent.enabled()) {
        // MLA: the absorbed order caches the normalised latent and the rotary key (L + r a token,
        // whatever H); the naive order each head's key (D + r) and value (D).
        const Latent& l = s.slots.latent;
        const bool absorbed = l.order == LatentOrder::Absorbed;
        d.cache_elements_per_token = absorbed ? l.kv_rank + l.rope_dim : H * (2 * D + l.rope_dim);
        d.note = absorbed ? "the latent (" + std::to_string(l.kv_rank) + ") and the rotary key (" +
                                std::to_string(l.rope_dim) + "), shared by all heads"
                          : "keys (D + rope_dim) and values (D) of " + std::to_string(static_cast<long long>(H)) +
                                " heads, formed from the latent";
        break;
      }
      if (s.slots.tpa.enabled()) {
        // TPA caches the factors of each key and value (paper Table 1): (R_K + R_V)·(H + D) a token
        // with contextual head factors, (R_K + R_V)·D when the head factors are constants.
        const Tpa& t = s.slots.tpa;
        const double R = t.k_rank + t.v_rank;
        // Constant feature factors leave only the head factors: (R_K + R_V)·H (Table 1, "Non-contextual B").
        d.cache_elements_per_token = R * (!t.contextual_b ? H : t.contextual_a ? H + D : D);
        const std::string ranks = std::to_string(t.k_rank) + " key and " + std::to_string(t.v_rank) + " value ranks";
        d.note = !t.contextual_b ? "head factors (H) of " + ranks + " (the feature factors are constants)"
                 : t.contextual_a ? "head factors (H) and turned feature factors (D) of " + ranks
                                  : "feature factors (D) of " + ranks + " (the head factors are constants)";
        break;
      }
      if (s.slots.collaborative.enabled()) {
        // Collaborative attention caches the shared key (D̃), each head's content bias of the key
        // (H numbers, when on) and the H value heads.
        const Collaborative& k = s.slots.collaborative;
        d.cache_elements_per_token = k.key_dim + (k.content_bias ? H : 0) + H * D;
        d.note = "the shared key (" + std::to_string(k.key_dim) + ")" +
                 (k.content_bias ? ", its content bias for each of " + std::to_string(static_cast<long long>(H)) + " heads" : "") +
                 " and the values of " + std::to_string(static_cast<long long>(H)) + " heads";
        break;
      }
      const double G = s.slots.kv_groups > 0 ? s.slots.kv_groups : H;
      if (s.slots.mta.enabled()) {
        // MTA (§8.8): the convolutions over queries read the last c_q − 1 rows of each head's
        // logits (before the softmax) and weights (after it). A row is final once written (its
        // future entries are zero), so each cached token also keeps its entries of those rows.
        const Mta& m = s.slots.mta;
        const double rows = std::max(0, m.q_kernel - 1) + std::max(0, m.post_q_kernel - 1);
        d.cache_elements_per_token = 2 * G * D + rows * H;
        d.note = "keys and values of " + std::to_string(static_cast<long long>(G)) + " heads, and each token's entries of the last " +
                 std::to_string(std::max(0, m.q_kernel - 1)) + " logit rows and " + std::to_string(std::max(0, m.post_q_kernel - 1)) +
                 " weight rows of " + std::to_string(static_cast<long long>(H)) + " heads (the convolutions over queries)";
        break;
      }
      // Differential attention caches two key maps of size D and a value of size 2D per head.
      d.cache_elements_per_token = (s.slots.differential ? 4 : 2) * G * D;
      d.note = s.slots.differential ? "two keys of size D and a value of size 2D for each of " +
                                          std::to_string(static_cast<long long>(G)) + " heads"
                                    : "keys and values of " + std::to_string(static_cast<long long>(G)) + " heads";
      break;
    }
    case Variant::Thsa:
      thsaSoftmax(c, s, 1, 1, K);
      d.cache_elements_per_token = 2 * R;
      d.note = "keys and values of R channels";
      break;
    case Variant::ThsaLinear:
      // The running sums S = Σ φ(k_m)·v_mᵀ and z = Σ φ(k_m) replace the cache (causal form).
      c.linear("q, k, v of the new token", F, 3 * R);
      c.term("φ(C_r ⊙ q), φ(k)", (1 + kEluPlusOneFlopsPerElement) * R * R + kEluPlusOneFlopsPerElement * R, 0);
      c.term("S += φ(k)·vᵀ, z += φ(k)", 2 * R * R + R, 0);
      c.term("numerator and denominator", 4 * R * R + R, 0);
      c.linear("y = Ω·Woᵀ", R, F);
      d.state_elements = R * R + R;
      d.note = "a fixed-size state S (R x R) and z (R): no per-token cache";
      break;
    case Variant::Dimwise: {
      // Causal dimension-wise attention: S⁽ⁱ⁾ = Σ_{n≤i} q_nᵀk_n, one d x d state.
      const double C = z.c;
      c.linear("q, k, v of the new token", F, 3 * R);
      c.term("S += qᵀk", 2 * R * R, 0);
      c.term("scale 1/√i and softmax", (1 + kSoftmaxFlopsPerElement) * R * R, 0);
      c.term("O_c = Σ_m W_c ⊙ f(S) · v", C * (R * R + 2 * R * R), 0);
      c.linear("y = O·Woᵀ", C * R, F);
      d.state_elements = R * R;
      d.note = "a fixed-size state S (d x d): no per-token cache";
      if (!s.causal) {
        d.supported = false;
        d.note = "a non-causal layer: every token sees the whole sequence, so it does not decode token by token";
      }
      break;
    }
    case Variant::Multilinear:
      d.supported = false;
      d.note = "its output projection fixes N = seq_len: it does not decode token by token";
      break;
  }
  if (!s.causal && s.variant != Variant::Multilinear && s.variant != Variant::Dimwise) {
    d.supported = false;
    d.note = "a non-causal layer: every token sees the whole sequence, so it does not decode token by token";
  }
  d.flops = d.supported ? c.finish(4).forward_flops : 0;
  if (!d.supported) d.cache_elements_per_token = d.state_elements = 0;
  return d;
}

}  // namespace tensorscope::spec
