// Cost formulas pinned against hand counts (B=1, N=3, F=8 unless stated). See docs/cost-model.md.
#include <gtest/gtest.h>

#include "spec/cost_model.h"
#include "spec/validation.h"

using namespace tensorscope::spec;

namespace {
AttentionSpec tiny(const std::string& preset) {
  auto s = makeSpecPreset(preset);
  s.sizes.F = 8;
  s.sizes.H = 2;
  s.sizes.D = 4;
  s.sizes.R = s.core ? 8 : 4;
  s.sizes.P = 2;
  s.sizes.c = 2;
  s.sizes.seq_len = 3;
  if (s.core) s.core = makeCorePreset(s.core->preset, 2, 4);
  return s;
}
}  // namespace

TEST(CostModel, MhsaHandCount) {
  const auto c = estimateCost(tiny("mhsa"), 1, 3);
  // projections 4 x 2*3*8*8 = 1536; logits 2*2*9*4 + scale 18 = 162; softmax 5*18 = 90; P*v 144
  EXPECT_DOUBLE_EQ(c.forward_flops, 1932);
  // q,k,v 3*24, logits 18, P 18, o 24, y 24 = 156 floats
  EXPECT_DOUBLE_EQ(c.activation_bytes, 156 * 4);
  EXPECT_DOUBLE_EQ(c.largest_intermediate_bytes, 24 * 4);
  EXPECT_EQ(c.parameters, 256);
  auto b = tiny("mhsa");
  b.bias = true;
  EXPECT_EQ(parameterCount(b), 256 + 3 * 8 + 8);
}

TEST(CostModel, ThsaMhsaPresetCostsWhatMhsaCosts) {
  const auto m = estimateCost(tiny("mhsa"), 1, 3);
  const auto t = estimateCost(tiny("core:mhsa"), 1, 3);
  EXPECT_DOUBLE_EQ(t.forward_flops, m.forward_flops);
  EXPECT_DOUBLE_EQ(t.activation_bytes, m.activation_bytes);
  EXPECT_EQ(t.parameters, m.parameters);
  const auto r = estimateCost(tiny("skip_right"), 1, 3);
  EXPECT_EQ(r.parameters, m.parameters + 4);  // C1 is H x H
  EXPECT_DOUBLE_EQ(r.forward_flops, m.forward_flops + 2 * 2 * 2 * 9);  // head mixing 2*B*H*H*N*N
}

TEST(CostModel, DenseThsaHandCount) {
  const auto c = estimateCost(tiny("thsa"), 1, 3);
  // 1536 + q~ 8*3*8=192 + logits 2*8*9*8=1152 + scale 72 + softmax 360 + Omega 144
  EXPECT_DOUBLE_EQ(c.forward_flops, 3456);
  EXPECT_EQ(c.parameters, 256 + 64);
  // largest: q~ [B,R,N,R] = 192 floats vs logits [B,R,N,N] = 72 floats
  EXPECT_DOUBLE_EQ(c.largest_intermediate_bytes, 192 * 4);
}

TEST(CostModel, LowRankCostFollowsTheRank) {
  // C = U·Vᵀ through its factors: ρ base maps (2·B·ρ·N²·R) and the mixing U·G (2·B·R·ρ·N²), so the
  // logits cost 4·B·N²·R·ρ against the dense core's 2·B·N²·R².
  auto s = tiny("low_rank");
  const int R = s.sizes.R, N = 3, rank = s.core->rank;
  const auto c = estimateCost(s, 1, N);
  const auto d = estimateCost(tiny("thsa"), 1, N);
  const double denseLogits = 2.0 * R * N * N * R + double(R) * N * R;      // q̃ and q̃·kᵀ
  const double lowLogits = double(rank) * N * R + 4.0 * N * N * R * rank;  // q ⊙ V_j, G_j, U·G
  EXPECT_DOUBLE_EQ(c.forward_flops - d.forward_flops, lowLogits - denseLogits);
  EXPECT_EQ(c.parameters, d.parameters - R * R + 2 * R * rank);
  s.core->factors_trainable = false;
  EXPECT_EQ(estimateCost(s, 1, N).parameters, d.parameters - R * R);
  EXPECT_EQ(estimateCost(s, 1, N).frozen_parameters, 2 * R * rank);
}

TEST(CostModel, FrozenDenseEntriesAreCountedSeparately) {
  auto s = tiny("thsa");
  s.core->trainable_mask.assign(64, 0);
  s.core->trainable_mask[0] = 1;
  const auto c = estimateCost(s, 1, 3);
  EXPECT_EQ(c.parameters, 257);
  EXPECT_EQ(c.frozen_parameters, 63);
}

TEST(CostModel, OtherVariantParameterCounts) {
  EXPECT_EQ(parameterCount(tiny("tp")), 5 * 64);
  auto f = tiny("fixed_head");
  f.sizes.D = 16;  // d_p independent of F/H: 4*F*H*d_p
  EXPECT_EQ(parameterCount(f), 4 * 8 * 2 * 16);
  EXPECT_EQ(parameterCount(tiny("dimwise")), 3 * 8 * 4 + 2 * 16 + 8 * 8);  // d=R=4, c=2
  EXPECT_EQ(parameterCount(tiny("multilinear")), 3 * 8 * 4 + 2 * 4 + 8 * 9);  // N=3: wo is F x N^2
  EXPECT_EQ(parameterCount(tiny("heads_only")), parameterCount(tiny("mhsa")));
  EXPECT_EQ(parameterCount(tiny("skip_left")), 256 + 8);
}

TEST(CostModel, DimwiseIsLinearInN) {
  const auto s = makeSpecPreset("dimwise");
  const double a = estimateCost(s, 4, 512).forward_flops;
  const double b = estimateCost(s, 4, 4096).forward_flops;
  EXPECT_NEAR(b / a, 8.0, 0.01);  // only the d x d softmax is independent of N
  const auto m = makeSpecPreset("mhsa");
  EXPECT_GT(estimateCost(m, 4, 4096).forward_flops / estimateCost(m, 4, 512).forward_flops, 20.0);
}

TEST(CostModel, MultilinearMemoryIsLinearInNAndTimeQuadratic) {
  // The CPU formulation never forms T [B, N, N, N]: it keeps a, q, k, v [B, N, R] and y [B, N, F],
  // and the work tensors of one block of output features [N, Fb, B, R] (Fb = 1 once B·N·R exceeds
  // the block budget, as here: 64·1024·128 = 2^23 > 2^22).
  auto s = makeSpecPreset("multilinear");
  s.sizes.R = 128;
  s.sizes.F = 128;
  for (bool causal : {false, true}) {
    s.causal = causal;
    s.sizes.seq_len = 1024;
    const auto a = estimateCost(s, 64, 0);
    s.sizes.seq_len = 2048;
    const auto b = estimateCost(s, 64, 0);
    EXPECT_NEAR(b.activation_bytes / a.activation_bytes, 2.0, 1e-3);  // ḡ [R] and M [F_b, B, R] do not grow
    EXPECT_DOUBLE_EQ(b.largest_intermediate_bytes / a.largest_intermediate_bytes, 2.0);
    EXPECT_NEAR(b.forward_flops / a.forward_flops, 4.0, 0.05);  // 2·B·F·N²·R dominates
    // Far below the B·N³ values of T.
    EXPECT_LT(a.activation_bytes, 64.0 * 1024 * 1024 * 1024 * 4 / 100);
  }
}

TEST(CostModel, MultilinearHandCount) {
  // tiny: F = 8, R = 4, P = 2, N = 3, B = 1, no bias. Projections 3·(2·3·8·4) = 576, ḡ 8 (+5·8 for
  // the softmax), a = q ⊙ ḡ 12, y = Σ_r a·M 2·3·8·4 = 192.
  auto s = tiny("multilinear");
  ASSERT_FALSE(s.bias);
  const double g = 8 + (s.core_softmax ? 40 : 0);
  s.causal = false;  // X = Wo·v 2·8·9·4 = 576, M = Σ_j k·X 2·8·3·4 = 192
  EXPECT_DOUBLE_EQ(estimateCost(s, 1, 3).forward_flops, 576 + g + 12 + 576 + 192 + 192);
  s.causal = true;  // U 8·4·3·2 = 192, V 8·4·3·4 = 384, M 4·8·3·4 = 384
  EXPECT_DOUBLE_EQ(estimateCost(s, 1, 3).forward_flops, 576 + g + 12 + 192 + 384 + 384 + 192);
  // Kept: q, k, v, a 4·12, ḡ 4, y 24, and the work tensors (one block holds all 8 features: 3·8·4).
  EXPECT_DOUBLE_EQ(estimateCost(s, 1, 3, 1).activation_bytes, 48 + 4 + 24 + 3 * 96);
}

TEST(CostModel, SlotsHandCount) {
  // GQA (H = 2 heads, G = 1 group: MQA), F = 8, D = 4, N = 3: k, v projections 2*3*8*4 each.
  auto mqa = tiny("mhsa");
  mqa.slots.kv_groups = 1;
  const auto c = estimateCost(mqa, 1, 3);
  // q 384 + k 192 + v 192 + y 384 = 1152; logits 162, softmax 90, P*v 144 as MHSA
  EXPECT_DOUBLE_EQ(c.forward_flops, 1152 + 162 + 90 + 144);
  EXPECT_EQ(c.parameters, 64 + 32 + 32 + 64);
  // Talking heads: two H x H mixings of the [H, N, N] maps, 2*H*H*N*N FLOPs and H² parameters each.
  auto th = tiny("mhsa");
  th.slots.pre_mix = th.slots.post_mix = true;
  EXPECT_DOUBLE_EQ(estimateCost(th, 1, 3).forward_flops, 1932 + 2 * (2 * 2 * 2 * 9));
  EXPECT_EQ(estimateCost(th, 1, 3).parameters, 256 + 2 * 4);
  // Gate, headwise: x·Wgᵀ 2*3*8*2 = 96, sigmoid 4*3*2 = 24, product 3*8 = 24; F·H parameters.
  auto gated = tiny("mhsa");
  gated.slots.gate = Gate::Headwise;
  EXPECT_DOUBLE_EQ(estimateCost(gated, 1, 3).forward_flops, 1932 + 96 + 24 + 24);
  EXPECT_EQ(estimateCost(gated, 1, 3).parameters, 256 + 16);
  EXPECT_DOUBLE_EQ(estimateCost(gated, 1, 3).training_flops, 3 * (1932 + 96 + 24 + 24));
  // Differential attention (H = 2 heads, two maps of D = 4, values of 2D = 8; 2·H·D = 16):
  // q, k, v, y projections 4·2·3·8·16 = 3072; logits over 2H = 4 maps 2·4·9·4 + 36 = 324; softmax
  // 5·36 = 180; λ 4·4 + 4 = 20; A = P₁ − λP₂ 2·2·9 = 36; A·v 2·2·9·8 = 288; head norm 5·3·16 = 240.
  auto diff = tiny("mhsa");
  diff.slots.differential = true;
  EXPECT_DOUBLE_EQ(estimateCost(diff, 1, 3).forward_flops, 3072 + 324 + 180 + 20 + 36 + 288 + 240);
  EXPECT_EQ(estimateCost(diff, 1, 3).parameters, 8 * 8 * 2 * 4 + 6 * 4);  // 8·F·H·D + 6·D
  diff.causal = true;
  EXPECT_DOUBLE_EQ(estimateDecodeCost(diff, 9).cache_elements_per_token, 4 * 2 * 4);  // two keys and a 2D value
  // Multi-head latent attention (H = 2, D = 4, L = 6, r = 2, full W^Q; rows B·N = 3, M = 3):
  // naive: q 2·3·8·12 = 576; x·Wkv_aᵀ 2·3·8·8 = 384; kv_norm 4·3·6 = 72; rotary 3·3·2·2 + 3·3·2 = 54;
  // c·Wkv_bᵀ 2·3·6·16 = 576; logits 2·2·9·6 + 18 = 234; softmax 90; P·v 2·2·9·4 = 144; y 384.
  auto mla = tiny("mhsa");
  mla.slots.latent = {6, 0, 2, LatentOrder::Naive};
  EXPECT_DOUBLE_EQ(estimateCost(mla, 1, 3).forward_flops, 576 + 384 + 72 + 54 + 576 + 234 + 90 + 144 + 384);
  EXPECT_EQ(estimateCost(mla, 1, 3).parameters, 8 * 12 + 8 * 8 + 6 + 6 * 16 + 8 * 8);
  // absorbed: q̃ 2·3·2·4·6 = 288; logits over L + r: 2·2·9·8 + 18 = 306; P·c 2·2·9·6 = 216; ·W^UV 288.
  auto absorbed = mla;
  absorbed.slots.latent.order = LatentOrder::Absorbed;
  EXPECT_DOUBLE_EQ(estimateCost(absorbed, 1, 3).forward_flops,
                   576 + 384 + 72 + 54 + 288 + 306 + 90 + 216 + 288 + 384);
  EXPECT_EQ(estimateCost(absorbed, 1, 3).parameters, estimateCost(mla, 1, 3).parameters);
  // Decode caches: naive H·(2D + r) = 20 (per-head keys and values); absorbed L + r = 8.
  mla.causal = absorbed.causal = true;
  EXPECT_DOUBLE_EQ(estimateDecodeCost(mla, 9).cache_elements_per_token, 2 * (2 * 4 + 2));
  EXPECT_DOUBLE_EQ(estimateDecodeCost(absorbed, 9).cache_elements_per_token, 6 + 2);
  // With a query latent q = 3: x·Wq_aᵀ 2·3·8·3 = 144, q_norm 4·3·3 = 36, Wq_b 2·3·3·12 = 216.
  auto queryLatent = mla;
  queryLatent.causal = false;
  queryLatent.slots.latent.q_rank = 3;
  EXPECT_DOUBLE_EQ(estimateCost(queryLatent, 1, 3).forward_flops,
                   144 + 36 + 216 + 384 + 72 + 54 + 576 + 234 + 90 + 144 + 384);
  EXPECT_EQ(estimateCost(queryLatent, 1, 3).parameters, 8 * 3 + 3 + 3 * 12 + 8 * 8 + 6 + 6 * 16 + 8 * 8);
}

TEST(CostModel, TensorProductAttention) {
  // TPA (§8.7; H = 2, D = 4, F = 8, R_Q = 2, R_K = R_V = 1, contextual, rotary; rows B·N = 3, M = 3):
  // q: A 2·3·8·4 = 192, B 2·3·8·8 = 384, rotary 3·3·8 = 72, Σ_r A·B/R 2·3·2·2·4 + 3·8 = 120;
  // k: A 2·3·8·2 = 96, B 2·3·8·4 = 192, rotary 3·3·4 = 36, Σ 2·3·2·1·4 + 24 = 72; v: 96 + 192 + 72;
  // logits 2·2·9·4 + 18 = 162; softmax 90; P·v 144; y 384.
  auto tpa = tiny("mhsa");
  tpa.slots.tpa.q_rank = 2;
  tpa.slots.tpa.k_rank = 1;
  tpa.slots.tpa.v_rank = 1;
  ASSERT_TRUE(validate(tpa).empty()) << formatIssues(validate(tpa));
  EXPECT_DOUBLE_EQ(estimateCost(tpa, 1, 3).forward_flops,
                   192 + 384 + 72 + 120 + 96 + 192 + 36 + 72 + 96 + 192 + 72 + 162 + 90 + 144 + 384);
  // Paper Table 1: F·(R_Q + R_K + R_V)·(H + D) + F·H·D.
  EXPECT_EQ(estimateCost(tpa, 1, 3).parameters, 8 * 4 * (2 + 4) + 8 * 8);
  // KV cache (R_K + R_V)·(H + D) = 12; with constant head factors only the feature factors, (R_K + R_V)·D.
  tpa.causal = true;
  EXPECT_DOUBLE_EQ(estimateDecodeCost(tpa, 9).cache_elements_per_token, 2 * (2 + 4));
  // Decoding one token against 9 cached (M = 10 keys, from the cached factors): q 192 + 384 → per row
  // of one token 64 + 128 + 24 + 40; k, v projections of the new token 32 + 64 (+ rotary 12 for k);
  // k, v from the factors of the 10 keys 10·(2·2·1·4 + 8) = 240 each; logits 2·2·10·4 + 20 = 180,
  // softmax 100, P·v 160, y 128.
  EXPECT_DOUBLE_EQ(estimateDecodeCost(tpa, 9).flops,
                   64 + 128 + 24 + 40 + 32 + 64 + 12 + 240 + 32 + 64 + 240 + 180 + 100 + 160 + 128);
  auto constant = tpa;
  constant.slots.tpa.contextual_a = false;
  EXPECT_DOUBLE_EQ(estimateDecodeCost(constant, 9).cache_elements_per_token, 2 * 4);
  EXPECT_EQ(estimateCost(constant, 1, 3).parameters, 8 * 4 * 4 + 2 * 4 + 8 * 8);  // F·ΣR·D + H·ΣR + F·H·D
  // T6_kvonly: the queries are MHSA's (F·H·D), turned per head (3·3·8 = 72).
  auto kvOnly = tpa;
  kvOnly.causal = false;
  kvOnly.slots.tpa.q_rank = 0;
  EXPECT_EQ(estimateCost(kvOnly, 1, 3).parameters, 8 * 8 + 8 * 2 * (2 + 4) + 8 * 8);
  EXPECT_DOUBLE_EQ(estimateCost(kvOnly, 1, 3).forward_flops,
                   384 + 72 + 96 + 192 + 36 + 72 + 96 + 192 + 72 + 162 + 90 + 144 + 384);
  // Constant feature factors (Table 1, non-contextual B): no W_B projections, the constants b [R, D]
  // (ΣR·D = 16 parameters) turned per position (3·3·2·4 = 72 for q, 36 for k); the cache keeps the head
  // factors only, (R_K + R_V)·H = 4. T6's head norm: 4 flops an element of o (4·3·8 = 96) and γ [D].
  auto constantB = tpa;
  constantB.causal = false;
  constantB.slots.tpa.contextual_b = false;
  ASSERT_TRUE(validate(constantB).empty()) << formatIssues(validate(constantB));
  EXPECT_EQ(estimateCost(constantB, 1, 3).parameters, 8 * 2 * 4 + 4 * 4 + 8 * 8);
  EXPECT_DOUBLE_EQ(estimateCost(constantB, 1, 3).forward_flops,
                   192 + 72 + 120 + 96 + 36 + 72 + 96 + 72 + 162 + 90 + 144 + 384);
  constantB.causal = true;
  EXPECT_DOUBLE_EQ(estimateDecodeCost(constantB, 9).cache_elements_per_token, 2 * 2);
  auto normed = tpa;
  normed.causal = false;
  normed.slots.tpa.group_norm = true;
  EXPECT_EQ(estimateCost(normed, 1, 3).parameters, estimateCost(tpa, 1, 3).parameters + 4);
  EXPECT_DOUBLE_EQ(estimateCost(normed, 1, 3).forward_flops, estimateCost(tpa, 1, 3).forward_flops + 96);
}

TEST(CostModel, DecodingCostsAndCaches) {
  auto mhsa = tiny("mhsa");
  mhsa.causal = true;
  // One new token against M = 9 cached (10 keys): q, k, v, y projections 4*2*8*8 = 512;
  // logits 2*2*10*4 + 20 = 180; softmax 5*20 = 100; P*v 2*2*10*4 = 160.
  auto d = estimateDecodeCost(mhsa, 9);
  EXPECT_TRUE(d.supported);
  EXPECT_DOUBLE_EQ(d.flops, 512 + 180 + 100 + 160);
  EXPECT_DOUBLE_EQ(d.cache_elements_per_token, 2 * 2 * 4);  // 2·H·D
  auto mqa = mhsa;
  mqa.slots.kv_groups = 1;
  EXPECT_DOUBLE_EQ(estimateDecodeCost(mqa, 9).cache_elements_per_token, 2 * 4);  // 2·G·D
  EXPECT_DOUBLE_EQ(estimateDecodeCost(mqa, 9).flops, 128 + 64 + 64 + 128 + 180 + 100 + 160);
  auto thsa = tiny("thsa");
  thsa.causal = true;
  EXPECT_DOUBLE_EQ(estimateDecodeCost(thsa, 9).cache_elements_per_token, 2 * 8);  // 2·R
  // Decoding grows linearly in the cache for softmax layers.
  const double a = estimateDecodeCost(mhsa, 99).flops - estimateDecodeCost(mhsa, 49).flops;
  const double b = estimateDecodeCost(mhsa, 149).flops - estimateDecodeCost(mhsa, 99).flops;
  EXPECT_DOUBLE_EQ(a, b);
  // Linear THSA keeps a fixed state: no per-token cache, cost independent of M.
  auto lin = tiny("thsa_linear");
  lin.causal = true;
  const auto l = estimateDecodeCost(lin, 1000);
  EXPECT_EQ(l.cache_elements_per_token, 0);
  EXPECT_DOUBLE_EQ(l.state_elements, 8 * 8 + 8);
  EXPECT_DOUBLE_EQ(l.flops, estimateDecodeCost(lin, 10).flops);
  // Multilinear fixes N; a non-causal layer does not decode token by token.
  auto ml = tiny("multilinear");
  ml.causal = true;
  EXPECT_FALSE(estimateDecodeCost(ml, 9).supported);
  EXPECT_FALSE(estimateDecodeCost(tiny("mhsa"), 9).supported);
  EXPECT_FALSE(estimateDecodeCost(tiny("mhsa"), 9).note.empty());
}
