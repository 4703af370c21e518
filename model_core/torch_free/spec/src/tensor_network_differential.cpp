// Tensor network of differential attention (docs/attention-variants.md §8.5; Ye et al. 2024,
// microsoft/unilm Diff-Transformer/multihead_diffattn.py): the query and key weights carry a map leg
// i ∈ {1, 2} beside the head leg, the two maps of a head meet the vector Λ = (1, −λ) (slot c, a
// post-softmax mixing), and each head's output passes an RMSNorm over its 2D value features.
#include <cmath>
#include <string>

#include "tensor_network_builder.h"

namespace tensorscope::spec::detail {

TensorNetwork buildDifferentialNetwork(const AttentionSpec& s, std::int64_t N) {
  const auto& z = s.sizes;
  const Leg n = leg('n', "N", N), m = leg('m', "M", N);
  const Leg h = leg('h', "H", z.H);
  const Leg i = leg('i', "2", 2);                  // the map of a head: 1 or 2
  const Leg d = leg('d', "D", z.D);                // latent contraction W^Q–W^K
  const Leg e = leg('e', "2D", 2 * z.D);           // W^V–W^O: value heads of size 2D
  const Leg fo = leg('o', "F", z.F);
  // Shared K and V (the official repeat_kv): 2G key maps and G value heads, reached through copy
  // tensors δ^K[h, i, κ] (query map 2h + i reads key map κ = ⌊(2h + i)/(H/G)⌋) and δ^V[h, g].
  const int G = s.slots.kv_groups > 0 ? s.slots.kv_groups : z.H;
  const bool tied = G != z.H;
  const Leg kMap = leg('k', "2G", 2LL * G), g = leg('c', "G", G);
  const double lambdaInit = diffLambdaInit(0);
  const std::string title = "Differential attention: " + std::to_string(z.H) + " heads, two maps of size " +
                            std::to_string(z.D) + " each, values of size " + std::to_string(2 * z.D) +
                            (tied ? ", " + std::to_string(G) + " shared K/V heads" : std::string()) +
                            " (first block: λᵢₙᵢₜ = " + formatNumber(lambdaInit) + ")";
  const std::string equation =
      std::string(tied ? "P_{h,i} = softmax(Q_{h,i} K_κ(h,i)ᵀ / √D);  " : "P_{h,i} = softmax(Q_{h,i} K_{h,i}ᵀ / √D);  ") +
      "A_h = P_{h,1} − λ P_{h,2},  λ = e^{λq1·λk1} − e^{λq2·λk2} + λᵢₙᵢₜ;  " +
      (tied ? "o_h = (1 − λᵢₙᵢₜ)·RMSNorm(A_h V_g(h));  y = [o_1 … o_H] W^O;  κ(h,i) = ⌊(2h+i)/(H/G)⌋, g(h) = ⌊h/(H/G)⌋"
            : "o_h = (1 − λᵢₙᵢₜ)·RMSNorm(A_h V_h);  y = [o_1 … o_H] W^O");
  NetworkBuilder b(s, title, equation);
  const std::string view = " viewed [H, 2, D, F]";
  b.projection({"q", "x_q", "X^Q", "Input X as the query copy X^Q [N, F]: row n is token n; its N leg is the output's N.",
                n, leg('f', "F", z.F), "Wq", "W^Q",
                "Query weights W^Q (wq.weight [2·H·D, F]" + view + "): two query maps Q_{h,1}, Q_{h,2} per head "
                "(rows (2h + i)·D …).",
                "wq", {h, i, d}, "queries Q [N, H, 2, D]"});
  if (tied)
    b.projection({"k", "x_k", "X^K", "Input X as the key copy X^K [M, F]; the softmax normalises over its M leg.", m,
                  leg('g', "F", z.F), "Wk", "W^K",
                  "Key weights W^K (wk.weight [2·G·D, F] viewed [2G, D, F]): 2G shared key maps.", "wk", {kMap, d},
                  "keys K [M, 2G, D]"});
  else
    b.projection({"k", "x_k", "X^K", "Input X as the key copy X^K [M, F]; the softmax normalises over its M leg.", m,
                  leg('g', "F", z.F), "Wk", "W^K",
                  "Key weights W^K (wk.weight [2·H·D, F]" + view + "): the key map K_{h,i} meets Q_{h,i} over D.",
                  "wk", {h, i, d}, "keys K [M, H, 2, D]"});
  b.projection({"v", "x_v", "X^V", "Input X as the value copy X^V [M, F]; its M leg meets the maps' M.", m,
                leg('u', "F", z.F), "Wv", "W^V",
                tied ? "Value weights W^V (wv.weight [G·2D, F] viewed [G, 2D, F]): G shared value heads of size 2D."
                     : "Value weights W^V (wv.weight [H·2D, F] viewed [H, 2D, F]): one value head of size 2D per "
                       "head, shared by its two maps.",
                "wv", {tied ? g : h, e}, tied ? "values V [M, G, 2D]" : "values V [M, H, 2D]"});

  SoftmaxBox box = b.headedSoftmaxBox(z.D, "1/√D", "Two softmax maps per head: P_{h,i} = softmax over M of Q_{h,i}·K_{h,i}ᵀ/√D");
  PlanStep maps{"P", {"q", "k"}, "bnhid,bmhid->bhinm", PlanStep::Op::Softmax, "attn", 1.0, {}, 0,
                "both maps of every head P_{h,i} = softmax(Q_{h,i}·K_{h,i}ᵀ/√D) [H, 2, N, M]"};
  if (tied) {
    b.constant("Tk", "δ^K", "diff_key_tie",
               "Copy tensor of the shared key maps: δ[h, i, κ] = 1 where query map 2h + i reads key map "
               "κ = ⌊(2h + i)/(H/G)⌋ (the official repeat_kv; with H/G even both maps of a head read one key map).",
               {h, i, kMap});
    box.nodes.push_back("Tk");
    maps.inputs.push_back("Tk");
    maps.einsum = "bnhid,bmkd,hik->bhinm";
  }
  b.box(box);
  b.step(maps);
  b.weight("Lam", "Λ", NodeKind::Weight, "diff_lambda",
           "The differential mixing Λ = (1, −λ) (slot c, after the softmax): A_h = Σ_i Λ_i·P_{h,i}, with "
           "λ = e^{λq1·λk1} − e^{λq2·λk2} + λᵢₙᵢₜ from the trained vectors lambda_q1 … lambda_k2 [D] "
           "(λᵢₙᵢₜ = " + formatNumber(lambdaInit) + " in the first block).",
           {i}, 4LL * z.D);
  b.step({"A", {"Lam", "P"}, "i,bhinm->bhnm", PlanStep::Op::None, "", 1.0, {}, 0,
          "differential maps A_h = P_{h,1} − λ·P_{h,2} [H, N, M]"});
  if (tied) {
    b.constant("Tv", "δ^V", "group_tie", "Copy tensor of the shared values: head h reads value head g = ⌊h/(H/G)⌋.",
               {h, g});
    b.step({"o", {"A", "v", "Tv"}, "bhnm,bmce,hc->bnhe", PlanStep::Op::None, "", 1.0, {}, 0,
            "heads A_h·V_g(h) [N, H, 2D]"});
  } else {
    b.step({"o", {"A", "v"}, "bhnm,bmhe->bnhe", PlanStep::Op::None, "", 1.0, {}, 0, "heads A_h·V_h [N, H, 2D]"});
  }
  PlanStep norm{"on", {"o"}, "bnhe->bnhe", PlanStep::Op::RmsNorm, "", 1.0, {}, 'e',
                "head norm: each head's 2D features divided by their root mean square (ε = 10⁻⁵)"};
  b.step(norm);
  b.weight("Wn", "γ", NodeKind::Weight, "subln.weight",
           "The head norm's weight γ (subln.weight [2D]), shared by all heads; the output is also scaled by "
           "1 − λᵢₙᵢₜ.",
           {e}, 2LL * z.D);
  b.step({"os", {"on", "Wn"}, "bnhe,e->bnhe", PlanStep::Op::None, "", 1.0 - lambdaInit, {}, 0,
          "o_h = (1 − λᵢₙᵢₜ)·γ ⊙ RMSNorm(A_h·V_h)"});
  b.outputProjection("os", n, {h, e}, fo, "[o_1 … o_H]·W^O");
  return b.take("A", {z.H, N, N});
}

}  // namespace tensorscope::spec::detail
