// Tensor networks of mhsa, fixed_head and tp (docs/attention-variants.md §§1, 2, 5; Tuformer Fig. 3b).
#include <cmath>

#include "tensor_network_builder.h"

namespace tensorscope::spec::detail {

TensorNetwork buildHeadedNetwork(const AttentionSpec& s, std::int64_t N) {
  const auto& z = s.sizes;
  const bool tp = s.variant == Variant::Tp;
  const Leg n = leg('n', "N", N), m = leg('m', "M", N);
  const Leg h = leg('h', "H", z.H);
  const Leg dqk = leg('d', "D", z.D);  // latent contraction W^Q–W^K
  const Leg dvo = leg('e', "D", z.D);  // W^V–W^O (and W^R in tp)
  const Leg fo = leg('o', "F", z.F);
  const std::string hd = "[H·D, F]) viewed [H, D, F]";

  std::string title, equation;
  switch (s.variant) {
    case Variant::FixedHead:
      title = "Fixed head size: " + std::to_string(z.H) + " heads of size d_p = " + std::to_string(z.D);
      equation = "head_h = softmax(X W^Q_h (X W^K_h)ᵀ / √d_p) X W^V_h;  y = [head_1 … head_H] W^O";
      break;
    case Variant::Tp:
      title = "TP-attention: " + std::to_string(z.H) + " heads of size " + std::to_string(z.D) + " with role binding";
      equation = "ō_h = softmax(Q_h K_hᵀ / √D) V_h;  r_h = X W^R_h;  y = [ō_1 ⊙ r_1 … ō_H ⊙ r_H] W^O";
      break;
    default:
      title = "MHSA: " + std::to_string(z.H) + " heads of size " + std::to_string(z.D);
      equation = "head_h = softmax(Q_h K_hᵀ / √D) V_h,  Q_h = X W^Q_h (same for K, V);  y = [head_1 … head_H] W^O";
      break;
  }
  NetworkBuilder b(s, title, equation);

  b.projection({"q", "x_q", "X^Q",
                "Input X as the query copy X^Q [N, F] (eq. 1a): row n is token n; its N leg is the output's N.", n,
                leg('f', "F", z.F), "Wq", "W^Q",
                "Query weights W^Q (wq.weight " + hd + ": Q_h = X·W^Q_h (eq. 1a); H is shared by every weight.",
                "wq", {h, dqk}, "queries Q [N, H, D]"});
  b.projection({"k", "x_k", "X^K",
                "Input X as the key copy X^K [M, F] (eq. 1a); the softmax normalises over its M leg.", m,
                leg('g', "F", z.F), "Wk", "W^K",
                "Key weights W^K (wk.weight " + hd + ": K_h = X·W^K_h; its D leg meets W^Q's (latent contraction).",
                "wk", {h, dqk}, "keys K [M, H, D]"});
  b.projection({"v", "x_v", "X^V",
                "Input X as the value copy X^V [M, F] (eq. 1a); its M leg meets the attention weights' M.", m,
                leg('u', "F", z.F), "Wv", "W^V",
                "Value weights W^V (wv.weight " + hd + ": V_h = X·W^V_h (eq. 1a); its D leg meets W^O's.", "wv",
                {h, dvo}, "values V [M, H, D]"});

  SoftmaxBox box;
  box.id = "attn";
  box.nodes = {"x_q", "Wq", "x_k", "Wk"};
  for (const char* w : {"Wq", "Wk"})
    if (const auto bias = b.biasOf(w); !bias.empty()) box.nodes.push_back(bias);
  box.normalized = 'm';
  box.query = 'n';
  box.scale = 1.0 / std::sqrt(static_cast<double>(z.D));
  box.scale_label = s.variant == Variant::FixedHead ? "1/√d_p" : "1/√D";
  box.causal = s.causal;
  box.label = "softmax";
  box.role = std::string("Scaled dot-product attention of each head: softmax over M of Q_h·K_hᵀ/√D (eq. 1b)") +
             (s.causal ? "; causal: key m > query n gets -inf first." : ".");
  b.box(box);

  PlanStep p;
  p.output = "P";
  p.inputs = {"q", "k"};
  p.einsum = "bnhd,bmhd->bhnm";
  p.op = PlanStep::Op::Softmax;
  p.box = "attn";
  p.role = "attention weights P_h = softmax(Q_h·K_hᵀ/√D) [H, N, M]";
  b.step(p);
  b.step({"o", {"P", "v"}, "bhnm,bmhe->bnhe", PlanStep::Op::None, "", 1.0, {}, 0, "heads ō_h = P_h·V_h [N, H, D]"});

  std::string o = "o";
  if (tp) {
    b.projection({"r", "x_r", "X^R",
                  "Input X as the role copy X^R [N, F] (TP-Transformer): roles come from the query position n.", n,
                  leg('w', "F", z.F), "Wr", "W^R",
                  "Role weights W^R (wr.weight " + hd +
                      ": r_h = X·W^R_h; the binding ō_h ⊙ r_h multiplies along H, D and N.",
                  "wr", {h, dvo}, "role vectors r [N, H, D]"});
    b.step({"bound", {"o", "r"}, "bnhe,bnhe->bnhe", PlanStep::Op::None, "", 1.0, {}, 0,
            "binding: filler ⊙ role, ō_h ⊙ r_h (Hadamard product)"});
    o = "bound";
  }
  b.outputProjection(o, n, {h, dvo}, fo, tp ? "[ō_1 ⊙ r_1 … ō_H ⊙ r_H]·W^O" : "[head_1 … head_H]·W^O (eq. 1c)");
  return b.take("P", {z.H, N, N});
}

}  // namespace tensorscope::spec::detail
