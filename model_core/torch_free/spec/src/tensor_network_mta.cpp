// Tensor network of multi-token attention (docs/attention-variants.md §8.8; facebookresearch/RAM
// projects/mta/mta_transformer.py): the key-query convolution is a contraction of each head's
// logits with the kernel θ [H, c_q, c_k] and two shift tensors Σ^Q[n, a, i] (1 where a = n − (c_q − 1) + i:
// the kernel's query row i reads the earlier query a) and Σ^K[m, c, j] (1 where c = m − p + j), the
// causal zeroing a product with the lower-triangular L[n, m]; the head convolution splits the head
// leg into groups with copy tensors.
#include <string>

#include "tensor_network_builder.h"

namespace tensorscope::spec::detail {

namespace {

int leftKeyPad(int ck, MtaPad pad) {
  return pad == MtaPad::Both ? (ck - 1) / 2 : pad == MtaPad::Left ? ck - 1 : 0;
}

}  // namespace

TensorNetwork buildMtaNetwork(const AttentionSpec& s, std::int64_t N) {
  const auto& z = s.sizes;
  const Slots& slot = s.slots;
  const Mta& mt = slot.mta;
  const Leg n = leg('n', "N", N), m = leg('m', "M", N);
  const Leg h = leg('h', "H", z.H);
  const Leg dqk = leg('d', "D", z.D), dvo = leg('e', "D", z.D);
  const Leg fo = leg('o', "F", z.F);
  const int G = slot.kv_groups > 0 ? slot.kv_groups : z.H;
  const bool tied = G != z.H;
  const Leg g = leg('k', "G", G);
  // Head legs along the way: h (logits), l (after the pre-softmax mixing), w (after the
  // post-softmax head mixing: the values' and W^O's).
  const Leg l = slot.pre_mix ? leg('l', "H", z.H) : h;
  const bool postHeads = mt.head_group > 0 || slot.post_mix;
  const Leg w = postHeads ? leg('p', "H", z.H) : l;

  std::string title = "Multi-token attention: " + std::to_string(z.H) + " heads of size " + std::to_string(z.D);
  std::string eq = "Ŝ_h = θ_h ⋆ (Q_h K_hᵀ / √D)";
  if (mt.q_kernel > 0) title += ", " + std::to_string(mt.q_kernel) + " x " + std::to_string(mt.k_kernel) + " key-query convolution";
  else eq = "Ŝ_h = Q_h K_hᵀ / √D";
  if (slot.pre_mix) eq += ";  L_l = Σ_h Cᵖʳᵉ[l,h] Ŝ_h";
  eq += std::string(";  P_l = softmax(") + (slot.pre_mix ? "L_l" : "Ŝ_l") + ")";
  if (mt.post_q_kernel > 0) {
    title += ", " + std::to_string(mt.post_q_kernel) + " x " + std::to_string(mt.post_k_kernel) + " after the softmax";
    eq += ";  P_l ← θ′_l ⋆ P_l";
  }
  if (mt.head_group > 0) {
    title += ", heads mixed in groups of " + std::to_string(mt.head_group);
    eq += ";  U_{c·g+j} = Σ_i κ[c,i,j] P_{c·g+i}";
  } else if (slot.post_mix) {
    eq += ";  U_w = Σ_l C′[w,l] P_l";
  }
  eq += std::string(";  o_w = ") + (postHeads ? "U_w" : "P_w") + (tied ? " V_g(w)" : " V_w");
  if (mt.group_norm) eq += std::string(";  o_w ← ") + (mt.norm_rescale ? "(1 − λᵢₙᵢₜ)·" : "") + "γ ⊙ RMSNorm(o_w)";
  if (mt.out_gate != Gate::None) eq += ";  o_w ← o_w ⊙ σ(o_w W^Gᵀ + b^G)";
  eq += ";  y = [o_1 … o_H] W^O;  ⋆: (θ ⋆ S)[n,m] = Σ_{i,j} θ[i,j] S[n−c_q+1+i, m−p+j], future entries 0";
  if (tied) {
    title += ", " + std::to_string(G) + " shared K/V heads";
    eq += ";  g(h) = ⌊h / (H/G)⌋";
  }
  NetworkBuilder b(s, title, eq);
  // The token legs along the way. A convolution is a contraction with shift tensors, so the query
  // and key legs of the logits it reads are not those of the maps it makes: X^Q's token leg a and
  // X^K's c (before the key-query convolution), the softmax box's q and r (between the two
  // convolutions), the output's n and X^V's m (after the post-softmax one). Without a convolution
  // the legs on both sides are one.
  const bool pre = mt.q_kernel > 0, post = mt.post_q_kernel > 0;
  const Leg qBox = post ? leg('q', "N", N) : n, kBox = post ? leg('r', "M", N) : m;
  const Leg qIn = pre ? leg('a', "N", N) : qBox, kIn = pre ? leg('c', "M", N) : kBox;
  const std::string hd = "[H·D, F]) viewed [H, D, F]";
  b.projection({"q", "x_q", "X^Q", "Input X as the query copy X^Q [N, F]: row n is token n.", qIn, leg('f', "F", z.F),
                "Wq", "W^Q", "Query weights W^Q (wq.weight " + hd + ": Q_h = X·W^Q_h.", "wq", {h, dqk},
                "queries Q [N, H, D]"});
  b.projection({"k", "x_k", "X^K", "Input X as the key copy X^K [M, F].", kIn, leg('g', "F", z.F), "Wk", "W^K",
                "Key weights W^K (wk.weight " + std::string(tied ? "[G·D, F]) viewed [G, D, F]" : hd) +
                    ": K = X·W^K; its D leg meets W^Q's.",
                "wk", {tied ? g : h, dqk}, tied ? "keys K [M, G, D] (G shared heads)" : "keys K [M, H, D]"});
  b.projection({"v", "x_v", "X^V", "Input X as the value copy X^V [M, F]; its M leg meets the attention weights' M.", m,
                leg('u', "F", z.F), "Wv", "W^V",
                "Value weights W^V (wv.weight " + std::string(tied ? "[G·D, F]) viewed [G, D, F]" : hd) +
                    ": V = X·W^V; its D leg meets W^O's.",
                "wv", {tied ? g : w, dvo}, tied ? "values V [M, G, D] (G shared heads)" : "values V [M, H, D]"});

  // The softmax box holds everything up to the softmax; its 1/√D is applied there (the convolution
  // and the head mixing are linear, so scaling before them, as the official code does, is the same).
  SoftmaxBox box = b.headedSoftmaxBox(z.D, "1/√D",
                                      "Softmax over M of each head's convolved (and mixed) logits (RAM mta_transformer.py L343-362)");
  box.query = qBox.index;
  box.normalized = kBox.index;
  const std::string qi(1, qIn.index), ki(1, kIn.index), qb(1, qBox.index), kb(1, kBox.index);
  std::vector<std::string> inputs = {"q", "k"};
  std::string einsum = "b" + qi + "hd,b" + ki + std::string(1, tied ? 'k' : 'h') + "d";
  if (tied) {
    b.constant("Tk", "δ^K", "group_tie", "Copy tensor of the shared keys: δ[h, g] = 1 where query head h reads key head "
               "g = h/(H/G).", {h, g});
    box.nodes.push_back("Tk");
    inputs.push_back("Tk");
    einsum += ",hk";
  }
  b.step({"S", inputs, einsum + "->bh" + qi + ki, PlanStep::Op::None, "", 1.0, {}, 0, "logits Q_h·K_hᵀ per head [H, N, M]"});
  std::string cur = "S";
  // One convolution: out[h, n, m] = Σ θ[h, i, j]·Σq[n, a, i]·Σk[m, c, j]·in[h, a, c], from the legs
  // (a, c) of its input to (n, m) of its output; the input's future entries zeroed by L[a, c] first.
  auto convolution = [&](const std::string& id, const std::string& label, const std::string& binding, int cq, int ck,
                         const Leg& head, char qk, char kk, const Leg& from, const Leg& fromKey, const Leg& to,
                         const Leg& toKey, bool before) {
    const Leg iq = leg(qk, "c_q", cq), jk = leg(kk, "c_k", ck);
    const std::string hl(1, head.index), a(1, from.index), c(1, fromKey.index), nn(1, to.index), mm(1, toKey.index);
    b.weight(id, label, NodeKind::Weight, binding,
             std::string(before ? "Key-query convolution kernel θ (mta_kernel [H, c_q, c_k]; official [H, 1, c_q, c_k]): "
                                  "each head's logits become a weighted sum over c_q queries up to n and c_k keys around m."
                                : "Post-softmax convolution kernel θ′ (mta_kernel_after_sm [H, c_q, c_k]): each head's "
                                  "weights mixed over c_q queries up to n and c_k keys around m, not renormalised."),
             {head, iq, jk}, static_cast<std::int64_t>(z.H) * cq * ck);
    b.constant(id + "_q", "Σ^Q", "shift:" + std::to_string(cq - 1),
               "Query shift Σ^Q[n, a, i] = 1 where a = n − " + std::to_string(cq - 1) +
                   " + i: kernel row i reads the earlier query a (zero padding above the first query).",
               {to, from, iq});
    b.constant(id + "_k", "Σ^K", "shift:" + std::to_string(leftKeyPad(ck, mt.pad)),
               "Key shift Σ^K[m, c, j] = 1 where c = m − " + std::to_string(leftKeyPad(ck, mt.pad)) + " + j (pad " +
                   std::string(toString(mt.pad)) + "; zero outside the keys).",
               {toKey, fromKey, jk});
    if (before) {
      for (const auto& node : {id, id + "_q", id + "_k"}) box.nodes.push_back(node);
    }
    std::string in = cur;
    if (s.causal && before) {
      b.constant("Lpre", "L", "lower_triangular",
                 "Causal mask L[n, m] = 1 where key m ≤ query n: the future logits are set to zero before the "
                 "convolution (mta_transformer.py L472).",
                 {from, fromKey});
      box.nodes.push_back("Lpre");
      b.step({cur + "z", {cur, "Lpre"}, "b" + hl + a + c + "," + a + c + "->b" + hl + a + c, PlanStep::Op::None, "", 1.0,
              {}, 0, "logits with the future entries zeroed (L ⊙ S)"});
      in = cur + "z";
    }
    const std::string sub = "b" + hl + a + c + "," + hl + std::string(1, qk) + std::string(1, kk) + "," + nn + a +
                            std::string(1, qk) + "," + mm + c + std::string(1, kk) + "->b" + hl + nn + mm;
    b.step({id + "_out", {in, id, id + "_q", id + "_k"}, sub, PlanStep::Op::None, "", 1.0, {}, 0,
            before ? "convolved logits Ŝ_h = θ_h ⋆ S_h [H, N, M]" : "convolved weights θ′_l ⋆ P_l [H, N, M]"});
    cur = id + "_out";
    if (s.causal && !before) {
      b.constant("Lpost", "L", "lower_triangular",
                 "Causal mask L[n, m] = 1 where key m ≤ query n: the convolved weights' future entries are set to "
                 "zero again (mta_transformer.py L372).",
                 {to, toKey});
      b.step({cur + "m", {cur, "Lpost"}, "b" + hl + nn + mm + "," + nn + mm + "->b" + hl + nn + mm, PlanStep::Op::None,
              "", 1.0, {}, 0, "convolved weights with the future entries zeroed again"});
      cur += "m";
    }
  };
  if (pre) convolution("Th", "θ", "mta_kernel", mt.q_kernel, mt.k_kernel, h, 'i', 's', qIn, kIn, qBox, kBox, true);
  if (slot.pre_mix) {
    b.weight("Cpre", "Cᵖʳᵉ", NodeKind::Weight, "mix_pre",
             "Pre-softmax head mixing (mix_pre [H, H], the official wpsm): map l's logits are Σ_h Cᵖʳᵉ[l, h]·Ŝ_h.",
             {l, h}, static_cast<std::int64_t>(z.H) * z.H);
    box.nodes.push_back("Cpre");
    b.step({"Lmix", {"Cpre", cur}, "lh,bh" + qb + kb + "->bl" + qb + kb, PlanStep::Op::None, "", 1.0, {}, 0,
            "mixed logits L_l = Σ_h Cᵖʳᵉ[l,h]·Ŝ_h [H, N, M]"});
    cur = "Lmix";
  }
  b.box(box);
  const std::string ll(1, l.index);
  b.step({"P", {cur}, "b" + ll + qb + kb + "->b" + ll + qb + kb, PlanStep::Op::Softmax, "attn", 1.0, {}, 0,
          "attention weights P_l = softmax(L_l/√D) [H, N, M]"});
  cur = "P";
  if (post)
    convolution("Tp", "θ′", "mta_kernel_after_sm", mt.post_q_kernel, mt.post_k_kernel, l, 't', 'v', qBox, kBox, n, m,
                false);
  if (mt.head_group > 0) {
    const int gs = mt.head_group, groups = z.H / gs;
    const Leg cg = leg('x', "H/g", groups), from = leg('y', "g", gs), to = leg('z', "g", gs);
    b.constant("Hin", "δ^in", "head_split",
               "Copy tensor δ[l, c, i] = 1 where head l = c·g + i: the head leg split into H/g groups of g.", {l, cg, from});
    b.weight("Kh", "κ", NodeKind::Weight, "head_kernel",
             "Head convolution κ (head_kernel [H/g, g, g], indexed [group, from, to]): within each group the weights "
             "that meet V are U_{c·g+j} = Σ_i κ[c, i, j]·P_{c·g+i}.",
             {cg, from, to}, static_cast<std::int64_t>(z.H) * gs);
    b.constant("Hout", "δ^out", "head_split", "Copy tensor δ[w, c, j] = 1 where head w = c·g + j.", {w, cg, to});
    b.step({"U", {cur, "Hin", "Kh", "Hout"}, "b" + ll + "nm," + ll + "xy,xyz,pxz->bpnm", PlanStep::Op::None, "", 1.0, {}, 0,
            "weights mixed in head groups U [H, N, M]"});
    cur = "U";
  } else if (slot.post_mix) {
    b.weight("Cpost", "C′", NodeKind::Weight, "mix_post",
             "Post-softmax head mixing (mix_post [H, H], the official wposm): U_w = Σ_l C′[w, l]·P_l.", {w, l},
             static_cast<std::int64_t>(z.H) * z.H);
    b.step({"U", {"Cpost", cur}, "p" + ll + ",b" + ll + "nm->bpnm", PlanStep::Op::None, "", 1.0, {}, 0,
            "mixed weights U_w = Σ_l C′[w,l]·P_l [H, N, M]"});
    cur = "U";
  }
  const std::string maps = cur, wl(1, w.index);
  if (tied) {
    b.constant("Tv", "δ^V", "group_tie", "Copy tensor of the shared values: head w reads value head g = w/(H/G).", {w, g});
    b.step({"o", {maps, "v", "Tv"}, "b" + wl + "nm,bmke," + wl + "k->bn" + wl + "e", PlanStep::Op::None, "", 1.0, {}, 0,
            "heads o_w = U_w·V_g(w) [N, H, D]"});
  } else {
    b.step({"o", {maps, "v"}, "b" + wl + "nm,bm" + wl + "e->bn" + wl + "e", PlanStep::Op::None, "", 1.0, {}, 0,
            "heads o_w = U_w·V_w [N, H, D]"});
  }
  std::string o = "o";
  if (mt.group_norm) {
    b.step({"on", {"o"}, "bn" + wl + "e->bn" + wl + "e", PlanStep::Op::RmsNorm, "", 1.0, {}, 'e',
            "head norm: each head's D features divided by their root mean square (ε = 10⁻⁵)"});
    b.weight("Wn", "γ", NodeKind::Weight, "subln.weight",
             "The head norm's weight γ (subln.weight [D]), shared by all heads" +
                 std::string(mt.norm_rescale ? "; the output is also scaled by 1 − λᵢₙᵢₜ (first block)." : "."),
             {dvo}, z.D);
    b.step({"os", {"on", "Wn"}, "bn" + wl + "e,e->bn" + wl + "e", PlanStep::Op::None, "",
            mt.norm_rescale ? 1.0 - diffLambdaInit(0) : 1.0, {}, 0, "o_w = γ ⊙ RMSNorm(o_w)"});
    o = "os";
  }
  // W^O reads the head features e, or the elementwise gate's output leg j (the gate is a Hadamard
  // product: o[e]·σ(g[e]) with g[j] = Σ_e W^G[j, e]·o[e] + b^G[j], drawn with W^G between e and j).
  Leg outFeature = dvo;
  if (mt.out_gate != Gate::None) {
    const bool headwise = mt.out_gate == Gate::Headwise;
    const Leg gj = leg('j', "D", z.D);
    TensorNode bias;
    bias.id = "bgate";
    bias.label = "b^G";
    bias.kind = NodeKind::Weight;
    bias.binding = "gate.bias";
    bias.adds_to = "Wgate";
    if (headwise) {
      b.weight("Wgate", "W^G", NodeKind::Weight, "gate.weight",
               "Head gate weights (gate.weight [1, D] viewed [D], the official add_gating with gate_1d): each head is "
               "multiplied by one σ(o_h·w + b) of its own output.",
               {dvo}, z.D);
      bias.role = "Bias of the head gate (gate.bias [1], a scalar), added to its projection.";
      bias.parameters = 1;
      b.node(bias);
      b.step({"gl", {o, "Wgate"}, "bn" + wl + "e,e->bn" + wl, PlanStep::Op::None, "", 1.0, {"bgate"}, 0,
              "gate logits o_w·w + b (one per head)"});
      b.step({"sg", {"gl"}, "bn" + wl + "->bn" + wl, PlanStep::Op::Sigmoid, "", 1.0, {}, 0, "gates σ(·)"});
      b.step({"gated", {o, "sg"}, "bn" + wl + "e,bn" + wl + "->bn" + wl + "e", PlanStep::Op::None, "", 1.0, {}, 0,
              "gated heads o_w·σ(o_w·w + b)"});
    } else {
      b.weight("Wgate", "W^G", NodeKind::Weight, "gate.weight",
               "Head gate weights (gate.weight [D, D], the official add_gating without gate_1d): each feature of a "
               "head is multiplied by σ of a linear map of the head's own output.",
               {gj, dvo}, static_cast<std::int64_t>(z.D) * z.D);
      bias.role = "Bias of the head gate (gate.bias [D]), added to its projection.";
      bias.legs = {gj};
      bias.parameters = z.D;
      b.node(bias);
      b.step({"gl", {o, "Wgate"}, "bn" + wl + "e,je->bn" + wl + "j", PlanStep::Op::None, "", 1.0, {"bgate"}, 0,
              "gate logits o_w·W^Gᵀ + b^G"});
      b.step({"sg", {"gl"}, "bn" + wl + "j->bn" + wl + "j", PlanStep::Op::Sigmoid, "", 1.0, {}, 0, "gates σ(·)"});
      b.step({"gated", {o, "sg"}, "bn" + wl + "j,bn" + wl + "j->bn" + wl + "j", PlanStep::Op::None, "", 1.0, {}, 0,
              "gated heads o_w ⊙ σ(o_w·W^Gᵀ + b^G)"});
      outFeature = gj;
    }
    o = "gated";
  }
  b.outputProjection(o, n, {w, outFeature}, fo, "[o_1 … o_H]·W^O");
  return b.take(maps, {z.H, N, N});
}

}  // namespace tensorscope::spec::detail
