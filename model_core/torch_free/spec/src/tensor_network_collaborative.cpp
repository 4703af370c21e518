// Tensor network of collaborative attention (docs/attention-variants.md §8.9; Cordonnier, Loukas,
// Jaggi 2020, epfml/collaborative-attention collaborative_attention.py): the shared query and key
// weights end on one key-space leg c of D̃ features, which the mixing M [H, D̃] joins per head (a
// hyperedge of three tensors: Σ_c Q̃[n,c]·M[h,c]·K̃[m,c]); the content bias X^C·W^C [M, H] is added
// to the logits before the softmax. Values, the output gate and W^O are MHSA's.
#include <cmath>
#include <string>

#include "tensor_network_builder.h"

namespace tensorscope::spec::detail {

TensorNetwork buildCollaborativeNetwork(const AttentionSpec& s, std::int64_t N) {
  const auto& z = s.sizes;
  const Collaborative& k = s.slots.collaborative;
  const Leg n = leg('n', "N", N), m = leg('m', "M", N);
  const Leg h = leg('h', "H", z.H);
  const Leg c = leg('c', "D̃", k.key_dim);  // the shared key space
  const Leg e = leg('e', "D", z.D);        // W^V–W^O
  const Leg fo = leg('o', "F", z.F);
  std::string title = "Collaborative attention: " + std::to_string(z.H) + " heads reading one key space of D̃ = " +
                      std::to_string(k.key_dim) + ", values of size " + std::to_string(z.D);
  if (s.slots.gate != Gate::None) title += s.slots.gate == Gate::Headwise ? ", a gate per head" : ", a gate per output element";
  std::string equation = std::string("P_h = softmax(((Q̃ ⊙ m_h) K̃ᵀ") + (k.content_bias ? " + 1 (X W^C_h)ᵀ" : "") +
                         ") / √(D̃/H)),  Q̃ = X W^Q, K̃ = X W^K;  o_h = P_h V_h";
  if (s.slots.gate != Gate::None) equation += s.slots.gate == Gate::Headwise ? " · σ(X W^G_h)" : " ⊙ σ(X W^G_h)";
  equation += ";  y = [o_1 … o_H] W^O";
  NetworkBuilder b(s, title, equation);
  const std::string kq = "[D̃, F], no bias";
  Projection q{"q", "x_q", "X^Q", "Input X as the query copy X^Q [N, F]: row n is token n; its N leg is the output's N.",
               n, leg('f', "F", z.F), "Wq", "W^Q",
               "Shared query weights W^Q (wq.weight " + kq + "): one query Q̃ = X·W^Q for every head, in the key "
               "space of D̃ features.",
               "wq", {c}, "shared queries Q̃ [N, D̃]"};
  q.no_bias = true;
  b.projection(q);
  Projection kp{"k", "x_k", "X^K", "Input X as the key copy X^K [M, F]; the softmax normalises over its M leg.", m,
                leg('g', "F", z.F), "Wk", "W^K",
                "Shared key weights W^K (wk.weight " + kq + "): one key K̃ = X·W^K for every head (a single shared "
                "key head, as in MQA, of width D̃).",
                "wk", {c}, "shared keys K̃ [M, D̃]"};
  kp.no_bias = true;
  b.projection(kp);
  b.projection({"v", "x_v", "X^V", "Input X as the value copy X^V [M, F]; its M leg meets the attention weights' M.", m,
                leg('u', "F", z.F), "Wv", "W^V",
                "Value weights W^V (wv.weight [H·D, F]) viewed [H, D, F]: V_h = X·W^V_h, one value head per head.", "wv",
                {h, e}, "values V [M, H, D]"});

  SoftmaxBox box = b.headedSoftmaxBox(z.D, "1/√(D̃/H)",
                                      "Each head's map: softmax over M of ((Q̃ ⊙ m_h)·K̃ᵀ" +
                                          std::string(k.content_bias ? " + the content bias" : "") + ")/√(D̃/H)");
  box.scale = 1.0 / std::sqrt(static_cast<double>(k.key_dim) / z.H);  // attention_head_size = D̃/H, not an integer in general
  b.weight("Mix", "Mᵐⁱˣ", NodeKind::Weight, "mixing",
           "The mixing matrix Mᵐⁱˣ (mixing [H, D̃]): head h reads the shared key space through its row m_h, the logits "
           "Σ_c Q̃[n,c]·Mᵐⁱˣ[h,c]·K̃[m,c]. In Tuformer's terms a rectangular core C[r, c] = Mᵐⁱˣ[h(r), c] (R x D̃).",
           {h, c}, static_cast<std::int64_t>(z.H) * k.key_dim);
  box.nodes.push_back("Mix");
  const PlanStep::Op Op0 = PlanStep::Op::None;
  if (k.content_bias) {
    Projection cb{"cb", "x_c", "X^C", "Input X as the key copy X^C [M, F] of the content bias: it depends on the key only.",
                  m, leg('i', "F", z.F), "Wc", "W^C",
                  "Content bias weights W^C (content_bias.weight [H, F], no bias): head h adds X_m·W^C_h to every "
                  "query's logit for key m (the query-bias term of MHSA that survives the softmax).",
                  "content_bias", {h}, "content bias [M, H]"};
    cb.no_bias = true;
    b.projection(cb);
    box.nodes.push_back("x_c");
    box.nodes.push_back("Wc");
    b.box(box);
    b.step({"lq", {"q", "Mix", "k"}, "bnc,hc,bmc->bhnm", Op0, "", 1.0, {}, 0, "logits (Q̃ ⊙ m_h)·K̃ᵀ [H, N, M]"});
    b.step({"lg", {"lq", "cb"}, "bhnm,bmh->bhnm", PlanStep::Op::Add, "", 1.0, {}, 0,
            "logits plus each key's content bias X_m·W^C_h"});
    b.step({"P", {"lg"}, "bhnm->bhnm", PlanStep::Op::Softmax, "attn", 1.0, {}, 0,
            "attention weights P_h = softmax(((Q̃ ⊙ m_h)·K̃ᵀ + content bias)/√(D̃/H)) [H, N, M]"});
  } else {
    b.box(box);
    b.step({"P", {"q", "Mix", "k"}, "bnc,hc,bmc->bhnm", PlanStep::Op::Softmax, "attn", 1.0, {}, 0,
            "attention weights P_h = softmax((Q̃ ⊙ m_h)·K̃ᵀ/√(D̃/H)) [H, N, M]"});
  }
  b.step({"o", {"P", "v"}, "bhnm,bmhe->bnhe", Op0, "", 1.0, {}, 0, "heads o_h = P_h·V_h [N, H, D]"});
  const std::string o = headedOutputGate(b, n, h, e, "o");
  b.outputProjection(o, n, {h, e}, fo, "[o_1 … o_H]·W^O");
  return b.take("P", {z.H, N, N});
}

}  // namespace tensorscope::spec::detail
