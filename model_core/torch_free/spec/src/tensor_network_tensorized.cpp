// Tensor networks of multilinear (docs/attention-variants.md §6, Tensorized Transformer) and dimwise
// (section 7, TensorCoder).
#include <cmath>

#include "tensor_network_builder.h"

namespace tensorscope::spec::detail {

TensorNetwork buildMultilinearNetwork(const AttentionSpec& s) {
  const auto& z = s.sizes;
  const std::int64_t N = z.seq_len;
  NetworkBuilder b(s,
                   "Multi-linear attention: " + std::to_string(z.P) + " block terms of rank " + std::to_string(z.R) +
                       (s.causal ? ", causal" : ""),
                   "T[i,j,k] = (1/P)·Σ_p Σ_r g_p[r]·Q[i,r]·K[j,r]·V[k,r];  y_i = W^O·vec(T[i,:,:])");
  const Leg n = leg('n', "N", N), j = leg('j', "N", N), k = leg('k', "N", N);
  const Leg r = leg('r', "R", z.R), p = leg('p', "P", z.P);
  b.projection({"q", "x_q", "X^Q", "Input X as the query copy X^Q [N, F]: its token leg i is the output's N.", n,
                leg('f', "F", z.F), "Wq", "W^Q",
                "Query weights W^Q (wq.weight [R, F]): Q = X·W^Q; R is shared by W^Q, W^K, W^V and the cores.", "wq",
                {r}, "queries Q [N, R]"});
  b.projection({"k", "x_k", "X^K", "Input X as the key copy X^K [N, F]: its token leg j is T's second axis.", j,
                leg('g', "F", z.F), "Wk", "W^K", "Key weights W^K (wk.weight [R, F]): K = X·W^K.", "wk", {r},
                "keys K [N, R]"});
  b.projection({"v", "x_v", "X^V", "Input X as the value copy X^V [N, F]: its token leg k is T's third axis.", k,
                leg('u', "F", z.F), "Wv", "W^V", "Value weights W^V (wv.weight [R, F]): V = X·W^V.", "wv", {r},
                "values V [N, R]"});
  b.weight("G", "G", NodeKind::Core, "cores",
           std::string("Block-term cores G (cores [P, R]): row p holds the diagonal of core g_p; every core joins Q, K "
                       "and V through the hyperedge R") +
               (s.core_softmax ? ", after a softmax over R (core_softmax)." : " (used as they are)."),
           {p, r}, std::int64_t(z.P) * z.R);
  b.constant("mean", "1/P", "mean", "The mean over the P block terms: (1/P)·Σ_p (docs/attention-variants.md §6).", {p});
  std::string g = "G";
  if (s.core_softmax) {
    b.box({"cores", {"G"}, 'r', 0, 1.0, "1", false, SoftmaxBox::Kind::Softmax, "softmax",
           "Effective core weights softmax(g_p) over R (core_softmax: true, the paper).", false});
    b.step({"g", {"G"}, "pr->pr", PlanStep::Op::Softmax, "cores", 1.0, {}, 0, "effective cores softmax(g_p)"});
    g = "g";
  }
  b.step({"gbar", {g, "mean"}, "pr,p->r", PlanStep::Op::None, "", 1.0, {}, 0, "mean core ḡ = (1/P)·Σ_p g_p"});
  b.step({"a", {"q", "gbar"}, "bnr,r->bnr", PlanStep::Op::None, "", 1.0, {}, 0, "a = Q ⊙ ḡ"});
  b.step({"ak", {"a", "k"}, "bnr,bjr->bnjr", PlanStep::Op::None, "", 1.0, {}, 0, "a[i,r]·K[j,r]"});
  b.step({"T", {"ak", "v"}, "bnjr,bkr->bnjk", PlanStep::Op::None, "", 1.0, {}, 0,
          "T[i,j,k] = Σ_r (a·K)[i,j,r]·V[k,r] [N, N, N]"});
  std::string t = "T", maps = "A";
  b.step({"A", {"a", "k"}, "bnr,bjr->bnj", PlanStep::Op::None, "", 1.0, {}, 0,
          "display map A[i,j] = Σ_r ḡ[r]·Q[i,r]·K[j,r] [N, N]"});
  if (s.causal) {
    b.constant("Lj", "L", "lower_triangular", "Causal mask L[i,j] = 1 for j ≤ i: query i sees keys up to itself.",
               {n, j});
    b.constant("Lk", "L", "lower_triangular", "Causal mask L[i,k] = 1 for k ≤ i: query i sees values up to itself.",
               {n, k});
    b.step({"Am", {"A", "Lj"}, "bnj,nj->bnj", PlanStep::Op::None, "", 1.0, {}, 0, "causal display map"});
    b.step({"Tm", {"T", "Lj", "Lk"}, "bnjk,nj,nk->bnjk", PlanStep::Op::None, "", 1.0, {}, 0,
            "causal T: 0 unless j ≤ i and k ≤ i"});
    t = "Tm";
    maps = "Am";
  }
  b.outputProjection(t, n, {j, k}, leg('o', "F", z.F), "W^O·vec(T[i,:,:]) (SplitConcat)");
  return b.take(maps, {N, N});
}

TensorNetwork buildDimwiseNetwork(const AttentionSpec& s, std::int64_t N) {
  const auto& z = s.sizes;
  NetworkBuilder b(s,
                   "Dimension-wise attention: d = " + std::to_string(z.R) + ", " + std::to_string(z.c) + " filters" +
                       (s.causal ? ", causal" : ""),
                   s.causal ? "S⁽ⁱ⁾ = Σ_{n≤i} Q_nᵀK_n;  f⁽ⁱ⁾ = softmax(S⁽ⁱ⁾/√i);  O_c[i,j] = Σ_m W_c[j,m]·f⁽ⁱ⁾[j,m]·V[i,m];  "
                              "y = [O_1 … O_c] W^O"
                            : "S = QᵀK;  f = softmax(S/√N) over the last axis;  O_c = V·(W_c ⊙ f)ᵀ;  y = [O_1 … O_c] W^O");
  const Leg n = leg('n', "N", N), m = leg('m', "M", N);
  const Leg d = leg('d', "d", z.R), e = leg('e', "d", z.R), c = leg('c', "c", z.c);
  b.projection({"q", "x_q", "X^Q", "Input X as the query copy [M, F]; its token leg is summed with the keys' (S = QᵀK).",
                m, leg('f', "F", z.F), "Wq", "W^Q",
                "Query weights W^Q (wq.weight [d, F]): Q = X·W^Q; its d leg is the row of S (Khatri-Rao hyperedge).", "wq",
                {d}, "queries Q [M, d]"});
  b.projection({"k", "x_k", "X^K", "Input X as the key copy [M, F]; S = QᵀK sums over the tokens M.", m,
                leg('g', "F", z.F), "Wk", "W^K",
                "Key weights W^K (wk.weight [d, F]): K = X·W^K; its d leg is the normalised (last) axis of S.", "wk",
                {e}, "keys K [M, d]"});
  b.projection({"v", "x_v", "X^V", "Input X as the value copy [N, F]; its token leg is the output's N.", n,
                leg('u', "F", z.F), "Wv", "W^V",
                "Value weights W^V (wv.weight [d, F]): V = X·W^V; its d leg meets f(S)'s last axis and W_c.", "wv", {e},
                "values V [N, d]"});
  b.weight("W", "W_c", NodeKind::Weight, "conv",
           "Filters W_c (conv [c, d, d]): O_c = V·(W_c ⊙ f(S))ᵀ, an entrywise product with the map (Khatri-Rao "
           "structure: both d legs are hyperedges).",
           {c, d, e}, std::int64_t(z.c) * z.R * z.R);
  std::vector<std::string> inBox{"x_q", "Wq", "x_k", "Wk"};
  for (const char* w : {"Wq", "Wk"})
    if (const auto bias = b.biasOf(w); !bias.empty()) inBox.push_back(bias);
  if (s.causal) {
    b.constant("L", "L", "lower_triangular",
               "Causal mask L[i,n] = 1 for n ≤ i: position i's map uses tokens up to i (evaluated as prefix sums).",
               {n, m});
    inBox.push_back("L");
  }
  SoftmaxBox box{"attn", inBox, 'e', 'n', 1.0 / std::sqrt(static_cast<double>(N)), s.causal ? "1/√i" : "1/√N", false,
                 SoftmaxBox::Kind::Softmax, "softmax",
                 s.causal ? "Dimension-wise map f⁽ⁱ⁾ = softmax over the last d of S⁽ⁱ⁾/√i, S⁽ⁱ⁾ = Σ_{n≤i} Q_nᵀK_n [N, d, d]."
                          : "Dimension-wise map f(S) = softmax over the last d of QᵀK/√N [d, d].",
                 s.causal};
  b.box(box);
  using Op = PlanStep::Op;
  if (s.causal) {
    b.step({"S", {"q", "k", "L"}, "bmd,bme,nm->bnde", Op::PrefixSum, "", 1.0, {}, 'm',
            "prefix sums S⁽ⁱ⁾ = Σ_{n≤i} Q_nᵀK_n [N, d, d]"});
    b.step({"f", {"S"}, "bnde->bnde", Op::Softmax, "attn", 1.0, {}, 0, "f⁽ⁱ⁾ = softmax(S⁽ⁱ⁾/√i) over the last d"});
    b.step({"fv", {"f", "v"}, "bnde,bne->bnde", Op::None, "", 1.0, {}, 0, "f⁽ⁱ⁾[j,m]·V[i,m]"});
    b.step({"O", {"W", "fv"}, "cde,bnde->bncd", Op::None, "", 1.0, {}, 0, "O_c[i,j] = Σ_m W_c[j,m]·(f⊙V)[i,j,m]"});
    b.step({"fN", {"f"}, "bnde->bnde", Op::SelectLast, "", 1.0, {}, 'n', "display map f⁽ᴺ⁾ (the last position)"});
  } else {
    b.step({"f", {"q", "k"}, "bmd,bme->bde", Op::Softmax, "attn", 1.0, {}, 0, "f(S) = softmax(QᵀK/√N) over the last d"});
    b.step({"Wf", {"W", "f"}, "cde,bde->bcde", Op::None, "", 1.0, {}, 0, "W_c ⊙ f(S)"});
    b.step({"O", {"Wf", "v"}, "bcde,bne->bncd", Op::None, "", 1.0, {}, 0, "O_c = V·(W_c ⊙ f)ᵀ"});
  }
  b.outputProjection("O", n, {c, d}, leg('o', "F", z.F), "[O_1 … O_c]·W^O");
  return b.take(s.causal ? "fN" : "f", {z.R, z.R});
}

}  // namespace tensorscope::spec::detail
