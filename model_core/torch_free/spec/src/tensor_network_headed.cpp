// Tensor networks of mhsa, fixed_head and tp (docs/attention-variants.md §§1, 2, 5; Tuformer Fig. 3b),
// with the slots of §8: a copy tensor on the head leg for shared keys and values (MQA, GQA), the
// talking-heads mixings before and after the softmax, and the output gate.
#include <cmath>

#include "tensor_network_builder.h"

namespace tensorscope::spec::detail {

std::string headedOutputGate(NetworkBuilder& b, const Leg& n, const Leg& w, const Leg& dvo, const std::string& o) {
  const auto& s = b.spec();
  if (s.slots.gate == Gate::None) return o;
  const auto& z = s.sizes;
  const std::string hd = "[H·D, F]) viewed [H, D, F]";
  const std::string wl(1, w.index);
  const bool headwise = s.slots.gate == Gate::Headwise;
  const std::vector<Leg> gateLegs = headwise ? std::vector<Leg>{w} : std::vector<Leg>{w, dvo};
  b.projection({"g", "x_g", "X^G", "Input X as the gate copy X^G [N, F]: each token gates its own output.", n,
                leg('j', "F", z.F), "Wg", "W^G",
                std::string("Gate weights W^G (wg.weight ") + (headwise ? "[H, F]" : hd) +
                    (headwise ? "): one gate σ(X·W^G_h) per head and token." : "): one gate per output element."),
                "wg", gateLegs, headwise ? "gate logits [N, H]" : "gate logits [N, H, D]"});
  const std::string gl = headwise ? wl : wl + "e";
  b.step({"sg", {"g"}, "bn" + gl + "->bn" + gl, PlanStep::Op::Sigmoid, "", 1.0, {}, 0, "gates σ(X·W^G)"});
  b.step({"gated", {o, "sg"}, "bn" + wl + "e,bn" + gl + "->bn" + wl + "e", PlanStep::Op::None, "", 1.0, {}, 0,
          "gated heads ō_h ⊙ σ(X·W^G_h)"});
  return "gated";
}

TensorNetwork buildHeadedNetwork(const AttentionSpec& s, std::int64_t N) {
  if (s.slots.differential) return buildDifferentialNetwork(s, N);
  if (s.slots.collaborative.enabled()) return buildCollaborativeNetwork(s, N);
  if (s.slots.latent.enabled()) return buildLatentNetwork(s, N);
  if (s.slots.tpa.enabled()) return buildTpaNetwork(s, N);
  if (s.slots.mta.enabled()) return buildMtaNetwork(s, N);
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
  const Slots& slot = s.slots;
  const int G = slot.kv_groups > 0 ? slot.kv_groups : z.H;
  const bool tied = G != z.H;
  if (!slot.isMhsa()) {
    std::string with;
    const auto add = [&with](const std::string& part) { with += (with.empty() ? "" : ", ") + part; };
    if (tied) add(G == 1 ? "one shared K/V head (MQA)" : std::to_string(G) + " shared K/V heads (GQA)");
    if (slot.pre_mix && slot.post_mix) add("talking heads");
    else if (slot.pre_mix) add("talking heads before the softmax");
    else if (slot.post_mix) add("talking heads after the softmax");
    if (slot.gate != Gate::None) add(slot.gate == Gate::Headwise ? "a gate per head" : "a gate per output element");
    title += " with " + with;
    // The equation of exactly the slots in use.
    const std::string k = tied ? "K_g(h)" : "K_h", v = tied ? "V_g(h)" : "V_h";
    const std::string logits = "Q_h " + k + "ᵀ / √D";
    std::string eq = slot.pre_mix ? "P_l = softmax(Σ_h Cᵖʳᵉ[l,h] " + logits + ")" : "P_h = softmax(" + logits + ")";
    if (slot.post_mix) eq += ";  U_h = Σ_l C′[h,l] P_l";
    eq += ";  o_h = " + std::string(slot.post_mix ? "U_h " : "P_h ") + v;
    if (slot.gate != Gate::None) eq += slot.gate == Gate::Headwise ? " · σ(X W^G_h)" : " ⊙ σ(X W^G_h)";
    eq += ";  y = [o_1 … o_H] W^O";
    if (tied) eq += ";  g(h) = ⌊h / (H/G)⌋";
    equation = eq;
  }
  NetworkBuilder b(s, title, equation);
  const Leg g = leg('k', "G", G);       // key/value heads (G = H without shared K and V)
  // The head legs along the way: h (queries, keys), l (after the pre-softmax mixing), w (after the
  // post-softmax mixing: the values' and W^O's).
  const Leg l = slot.pre_mix ? leg('l', "H", z.H) : h;
  const Leg w = slot.post_mix ? leg('p', "H", z.H) : l;
  const Leg kHead = tied ? g : h;  // W^K's head leg
  const Leg vHead = tied ? g : w;  // W^V's

  b.projection({"q", "x_q", "X^Q",
                "Input X as the query copy X^Q [N, F] (eq. 1a): row n is token n; its N leg is the output's N.", n,
                leg('f', "F", z.F), "Wq", "W^Q",
                "Query weights W^Q (wq.weight " + hd + ": Q_h = X·W^Q_h (eq. 1a); H is shared by every weight.",
                "wq", {h, dqk}, "queries Q [N, H, D]"});
  b.projection({"k", "x_k", "X^K",
                "Input X as the key copy X^K [M, F] (eq. 1a); the softmax normalises over its M leg.", m,
                leg('g', "F", z.F), "Wk", "W^K",
                "Key weights W^K (wk.weight " + hd + ": K_h = X·W^K_h; its D leg meets W^Q's (latent contraction).",
                "wk", {kHead, dqk}, tied ? "keys K [M, G, D] (G shared heads)" : "keys K [M, H, D]"});
  b.projection({"v", "x_v", "X^V",
                "Input X as the value copy X^V [M, F] (eq. 1a); its M leg meets the attention weights' M.", m,
                leg('u', "F", z.F), "Wv", "W^V",
                "Value weights W^V (wv.weight " + hd + ": V_h = X·W^V_h (eq. 1a); its D leg meets W^O's.", "wv",
                {vHead, dvo}, tied ? "values V [M, G, D] (G shared heads)" : "values V [M, H, D]"});

  SoftmaxBox box = b.headedSoftmaxBox(z.D, s.variant == Variant::FixedHead ? "1/√d_p" : "1/√D",
                                      "Scaled dot-product attention of each head: softmax over M of Q_h·K_hᵀ/√D (eq. 1b)");

  std::vector<std::string> logitInputs = {"q", "k"};
  std::string logitEinsum = "bnhd,bm" + std::string(1, kHead.index) + "d";
  if (tied) {
    b.constant("Tk", "δ^K", "group_tie", "Copy tensor of the shared keys: δ[h, g] = 1 where query head h reads key head "
               "g = h/(H/G) (MQA: G = 1; GQA); every head of a group meets the same K_g.", {h, g});
    box.nodes.push_back("Tk");
    logitInputs.push_back("Tk");
    logitEinsum += ",hk";
  }
  if (slot.pre_mix) {
    b.weight("Cpre", "Cᵖʳᵉ", NodeKind::Weight, "mix_pre",
             "Talking heads before the softmax (mix_pre [H, H]): map l's logits are Σ_h Cᵖʳᵉ[l, h]·Q_h·K_hᵀ/√D, "
             "Tuformer's skip-right core C₁ ⊗ 1·1ᵀ.", {l, h}, static_cast<std::int64_t>(z.H) * z.H);
    box.nodes.push_back("Cpre");
    logitInputs.push_back("Cpre");
    logitEinsum += ",lh";
  }
  b.box(box);

  PlanStep p;
  p.output = "P";
  p.inputs = logitInputs;
  p.einsum = logitEinsum + "->b" + std::string(1, l.index) + "nm";
  p.op = PlanStep::Op::Softmax;
  p.box = "attn";
  p.role = slot.pre_mix ? "attention weights P_l = softmax(Σ_h Cᵖʳᵉ[l,h]·Q_h·K_hᵀ/√D) [H, N, M]"
                        : "attention weights P_h = softmax(Q_h·K_hᵀ/√D) [H, N, M]";
  b.step(p);
  std::string maps = "P";
  if (slot.post_mix) {
    b.weight("Cpost", "C′", NodeKind::Weight, "mix_post",
             "Talking heads after the softmax (mix_post [H, H]): the weights that meet V_w are "
             "U_w = Σ_l C′[w, l]·P_l; not a point of Tuformer's C space.", {w, l}, static_cast<std::int64_t>(z.H) * z.H);
    b.step({"U", {"Cpost", "P"}, "pl,blnm->bpnm", PlanStep::Op::None, "", 1.0, {}, 0,
            "mixed weights U_w = Σ_l C′[w,l]·P_l [H, N, M]"});
    maps = "U";
  }
  const std::string wl(1, w.index);
  std::vector<std::string> valueInputs = {maps, "v"};
  std::string valueEinsum = "b" + wl + "nm,bm" + std::string(1, vHead.index) + "e";
  if (tied) {
    b.constant("Tv", "δ^V", "group_tie", "Copy tensor of the shared values: head w reads value head g = w/(H/G).",
               {w, g});
    valueInputs.push_back("Tv");
    valueEinsum += "," + wl + "k";
  }
  b.step({"o", valueInputs, valueEinsum + "->bn" + wl + "e", PlanStep::Op::None, "", 1.0, {}, 0,
          "heads ō_h = P_h·V_h [N, H, D]"});
  std::string o = "o";
  if (tp) {
    b.projection({"r", "x_r", "X^R",
                  "Input X as the role copy X^R [N, F] (TP-Transformer): roles come from the query position n.", n,
                  leg('w', "F", z.F), "Wr", "W^R",
                  "Role weights W^R (wr.weight " + hd +
                      ": r_h = X·W^R_h; the binding ō_h ⊙ r_h multiplies along H, D and N.",
                  "wr", {w, dvo}, "role vectors r [N, H, D]"});
    b.step({"bound", {"o", "r"}, "bnhe,bnhe->bnhe", PlanStep::Op::None, "", 1.0, {}, 0,
            "binding: filler ⊙ role, ō_h ⊙ r_h (Hadamard product)"});
    o = "bound";
  }
  o = headedOutputGate(b, n, w, dvo, o);
  b.outputProjection(o, n, {w, dvo}, fo, tp ? "[ō_1 ⊙ r_1 … ō_H ⊙ r_H]·W^O" : "[head_1 … head_H]·W^O (eq. 1c)");
  return b.take(maps, {z.H, N, N});
}

}  // namespace tensorscope::spec::detail
