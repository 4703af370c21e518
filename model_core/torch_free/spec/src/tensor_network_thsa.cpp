// Tensor networks of thsa and thsa_linear (docs/attention-variants.md §§3, 4; Tuformer Figs. 4, 5, 10).
#include <cmath>

#include "tensor_network_builder.h"

namespace tensorscope::spec::detail {
namespace {

bool trivial(FactorKind k) { return k == FactorKind::Identity || k == FactorKind::Ones; }

std::string factorText(FactorKind k, const char* dim) {
  switch (k) {
    case FactorKind::Identity: return std::string("I_") + dim;
    case FactorKind::Ones: return "1·1ᵀ";
    case FactorKind::Fixed: return *dim == 'H' ? "A (fixed)" : "B (fixed)";
    case FactorKind::Trainable: return *dim == 'H' ? "A" : "B";
    case FactorKind::Rank1: return "c₂c₃ᵀ";
  }
  return {};
}

std::string coreTitle(const AttentionSpec& s) {
  const CoreSpec& c = *s.core;
  const std::string name = c.preset == "custom" ? "custom" : c.preset;
  if (c.structure == CoreStructure::Dense) return "THSA, " + name + " core: dense C [R, R]";
  if (c.structure == CoreStructure::LowRank)
    return "THSA, " + name + " core: low rank C = U·Vᵀ, ρ = " + std::to_string(c.rank);
  const double sqrtH = std::sqrt(static_cast<double>(s.sizes.H));
  std::string scale = c.scale == 1.0 ? "" : std::abs(c.scale - sqrtH) <= 1e-12 * sqrtH ? "√H·" : formatNumber(c.scale) + "·";
  const std::string kron = factorText(c.a.kind, "H") + " ⊗ " + factorText(c.b.kind, "D");
  return "THSA, " + name + " core C = " + (scale.empty() ? kron : scale + "(" + kron + ")");
}

/// Projections q, k, v shared by both THSA layers; `query`/`value` are W^Q's/W^V's channel legs.
void thsaProjections(NetworkBuilder& b, std::int64_t N, const std::vector<Leg>& query, const std::vector<Leg>& value) {
  const int F = b.spec().sizes.F;
  auto view = [](const std::vector<Leg>& legs) {
    if (legs.size() == 1 && legs[0].symbol == "R") return std::string("[R, F]");
    std::string s;
    for (const auto& l : legs) s += l.symbol + ", ";
    return "[R, F] viewed [" + s + "F]";
  };
  b.projection({"q", "x_q", "X^Q", "Input X as the query copy X^Q [N, F] (eq. 3a); its N leg is the output's N.",
                leg('n', "N", N), leg('f', "F", F), "Wq", "W^Q",
                "Query weights W^Q (wq.weight " + view(query) + "): Q = X·W^Q (eq. 3a); its channel legs meet C's column legs s (the channel Q and K share).",
                "wq", query, "queries Q [N, R]"});
  b.projection({"k", "x_k", "X^K", "Input X as the key copy X^K [M, F] (eq. 3a); the normalisation runs over its M leg.",
                leg('m', "M", N), leg('g', "F", F), "Wk", "W^K",
                "Key weights W^K (wk.weight " + view(query) + "): K = X·W^K; it meets C's column legs s, as W^Q does.",
                "wk", query, "keys K [M, R]"});
  b.projection({"v", "x_v", "X^V", "Input X as the value copy X^V [M, F] (eq. 3a); its M leg meets the attention weights'.",
                leg('m', "M", N), leg('u', "F", F), "Wv", "W^V",
                "Value weights W^V (wv.weight " + view(value) + "): V = X·W^V; channel r of V feeds Ω_r (eq. 3b), C's row leg r.",
                "wv", value, "values V [M, R]"});
}

std::vector<std::string> withBiases(const NetworkBuilder& b, std::vector<std::string> nodes) {
  for (const char* w : {"Wq", "Wk"})
    if (const auto bias = b.biasOf(w); !bias.empty()) nodes.push_back(bias);
  return nodes;
}

constexpr const char* kThsaEquation =
    "Ω_r = softmax_M(Σ_s C[r,s]·Q_s·K_sᵀ / √R)·V_r,  Q = X W^Q, K = X W^K, V = X W^V;  y = Ω W^O  (Tuformer eq. 3)";

}  // namespace

TensorNetwork buildThsaNetwork(const AttentionSpec& s, std::int64_t N) {
  const auto& z = s.sizes;
  const CoreSpec& core = *s.core;
  NetworkBuilder b(s, coreTitle(s), kThsaEquation);
  const Leg fo = leg('o', "F", z.F);
  const double invSqrtR = 1.0 / std::sqrt(static_cast<double>(z.R));
  SoftmaxBox box;
  box.id = "attn";
  box.normalized = 'm';
  box.query = 'n';
  box.causal = s.causal;
  box.label = "softmax";
  box.role = std::string("One softmax per channel r over M of Σ_s C[r,s]·Q_s·K_sᵀ·α (eq. 3b); dense C keeps R maps of "
                         "N×M (memory M·N·R, §4.3)") + (s.causal ? "; causal: key m > query n gets -inf first." : ".");

  if (core.structure == CoreStructure::Dense) {
    const Leg r = leg('r', "R", z.R), sq = leg('s', "R", z.R);
    thsaProjections(b, N, {sq}, {r});
    b.weight("C", "C", NodeKind::Core, "core",
             "Core C (core [R, R]) between the query and key legs: logits_r = Σ_s C[r,s]·Q_s·K_sᵀ (eq. 3b); s joins "
             "W^Q and W^K, r joins W^V and W^O. " + std::to_string(core.trainableCount(z.H, z.D, z.R)) +
                 " of its R² entries are trained.",
             {r, sq}, core.trainableCount(z.H, z.D, z.R));
    box.nodes = withBiases(b, {"x_q", "Wq", "x_k", "Wk", "C"});
    box.scale = invSqrtR;
    box.scale_label = "1/√R";
    b.box(box);
    b.step({"qt", {"C", "q"}, "rs,bns->brns", PlanStep::Op::None, "", 1.0, {}, 0, "q̃[r,n,s] = C[r,s]·Q[n,s]"});
    b.step({"P", {"qt", "k"}, "brns,bms->brnm", PlanStep::Op::Softmax, "attn", 1.0, {}, 0,
            "attention weights P_r = softmax(Σ_s q̃_r·K_sᵀ/√R) [R, N, M]"});
    b.step({"omega", {"P", "v"}, "brnm,bmr->bnr", PlanStep::Op::None, "", 1.0, {}, 0, "Ω_r = P_r·V_r [N, R]"});
    b.outputProjection("omega", leg('n', "N", N), {r}, fo, "Ω·W^O (eq. 3c)");
    return b.take("P", {z.R, N, N});
  }

  if (core.structure == CoreStructure::LowRank) {
    // C = U·Vᵀ contracted through its factors (docs/attention-variants.md §3, wave 2): ρ base maps G_j, mixed by U.
    const Leg r = leg('r', "R", z.R), sq = leg('s', "R", z.R), j = leg('j', "ρ", core.rank);
    thsaProjections(b, N, {sq}, {r});
    const std::int64_t p = core.factors_trainable ? std::int64_t(z.R) * core.rank : 0;
    const std::string low = "Factor of the low-rank core C = U·Vᵀ (ρ = " + std::to_string(core.rank) + "); ";
    b.weight("U", "U", NodeKind::Core, "core.U",
             low + "U (core.U [R, ρ]) mixes the ρ base maps into channel r's logits: Σ_j U[r,j]·G_j" +
                 (core.factors_trainable ? "; trained." : "; fixed."),
             {r, j}, p);
    b.weight("V", "V", NodeKind::Core, "core.V",
             low + "V (core.V [R, ρ]) weights the query-key contraction of base map j: G_j = Σ_s V[s,j]·Q_s·K_sᵀ" +
                 (core.factors_trainable ? "; trained." : "; fixed."),
             {sq, j}, p);
    box.nodes = withBiases(b, {"x_q", "Wq", "x_k", "Wk", "V", "U"});
    box.scale = invSqrtR;
    box.scale_label = "1/√R";
    b.box(box);
    b.step({"qv", {"V", "q"}, "sj,bns->bjns", PlanStep::Op::None, "", 1.0, {}, 0, "Q ⊙ V_j for each base map j"});
    b.step({"G", {"qv", "k"}, "bjns,bms->bjnm", PlanStep::Op::None, "", 1.0, {}, 0,
            "base maps G_j = Σ_s V[s,j]·Q_s·K_sᵀ [ρ, N, M]"});
    b.step({"P", {"U", "G"}, "rj,bjnm->brnm", PlanStep::Op::Softmax, "attn", 1.0, {}, 0,
            "attention weights P_r = softmax(Σ_j U[r,j]·G_j/√R) [R, N, M]"});
    b.step({"omega", {"P", "v"}, "brnm,bmr->bnr", PlanStep::Op::None, "", 1.0, {}, 0, "Ω_r = P_r·V_r [N, R]"});
    b.outputProjection("omega", leg('n', "N", N), {r}, fo, "Ω·W^O (eq. 3c)");
    return b.take("P", {z.R, N, N});
  }

  // Kronecker core s·(A ⊗ B): value-side channel legs (h, d), query-side (i, j); see tensor_network.h.
  const FactorKind ka = core.a.kind, kb = core.b.kind;
  const bool dropH = z.H == 1 && trivial(ka), dropD = z.D == 1 && trivial(kb);
  const bool merged = !dropH && !dropD && ka == kb && trivial(ka);
  std::vector<Leg> value, query;
  if (merged) {
    value = {leg('r', "R", z.R)};
    query = {ka == FactorKind::Identity ? value[0] : leg('s', "R", z.R)};
  } else {
    const Leg h = leg('h', "H", z.H), d = leg('d', "D", z.D);
    if (!dropH) {
      value.push_back(h);
      query.push_back(ka == FactorKind::Identity ? h : leg('i', "H", z.H));
    }
    if (!dropD) {
      value.push_back(d);
      query.push_back(kb == FactorKind::Identity ? d : leg('j', "D", z.D));
    }
  }
  thsaProjections(b, N, query, value);

  const std::string factor = "Factor of C = s·(A ⊗ B), C[(h,d),(h',d')] = s·A[h,h']·B[d,d'] (Tuformer Fig. 4c); ";
  const bool nodeA = !trivial(ka), nodeB = kb == FactorKind::Fixed || kb == FactorKind::Trainable;
  const bool rank1 = kb == FactorKind::Rank1;
  std::vector<std::string> inBox{"x_q", "Wq", "x_k", "Wk"};
  if (nodeA) {
    b.weight("A", "A", NodeKind::Core, "core.A",
             factor + "A (core.A [H, H]) mixes the heads' maps: head h uses Σ_h' A[h,h']·Q_h'K_h'ᵀ" +
                 (ka == FactorKind::Trainable ? "; trained." : "; fixed values."),
             {value[0], query[0]}, ka == FactorKind::Trainable ? std::int64_t(z.H) * z.H : 0);
    inBox.push_back("A");
  }
  // The channel legs B and c₂, c₃ act on. Both lists are empty when H = D = 1 with trivial factors
  // (then neither B nor c₂, c₃ is drawn): back() on them was undefined behaviour (UBSan).
  const Leg dv = value.empty() ? Leg{} : value.back();
  const Leg dq = query.empty() ? Leg{} : query.back();
  if (nodeB) {
    b.weight("B", "B", NodeKind::Core, "core.B",
             factor + "B (core.B [D, D]) joins the query/key latent leg d' to channel d" +
                 (kb == FactorKind::Trainable ? "; trained." : "; fixed values."),
             {dv, dq}, kb == FactorKind::Trainable ? std::int64_t(z.D) * z.D : 0);
    inBox.push_back("B");
  }
  if (rank1) {
    const std::int64_t p = core.b.trainable_rank1 ? z.D : 0;
    b.weight("c2", "c₂", NodeKind::Core, "core.c2",
             factor + "rank-1 B = c₂c₃ᵀ; c₂ (core.c2 [D]) scales channel d's logits (value side).", {dv}, p);
    b.weight("c3", "c₃", NodeKind::Core, "core.c3",
             factor + "rank-1 B = c₂c₃ᵀ; c₃ (core.c3 [D]) weights the latent contraction of W^Q and W^K.", {dq}, p);
    inBox.push_back("c3");
    inBox.push_back("c2");
  }
  box.nodes = withBiases(b, inBox);
  box.scale = core.scale * invSqrtR;
  const double sqrtH = std::sqrt(static_cast<double>(z.H));
  box.scale_label = core.scale == 1.0                               ? "1/√R"
                    : std::abs(core.scale - sqrtH) <= 1e-12 * sqrtH ? "√H/√R = 1/√D"
                                                                    : "s/√R, s = " + formatNumber(core.scale);
  b.box(box);

  // Logits, contracted through the factors in the module's order: c₃ on q, B, q·k, A, c₂.
  const std::string Q = letters(query), V = letters(value);
  std::vector<PlanStep> steps;
  std::string qIn = "q", qSubs = "bn" + Q;
  if (rank1) {
    steps.push_back({"qc", {"q", "c3"}, qSubs + "," + dq.index + "->" + qSubs, PlanStep::Op::None, "", 1.0, {}, 0,
                     "Q ⊙ c₃ on the latent leg"});
    qIn = "qc";
  }
  if (nodeB) {
    steps.push_back({"qt", {"B", qIn}, letters({dv, dq}) + "," + qSubs + "->" + qSubs + dv.index, PlanStep::Op::None, "",
                     1.0, {}, 0, "q̃[n,…,d,d'] = B[d,d']·Q[n,…,d']"});
    qIn = "qt";
    qSubs += dv.index;
  }
  // The logits before A: the head letter (the query side's when A mixes it next), then d when
  // B is the identity or a full matrix (a rank-1 B adds d through c₂ after A).
  std::string l0;
  if (merged && ka == FactorKind::Identity) l0 += 'r';
  else if (nodeA) l0 += query[0].index;
  else if (!merged && !dropH && ka == FactorKind::Identity) l0 += 'h';
  if (!merged && !dropD && (kb == FactorKind::Identity || nodeB)) l0 += 'd';
  steps.push_back({"L", {qIn, "k"}, qSubs + ",bm" + Q + "->b" + l0 + "nm", PlanStep::Op::None, "", 1.0, {}, 0,
                   "logits Σ over the query/key legs of Q·K (per head or channel)"});
  std::string lSubs = "b" + l0 + "nm";
  if (nodeA) {
    std::string mixed = lSubs;
    mixed[1] = value[0].index;
    steps.push_back({"LA", {"A", "L"}, letters({value[0], query[0]}) + "," + lSubs + "->" + mixed, PlanStep::Op::None, "",
                     1.0, {}, 0, "head mixing Σ_h' A[h,h']·logits_h'"});
    lSubs = mixed;
  }
  if (rank1) {
    const std::string withD = lSubs.substr(0, lSubs.size() - 2) + dv.index + "nm";
    steps.push_back({"Lc", {steps.back().output, "c2"}, lSubs + "," + dv.index + "->" + withD, PlanStep::Op::None, "",
                     1.0, {}, 0, "channel scale c₂[d]"});
    lSubs = withD;
  }
  steps.back().output = "P";
  steps.back().op = PlanStep::Op::Softmax;
  steps.back().box = "attn";
  steps.back().role = "attention weights P = softmax(α·logits) over M";
  for (auto& st : steps) b.step(st);

  const std::string pLetters = lSubs.substr(1, lSubs.size() - 3);
  b.step({"omega", {"P", "v"}, lSubs + ",bm" + V + "->bn" + V, PlanStep::Op::None, "", 1.0, {}, 0,
          "Ω_r = P_r·V_r (maps shared by the channels of a head when B = 1·1ᵀ)"});
  std::string maps = "P";
  if (pLetters != V) {
    b.step({"maps", {"P"}, lSubs + "->b" + V + "nm", PlanStep::Op::None, "", 1.0, {}, 0,
            "display maps: one per channel r (copies of the shared maps)"});
    maps = "maps";
  }
  b.outputProjection("omega", leg('n', "N", N), value, fo, "Ω·W^O (eq. 3c)");
  return b.take(maps, {z.R, N, N});
}

TensorNetwork buildThsaLinearNetwork(const AttentionSpec& s, std::int64_t N) {
  const auto& z = s.sizes;
  const CoreSpec& core = *s.core;
  std::string title = coreTitle(s);
  title.replace(0, 4, "Linear THSA (φ = elu + 1)");
  NetworkBuilder b(s, title,
                   "Ω[n,r] = Σ_s φ(C_r ⊙ Q_n)_s·S[s,r] / Σ_s φ(C_r ⊙ Q_n)_s·z_s,  S = Σ_m φ(K_m) V_mᵀ, z = Σ_m φ(K_m);"
                   "  y = Ω W^O");
  const Leg r = leg('r', "R", z.R), sq = leg('s', "R", z.R);
  thsaProjections(b, N, {sq}, {r});
  b.weight("C", "C", NodeKind::Core, "core",
           "Core C (core [R, R]) inside the kernel: channel r uses φ(C_r ⊙ Q_n)·φ(K_m); C enters whole since φ(0) = 1 "
           "(a structured core is materialised). " +
               std::to_string(core.trainableCount(z.H, z.D, z.R)) + " trainable scalars.",
           {r, sq}, core.trainableCount(z.H, z.D, z.R));
  auto qNodes = withBiases(b, {"x_q", "Wq", "C", "x_k", "Wk"});
  SoftmaxBox phiQ{"phi_q", {}, 0, 0, 1.0, "", false, SoftmaxBox::Kind::Elementwise, "φ = elu + 1",
                  "Kernel feature map φ(C_r ⊙ Q_n) entry by entry [N, R, S] (docs/attention-variants.md §4).", false};
  SoftmaxBox phiK{"phi_k", {}, 0, 0, 1.0, "", false, SoftmaxBox::Kind::Elementwise, "φ = elu + 1",
                  "Kernel feature map φ(K_m) [M, S].", false};
  for (const auto& id : qNodes) (id == "x_k" || id == "Wk" || id == "bk" ? phiK : phiQ).nodes.push_back(id);
  b.box(phiQ);
  b.box(phiK);
  if (s.causal) {
    b.constant("L", "L", "lower_triangular",
               "Causal mask L[n,m] = 1 for m ≤ n: query n sums keys up to itself (evaluated as prefix sums).",
               {leg('n', "N", N), leg('m', "M", N)});
    qNodes.push_back("L");
  }
  b.box({"attn", qNodes, 'm', 'n', 1.0, "1", false, SoftmaxBox::Kind::Normalize, "normalise",
         "Linear attention: similarities φ(C_r⊙Q_n)·φ(K_m) divided by their sum over M (no exp, no scale).", false});

  using Op = PlanStep::Op;
  b.step({"phiq", {"C", "q"}, "rs,bns->bnrs", Op::EluPlusOne, "phi_q", 1.0, {}, 0, "φ(C_r ⊙ Q_n) [N, R, S]"});
  b.step({"phik", {"k"}, "bms->bms", Op::EluPlusOne, "phi_k", 1.0, {}, 0, "φ(K_m) [M, S]"});
  if (s.causal) {
    b.step({"S", {"phik", "v", "L"}, "bms,bmr,nm->bnsr", Op::PrefixSum, "", 1.0, {}, 'm',
            "prefix sums S_n = Σ_{m≤n} φ(K_m)·V_mᵀ [N, S, R]"});
    b.step({"z", {"phik", "L"}, "bms,nm->bns", Op::PrefixSum, "", 1.0, {}, 'm', "prefix sums z_n = Σ_{m≤n} φ(K_m)"});
    b.step({"num", {"phiq", "S"}, "bnrs,bnsr->bnr", Op::None, "", 1.0, {}, 0, "numerator Σ_s φ(C_r⊙Q_n)_s·S_n[s,r]"});
    b.step({"den", {"phiq", "z"}, "bnrs,bns->bnr", Op::None, "", 1.0, {}, 0, "denominator Σ_s φ(C_r⊙Q_n)_s·z_n[s]"});
    b.step({"sim", {"phiq", "phik", "L"}, "bnrs,bms,nm->brnm", Op::Normalize, "attn", 1.0, {}, 0,
            "display maps: normalised causal similarities per channel [R, N, M]"});
  } else {
    b.step({"S", {"phik", "v"}, "bms,bmr->bsr", Op::None, "", 1.0, {}, 0, "S = Σ_m φ(K_m)·V_mᵀ [S, R]"});
    b.step({"z", {"phik"}, "bms->bs", Op::None, "", 1.0, {}, 0, "z = Σ_m φ(K_m) [S]"});
    b.step({"num", {"phiq", "S"}, "bnrs,bsr->bnr", Op::None, "", 1.0, {}, 0, "numerator Σ_s φ(C_r⊙Q_n)_s·S[s,r]"});
    b.step({"den", {"phiq", "z"}, "bnrs,bs->bnr", Op::None, "", 1.0, {}, 0, "denominator Σ_s φ(C_r⊙Q_n)_s·z[s]"});
    b.step({"sim", {"phiq", "phik"}, "bnrs,bms->brnm", Op::Normalize, "attn", 1.0, {}, 0,
            "display maps: normalised similarities per channel [R, N, M]"});
  }
  b.step({"omega", {"num", "den"}, "bnr,bnr->bnr", Op::Divide, "", 1.0, {}, 0, "Ω = numerator / denominator"});
  b.outputProjection("omega", leg('n', "N", N), {r}, leg('o', "F", z.F), "Ω·W^O");
  return b.take("sim", {z.R, N, N});
}

}  // namespace tensorscope::spec::detail
