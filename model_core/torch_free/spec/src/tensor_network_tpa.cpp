// Tensor network of Tensor Product Attention (docs/attention-variants.md §8.7; tensorgi/TPA
// model/T6.py CPLinear, commit 3d7f51d). Each of q, k, v is a CP (rank-R) sum of head factors A
// [token, H, R] and feature factors B [token, R, D]: the rank leg joins W^A and W^B, and the token
// leg joins the two copies of X that make the factors (the factors are both contextual). The
// rotary turns of the feature factors of q and k are constant tensors R[n, d, a] (T6's half-split
// pairing, binding "rotary_half:BASE": R[n, j, j] = R[n, j + D/2, j + D/2] = cos(n·θ_j),
// R[n, j, j + D/2] = sin(n·θ_j), R[n, j + D/2, j] = −sin(n·θ_j), θ_j = BASE^(−2j/D)); the 1/R of
// each factor sum is the scale of its contraction step. Non-contextual head factors are weights
// [H, R] with no X of their own, non-contextual feature factors weights [R, D] (turned by position
// only); T6's optional head norm (using_groupnorm) is an RMSNorm step and its weight γ [D].
#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include "tensor_network_builder.h"

namespace tensorscope::spec::detail {

namespace {
std::string baseText(double base) {
  std::ostringstream os;
  os.precision(17);
  os << base;
  return os.str();
}
}  // namespace

TensorNetwork buildTpaNetwork(const AttentionSpec& s, std::int64_t N) {
  using Op = PlanStep::Op;
  const auto& z = s.sizes;
  const Tpa& tp = s.slots.tpa;
  const int D = z.D;
  const Leg n = leg('n', "N", N), m = leg('m', "M", N), h = leg('h', "H", z.H);
  const Leg d = leg('d', "D", D);  // the feature leg where q meets k (after the rotary turns)
  const Leg e = leg('e', "D", D);  // the value feature leg: v–W^O
  const Leg fo = leg('o', "F", z.F);
  const std::string rotary = "rotary_half:" + baseText(tp.rope_base);
  const std::string title =
      std::string(!tp.contextual_b  ? "TPA with constant feature factors"
                  : tp.contextual_a ? "Tensor Product Attention (TPA)"
                                    : "Non-contextual TPA") +
      ": " +
      std::to_string(z.H) + " heads of size " + std::to_string(D) + ", ranks R_Q = " +
      (tp.q_rank == 0 ? std::string("— (MHSA queries)") : std::to_string(tp.q_rank)) + ", R_K = " +
      std::to_string(tp.k_rank) + ", R_V = " + std::to_string(tp.v_rank) + (tp.rope ? ", rotary" : "") +
      (tp.group_norm ? ", head norm" : "");
  const std::string equation =
      "q_{n,h} = (1/R_Q) Σ_r A^Q_{n,h,r} ρ_n(B^Q_{n,r});  k, v likewise;  P_h = softmax(q_h k_hᵀ / √D);  " +
      std::string(tp.group_norm ? "o_h = γ ⊙ RMSNorm(P_h v_h);  y = [o_1 … o_H] W^O" : "y = [P_1 v_1 … P_H v_H] W^O");
  NetworkBuilder b(s, title, equation);

  struct Part {
    const char* name;  // q, k, v
    const char* upper; // Q, K, V
    int R;
    Leg token, rank, raw, out;  // raw: B's feature leg before the rotary; out: after it
    char fa, fb;                // X's feature letters for the A and B copies
  };
  // Letters: ranks r, s, t; raw feature legs a (q), c (k); X's F legs f g / i j / k l.
  Part parts[3] = {{"q", "Q", tp.q_rank, n, leg('r', "R_Q", std::max(1, tp.q_rank)), leg('a', "D", D), d, 'f', 'g'},
                   {"k", "K", tp.k_rank, m, leg('s', "R_K", tp.k_rank), leg('c', "D", D), d, 'i', 'j'},
                   {"v", "V", tp.v_rank, m, leg('t', "R_V", tp.v_rank), e, e, 'k', 'l'}};
  std::vector<std::string> boxNodes;
  for (int i = 0; i < 3; ++i) {
    Part& p = parts[i];
    const std::string v = p.name, V = p.upper;
    const bool turned = tp.rope && i < 2;
    const Leg raw = turned ? p.raw : p.out;
    const std::string xRole = i == 0 ? "Input X as a query copy [N, F]: row n is token n."
                                     : "Input X as a key/value copy [M, F]; the softmax normalises over its M leg.";
    if (p.R == 0) {  // T6_kvonly: queries as MHSA, x·Wqᵀ
      b.projection({turned ? "qraw" : "q", "x_q", "X^Q", xRole, n, leg(p.fa, "F", z.F), "Wq", "W^Q",
                    "Query weights W^Q (wq.weight [H·D, F] viewed [H, D, F]), as MHSA's (T6_kvonly c_q).", "wq",
                    {h, raw}, turned ? "queries [N, H, D] before the rotary turn" : "queries q [N, H, D]"});
      boxNodes.insert(boxNodes.end(), {"x_q", "Wq"});
      if (turned) {
        b.constant("Rq", "R^Q", rotary, "T6's rotary turn of each query head at its position n (pairs d, d + D/2).",
                   {n, d, raw});
        b.step({"q", {"qraw", "Rq"}, "bnha,nda->bnhd", Op::None, "", 1.0, {}, 0, "queries q [N, H, D], turned"});
        boxNodes.push_back("Rq");
      }
      continue;
    }
    const std::string tok(1, p.token.index), rk(1, p.rank.index), rw(1, raw.index), ou(1, p.out.index);
    // Head factors A [token, H, R].
    std::string aOperand;
    if (tp.contextual_a) {
      b.projection({"A" + v, "x_" + v + "a", "X^{" + V + ",A}", xRole, p.token, leg(p.fa, "F", z.F), "WA" + v,
                    "W^{A" + V + "}",
                    "Head-factor weights W_A_" + v + " (W_A_" + v + ".weight [H·R_" + V + ", F] viewed [H, R_" + V +
                        ", F]): the head factor a_r(x) of each rank is contextual.",
                    "W_A_" + v, {h, p.rank}, "head factors A_" + v + " [" + tok + ", H, R_" + V + "]"});
      if (i < 2) boxNodes.insert(boxNodes.end(), {"x_" + v + "a", "WA" + v});
      aOperand = "b" + tok + "h" + rk;
    } else {
      b.weight("A" + v, "a^{" + V + "}", NodeKind::Weight, "A_" + v,
               "Constant head factors a_" + v + " [H, R_" + V + "] (A_" + v +
                   "): the same mix of the ranks for every token (non-contextual TPA).",
               {h, p.rank}, static_cast<std::int64_t>(z.H) * p.R);
      if (i < 2) boxNodes.push_back("A" + v);
      aOperand = "h" + rk;
    }
    // Feature factors B [token, R, D] (or the constant b [R, D]), turned when the rotary is on.
    std::string bOperand;  // the factor's indices in the factor sum
    if (tp.contextual_b) {
      b.projection({"B" + v, "x_" + v + "b", "X^{" + V + ",B}", xRole, p.token, leg(p.fb, "F", z.F), "WB" + v,
                    "W^{B" + V + "}",
                    "Feature-factor weights W_B_" + v + " (W_B_" + v + ".weight [R_" + V + "·D, F] viewed [R_" + V +
                        ", D, F]).",
                    "W_B_" + v, {p.rank, raw},
                    "feature factors B_" + v + " [" + tok + ", R_" + V + ", D]" + (turned ? " before the rotary turn" : "")});
      if (i < 2) boxNodes.insert(boxNodes.end(), {"x_" + v + "b", "WB" + v});
      bOperand = "b" + tok + rk + (turned ? rw : ou);
    } else {
      b.weight("B" + v, "b^{" + V + "}", NodeKind::Weight, "B_" + v,
               "Constant feature factors b_" + v + " [R_" + V + ", D] (B_" + v +
                   "): the same vectors for every token (TPA with non-contextual B, paper Table 1).",
               {p.rank, raw}, static_cast<std::int64_t>(p.R) * D);
      if (i < 2) boxNodes.push_back("B" + v);
      bOperand = rk + (turned ? rw : ou);
    }
    std::string bStep = "B" + v;
    if (turned) {
      b.constant("R" + v, "R^{" + V + "}", rotary,
                 "T6's rotary turn of the feature factors at the token's position (pairs d, d + D/2).", {p.token, p.out, raw});
      const std::string batch = tp.contextual_b ? "b" : "";  // a constant b turns by position only
      b.step({"B" + v + "t", {"B" + v, "R" + v}, bOperand + "," + tok + ou + rw + "->" + batch + tok + rk + ou, Op::None,
              "", 1.0, {}, 0, "feature factors B_" + v + ", turned"});
      boxNodes.push_back("R" + v);
      bStep = "B" + v + "t";
      bOperand = batch + tok + rk + ou;
    }
    // v = (1/R)·Σ_r A·B.
    b.step({v, {"A" + v, bStep}, aOperand + "," + bOperand + "->b" + tok + "h" + ou, Op::None, "",
            1.0 / p.R, {}, 0, v + " = (1/R_" + V + ")·Σ_r A_" + v + "·B_" + v + " [" + tok + ", H, D]"});
  }
  SoftmaxBox box;
  box.id = "attn";
  box.nodes = boxNodes;  // what the logits are made of: the q and k paths
  box.normalized = 'm';
  box.query = 'n';
  box.scale = 1.0 / std::sqrt(static_cast<double>(D));
  box.scale_label = "1/√D";
  box.causal = s.causal;
  box.label = "softmax";
  box.role = std::string("Softmax over M of q·kᵀ/√D per head") + (s.causal ? "; causal: key m > query n gets -inf first." : ".");
  b.box(box);
  b.step({"P", {"q", "k"}, "bnhd,bmhd->bhnm", Op::Softmax, "attn", 1.0, {}, 0, "attention weights P [H, N, M]"});
  b.step({"o", {"P", "v"}, "bhnm,bmhe->bnhe", Op::None, "", 1.0, {}, 0, "heads P_h·v_h [N, H, D]"});
  std::string o = "o";
  if (tp.group_norm) {  // T6's subln (using_groupnorm): RMSNorm of each head's D outputs, one weight γ
    b.step({"on", {"o"}, "bnhe->bnhe", Op::RmsNorm, "", 1.0, {}, 'e',
            "head norm: each head's D outputs divided by their root mean square (ε = 10⁻⁵)"});
    b.weight("Wn", "γ", NodeKind::Weight, "subln.weight",
             "The head norm's weight γ (subln.weight [D]), shared by all heads (T6 using_groupnorm).", {e}, D);
    b.step({"os", {"on", "Wn"}, "bnhe,e->bnhe", Op::None, "", 1.0, {}, 0, "o_h = γ ⊙ RMSNorm(o_h)"});
    o = "os";
  }
  b.outputProjection(o, n, {h, e}, fo, "[o_1 … o_H]·W^O");
  return b.take("P", {z.H, N, N});
}

}  // namespace tensorscope::spec::detail
