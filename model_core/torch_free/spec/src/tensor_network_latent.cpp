// Tensor network of multi-head latent attention (docs/attention-variants.md §8.6; DeepSeek-V3
// inference/model.py class MLA, commit 1ea5a1a7). One network, two contraction orders: the plan is
// the naive order (keys and values per head from the latent) or the absorbed one (W^UK meets the
// query, W^UV the softmax-weighted latent), as slots.latent.order says. Blocks of a concatenated leg
// (the query's content and rotary parts, the latent and the rotary key) are picked by constant
// selection tensors S; the rotary turns are constant tensors R[n, a, a'] (identity on the content part).
#include <cmath>
#include <string>
#include <vector>

#include "tensor_network_builder.h"

namespace tensorscope::spec::detail {

TensorNetwork buildLatentNetwork(const AttentionSpec& s, std::int64_t N) {
  using Op = PlanStep::Op;
  const auto& z = s.sizes;
  const Latent& l = s.slots.latent;
  const int D = z.D, r = l.rope_dim, L = l.kv_rank, Rq = l.q_rank;
  const bool absorbed = l.order == LatentOrder::Absorbed;
  const Leg n = leg('n', "N", N), m = leg('m', "M", N), h = leg('h', "H", z.H);
  const Leg a = leg('a', "D+r", D + r);   // the query head as W^Q writes it
  const Leg q = leg('q', "D+r", D + r);   // the query head after its rotary part turned
  const Leg d = leg('d', "D", D);         // content part: q_nope meets k_nope (or W^UK)
  const Leg e = leg('e', "D", D);         // value part: W^UV–W^O
  const Leg u = leg('u', "L+r", L + r);   // W^DKV's output: the latent and the rotary key
  const Leg i = leg('i', "L", L);         // the latent c
  const Leg t = leg('t', "2D", 2 * D);    // W^UKV's rows of a head: W^UK, then W^UV
  const Leg fo = leg('o', "F", z.F);
  const std::string title = "Multi-head latent attention (MLA): " + std::to_string(z.H) + " heads of size " +
                            std::to_string(D) + " + rotary " + std::to_string(r) + ", latent " + std::to_string(L) +
                            (Rq > 0 ? ", query latent " + std::to_string(Rq) : "") + " (" +
                            (absorbed ? "absorbed order" : "naive order") + ")";
  const std::string equation =
      "c = γ ⊙ RMSNorm(X W^{DKV});  k_h = c W^{UK}_h, v_h = c W^{UV}_h;  P_h = softmax((q_{h,nope} k_hᵀ + "
      "ρ(q_{h,pe}) ρ(k_{pe})ᵀ) / √(D + r));  y = [P_1 v_1 … P_H v_H] W^O";
  NetworkBuilder b(s, title, equation);

  // Queries: W^Q, or W^Q_b·(γ_q ⊙ RMSNorm(W^Q_a·x)).
  const std::string qView = "[H·(D+r), ";
  if (Rq == 0) {
    b.projection({"qr", "x_q", "X^Q", "Input X as the query copy X^Q [N, F]: row n is token n.", n, leg('f', "F", z.F),
                  "Wq", "W^Q",
                  "Query weights W^Q (wq.weight " + qView + "F] viewed [H, D+r, F]): each head's content part (D), "
                  "then its rotary part (r).",
                  "wq", {h, a}, "queries [N, H, D+r] before the rotary turn"});
  } else {
    const Leg sq = leg('s', "R_q", Rq);
    b.projection({"qa", "x_q", "X^Q", "Input X as the query copy X^Q [N, F]: row n is token n.", n, leg('f', "F", z.F),
                  "Wqa", "W^Q_a", "Query down-projection W^Q_a (wq_a.weight [q_rank, F]).", "wq_a", {sq},
                  "query latent [N, q_rank]"});
    PlanStep norm{"qn", {"qa"}, "bns->bns", Op::RmsNorm, "", 1.0, {}, 's',
                  "query latent ÷ its root mean square (ε = 10⁻⁶)"};
    norm.eps = kMlaNormEps;
    b.step(norm);
    b.weight("Gq", "γ_q", NodeKind::Weight, "q_norm.weight", "The query latent's RMSNorm weight γ_q (q_norm.weight [q_rank]).",
             {sq}, Rq);
    b.step({"qg", {"qn", "Gq"}, "bns,s->bns", Op::None, "", 1.0, {}, 0, "γ_q ⊙ RMSNorm(x·W^Q_aᵀ)"});
    b.weight("Wqb", "W^Q_b", NodeKind::Weight, "wq_b.weight",
             "Query up-projection W^Q_b (wq_b.weight " + qView + "q_rank] viewed [H, D+r, q_rank]).", {h, a, sq},
             static_cast<std::int64_t>(z.H) * (D + r) * Rq);
    b.step({"qr", {"qg", "Wqb"}, "bns,has->bnha", Op::None, "", 1.0, {}, 0, "queries [N, H, D+r] before the rotary turn"});
  }
  // Keys and values: the latent and the shared rotary key from W^DKV.
  b.projection({"kv", "x_kv", "X^{KV}", "Input X as the key/value copy X^KV [M, F]; the softmax normalises over its M leg.", m,
                leg('g', "F", z.F), "Wkva", "W^{DKV}",
                "Down-projection W^DKV (wkv_a.weight [L+r, F]): the latent (L rows), then the rotary key (r rows) "
                "shared by all heads.",
                "wkv_a", {u}, "latent and rotary key [M, L+r]"});
  b.constant("Sc", "S_c", "select:0", "Picks the latent's L entries of W^DKV's output.", {u, i});
  b.step({"ca", {"kv", "Sc"}, "bmu,ui->bmi", Op::None, "", 1.0, {}, 0, "the latent before its norm [M, L]"});
  PlanStep kvNorm{"cn", {"ca"}, "bmi->bmi", Op::RmsNorm, "", 1.0, {}, 'i', "latent ÷ its root mean square (ε = 10⁻⁶)"};
  kvNorm.eps = kMlaNormEps;
  b.step(kvNorm);
  b.weight("Gkv", "γ_{kv}", NodeKind::Weight, "kv_norm.weight", "The latent's RMSNorm weight γ_kv (kv_norm.weight [L]).", {i}, L);
  b.step({"c", {"cn", "Gkv"}, "bmi,i->bmi", Op::None, "", 1.0, {}, 0, "the latent c = γ_kv ⊙ RMSNorm(…) [M, L]"});
  // The value path reads the same latent; as MHSA's diagram has a key copy and a value copy of X, it
  // is drawn from a value copy X^V with W^DKV, S_c and γ_kv drawn again (the same weights, counted once).
  // Its own legs, so that no hyperedge joins the two paths: v (L+r), c (L), y (2D).
  const Leg uv = leg('v', "L+r", L + r), iv = leg('c', "L", L), tv = leg('y', "2D", 2 * D);
  {
    Projection valueCopy{"kvv", "x_v", "X^V", "Input X as the value copy X^V [M, F]; its M leg meets the attention weights' M.",
                         m, leg('w', "F", z.F), "Wkvav", "W^{DKV}",
                         "W^{DKV} again (wkv_a.weight [L+r, F]: the same parameters, counted once, drawn again for the "
                         "value path).",
                         "wkv_a", {uv}, "latent and rotary key of the value copy [M, L+r]"};
    valueCopy.again = true;
    b.projection(valueCopy);
  }
  b.constant("Scv", "S_c", "select:0", "Picks the latent's L entries (value path).", {uv, iv});
  b.step({"cav", {"kvv", "Scv"}, "bmv,vc->bmc", Op::None, "", 1.0, {}, 0, "the latent before its norm (value path)"});
  PlanStep kvNormV{"cnv", {"cav"}, "bmc->bmc", Op::RmsNorm, "", 1.0, {}, 'c', "latent ÷ its root mean square (value path)"};
  kvNormV.eps = kMlaNormEps;
  b.step(kvNormV);
  b.weight("Gkvv", "γ_{kv}", NodeKind::Weight, "kv_norm.weight",
           "γ_kv again (kv_norm.weight, the same parameters, drawn once more for the value path).", {iv}, 0);
  b.step({"cv", {"cnv", "Gkvv"}, "bmc,c->bmc", Op::None, "", 1.0, {}, 0, "the latent c as the values read it [M, L]"});
  b.weight("Wkvb", "W^{UKV}", NodeKind::Weight, "wkv_b.weight",
           "Up-projection W^UKV (wkv_b.weight [2·H·D, L] viewed [H, 2D, L]): per head W^UK (D rows), then W^UV (D rows).",
           {h, t, i}, 2LL * z.H * D * L);
  b.constant("Suk", "S_K", "select:0", "Picks W^UK, the first D rows of each head of W^UKV.", {t, d});
  b.weight("Wkvbv", "W^{UKV}", NodeKind::Weight, "wkv_b.weight",
           "W^UKV again (wkv_b.weight: the same parameters, counted once, drawn again for the value path).", {h, tv, iv}, 0);
  b.constant("Suv", "S_V", "select:" + std::to_string(D), "Picks W^UV, the last D rows of each head of W^UKV.", {tv, e});
  // The query's content part, and (r > 0) the rotary parts.
  std::string qHead = "qr";
  Leg qLeg = a;
  if (r > 0) {
    b.constant("Rq", "R^Q", "rotary:" + std::to_string(D),
               "The rotary turn of each query's last r entries at its position n (the content part unchanged).",
               {n, q, a});
    b.step({"qt", {"qr", "Rq"}, "bnha,nqa->bnhq", Op::None, "", 1.0, {}, 0, "queries with their rotary part turned"});
    qHead = "qt";
    qLeg = q;
  }
  b.constant("Sqn", "S_{nope}", "select:0", "Picks each query head's content part (D).", {qLeg, d});
  const std::string qSub = std::string("bnh") + qLeg.index;
  b.step({"qnope", {qHead, "Sqn"}, qSub + "," + qLeg.index + "d->bnhd", Op::None, "", 1.0, {}, 0, "q_nope [N, H, D]"});
  if (!absorbed) {
    b.step({"knope", {"c", "Wkvb", "Suk"}, "bmi,hti,td->bmhd", Op::None, "", 1.0, {}, 0, "k_nope = c·W^UKᵀ [M, H, D]"});
    b.step({"v", {"cv", "Wkvbv", "Suv"}, "bmc,hyc,ye->bmhe", Op::None, "", 1.0, {}, 0, "values v = c·W^UVᵀ [M, H, D]"});
  } else {
    b.step({"qabs", {"qnope", "Wkvb", "Suk"}, "bnhd,hti,td->bnhi", Op::None, "", 1.0, {}, 0,
            "absorbed queries q_nope·W^UK [N, H, L]"});
  }
  SoftmaxBox box;
  box.id = "attn";
  // Every node the logits are made of (the box drawn around them).
  box.nodes = Rq == 0 ? std::vector<std::string>{"x_q", "Wq"} : std::vector<std::string>{"x_q", "Wqa", "Gq", "Wqb"};
  for (const char* id : {"x_kv", "Wkva", "Sc", "Gkv", "Wkvb", "Suk", "Sqn"}) box.nodes.push_back(id);
  if (r > 0)
    for (const char* id : {"Rq", "Sqp", "Sp", "Rk"}) box.nodes.push_back(id);
  box.normalized = 'm';
  box.query = 'n';
  box.scale = 1.0 / std::sqrt(static_cast<double>(D + r));
  box.scale_label = "1/√(D+r)";
  box.causal = s.causal;
  box.label = "softmax";
  box.role = std::string("Softmax over M of (content + rotary logits)/√(D+r)") +
             (s.causal ? "; causal: key m > query n gets -inf first." : ".");
  b.box(box);
  // The content logits: q_nope·k_nopeᵀ (naive) or q_nope·W^UK·cᵀ (absorbed: the latent as one shared
  // key head); with no rotary part they are the softmax step itself.
  const auto content = [&](std::string output, Op op, std::string boxId, std::string role) {
    return absorbed ? PlanStep{std::move(output), {"qabs", "c"}, "bnhi,bmi->bhnm", op, std::move(boxId), 1.0, {}, 0,
                               std::move(role)}
                    : PlanStep{std::move(output), {"qnope", "knope"}, "bnhd,bmhd->bhnm", op, std::move(boxId), 1.0, {}, 0,
                               std::move(role)};
  };
  if (r > 0) {
    const Leg k = leg('k', "r", r), j = leg('j', "r", r);
    b.constant("Sqp", "S_{pe}", "select:" + std::to_string(D), "Picks each query head's rotary part (r).", {q, k});
    b.step({"qpe", {"qt", "Sqp"}, "bnhq,qk->bnhk", Op::None, "", 1.0, {}, 0, "q_pe, turned [N, H, r]"});
    b.constant("Sp", "S_{pe,K}", "select:" + std::to_string(L), "Picks the rotary key's r entries of W^DKV's output.", {u, j});
    b.constant("Rk", "R^K", "rotary:0", "The rotary turn of the shared key at its position m.", {m, k, j});
    b.step({"kpe", {"kv", "Sp", "Rk"}, "bmu,uj,mkj->bmk", Op::None, "", 1.0, {}, 0, "the shared rotary key k_pe [M, r]"});
    b.step(content("lc", Op::None, "", absorbed ? "content logits q_nope·W^UK·cᵀ (the latent as one shared key head)"
                                                 : "content logits q_nope·k_nopeᵀ"));
    b.step({"lp", {"qpe", "kpe"}, "bnhk,bmk->bhnm", Op::None, "", 1.0, {}, 0, "rotary logits q_pe·k_peᵀ"});
    b.step({"lg", {"lc", "lp"}, "bhnm,bhnm->bhnm", Op::Add, "", 1.0, {}, 0, "logits: content + rotary"});
    b.step({"P", {"lg"}, "bhnm->bhnm", Op::Softmax, "attn", 1.0, {}, 0, "attention weights P [H, N, M]"});
  } else {
    b.step(content("P", Op::Softmax, "attn", "attention weights P [H, N, M] (no rotary part)"));
  }
  if (!absorbed) {
    b.step({"o", {"P", "v"}, "bhnm,bmhe->bnhe", Op::None, "", 1.0, {}, 0, "heads P_h·v_h [N, H, D]"});
  } else {
    b.step({"pc", {"P", "cv"}, "bhnm,bmc->bnhc", Op::None, "", 1.0, {}, 0, "P_h·c: the latent as one shared value head"});
    b.step({"o", {"pc", "Wkvbv", "Suv"}, "bnhc,hyc,ye->bnhe", Op::None, "", 1.0, {}, 0, "heads (P_h·c)·W^UVᵀ [N, H, D]"});
  }
  b.outputProjection("o", n, {h, e}, fo, "[o_1 … o_H]·W^O");
  return b.take("P", {z.H, N, N});
}

}  // namespace tensorscope::spec::detail
