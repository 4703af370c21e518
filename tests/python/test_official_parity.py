"""Issue 41: the slot presets equal their official code on the same weights.

For each preset mqa, gqa, talking_heads, gated, gated_headwise (and gated attention combined with
GQA, whose official weight layout depends on the number of KV groups), tpa and tpa_kv_only (and TPA
with constant head factors), mta (and MTA with its other options), collaborative (and without its
content bias) this test

1. layer level: builds one layer with `tensorscope attention --spec S --seed 11 --save-weights W`
   (the talking-heads mixings, identity at init, get a random non-symmetric offset written back
   into W so that a transposed mapping would show), runs it with `tensorscope attention --weights W
   --input X --output Y`, maps W to the official module's state_dict exactly as
   docs/attention-variants.md section 8 documents, runs the PORT of the official forward below on
   the same x, and requires max|y_official - y_tensorscope| <= 1e-5 * max(1, max|y_tensorscope|)
   (float32 on both sides);
2. model level: trains a 2-layer decoder of the preset for a few steps (`tensorscope train`),
   exports it (`tensorscope export --format pytorch`), replaces the attention module of every
   block of the exported model by the official port (loaded with the mapped state_dict of that
   block) and requires its logits to equal the logits of `tensorscope infer` on the same tokens
   within the same relative tolerance;
3. negative controls (the test is not vacuous): for every case a plausible wrong mapping or
   head-group order (query head h reading KV group h % G instead of h // (H/G); K and V swapped;
   the TF talking-heads matrices not transposed; the gated q_proj stacked [Wq; Wg] instead of
   interleaved per KV group; the MTA kernels flipped) must make the same comparison fail by far (> 1e-3 relative).

The official modules are ported here in our own words, with the same semantics; each port cites the
repository, commit, file and lines it follows. Only the attention core is compared: Qwen3's q/k
RMSNorm and rotary embedding, llama-gqa's and RAM's rotary embedding are not ported (Tensorscope has
none of them in those layers; docs/attention-variants.md section 8 says which parts are compared);
T6's rotary on the feature factors is (section 8.7), with cos and sin in float32.

Rotary positions (section 9) are checked at the model level on their own: a GQA decoder with
model.positions "rotary" equals the Hugging Face / Qwen3 rotate_half convention and one with
"rotary_interleaved" equals DeepSeek-V3's apply_rotary_emb (complex pairs), each block's attention
replaced by the port on its own weights; the other convention must miss (negative control).

usage: test_official_parity.py TENSORSCOPE_BINARY WORK_DIR
Prints one line per check and "N passed, M failed"; exits 77 (CTest: skipped) without PyTorch.
"""
import copy
import importlib.util
import json
import math
import os
import shutil
import subprocess
import sys

SKIPPED = 77
try:
    import torch
except ImportError:  # pragma: no cover - depends on the machine
    print("skipped: PyTorch is not installed for %s (set TENSORSCOPE_PYTHON to a Python with torch)"
          % sys.executable)
    sys.exit(SKIPPED)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_py as st  # noqa: E402

REL_TOL = 1e-5        # parity: max |diff| <= REL_TOL * max(1, max |reference|)
WRONG_MIN = 1e-3      # a wrong mapping must miss by more than this (relative)
F_, H_, D_, N_ = 16, 4, 4, 6


# =============================================================================================
# Ports of the official forwards (float32, inference: no dropout).
# =============================================================================================

# --- qiuzh20/gated_attention, commit 49645df63aafe9e680bc44a9c0ca280d4aefa8e9 (modeling_qwen3.py
# --- unchanged since df42212f08f0ab69d3b26956d61feff730dc3804), file modeling_qwen3.py.

def qwen3_repeat_kv(states, n_rep, tile=False):
    """Port of `repeat_kv`, modeling_qwen3.py L224-233 (copied there from HF Llama): a [B, G, N, D]
    tensor gets a new axis of length n_rep after the group axis, is expanded along it and the two
    axes are merged, so the H = G*n_rep heads are [g0 x n_rep, g1 x n_rep, ...]: head h reads group
    h // n_rep. tile=True is the WRONG order (h % G), used only by the negative control."""
    b, g, n, d = states.shape
    if n_rep == 1:
        return states
    if tile:
        return states.repeat(1, n_rep, 1, 1)
    return states[:, :, None].expand(b, g, n_rep, n, d).reshape(b, g * n_rep, n, d)


def qwen3_causal_mask(n, dtype):
    """The additive 4-D mask the eager path receives: `_prepare_4d_causal_attention_mask_with_cache_
    position`, modeling_qwen3.py L1053-1117: the dtype's most negative finite value above the
    diagonal, zero elsewhere (no padding, no cache, no sliding window)."""
    mask = torch.full((n, n), torch.finfo(dtype).min, dtype=dtype)
    future = torch.arange(n)[None, :] > torch.arange(n)[:, None]
    return (mask * future)[None, None]


def qwen3_attention(sd, cfg, hidden, causal, tile_groups=False):
    """Port of `Qwen3Attention.forward`, modeling_qwen3.py L287-365 (eager path; the FA2 and SDPA
    classes L368-601 compute the same), with the q_proj layout of __init__ L271-280: the gate rows
    are fused into q_proj when a gate flag is set. Left out: q_norm/k_norm (use_qk_norm, L321-323),
    rotary embedding (L325-326) and the KV cache (L328-330). cfg: num_heads, num_key_value_heads, head_dim,
    headwise / elementwise (the flags headwise_attn_output_gate / elementwise_attn_output_gate,
    read L263-264; headwise wins if both are set)."""
    bsz, q_len, _ = hidden.shape
    H, G, D = cfg["num_heads"], cfg["num_key_value_heads"], cfg["head_dim"]
    r = H // G  # num_key_value_groups
    lin = torch.nn.functional.linear
    query = lin(hidden, sd["q_proj.weight"], sd.get("q_proj.bias"))
    key = lin(hidden, sd["k_proj.weight"], sd.get("k_proj.bias"))
    value = lin(hidden, sd["v_proj.weight"], sd.get("v_proj.bias"))
    gate_score = None
    if cfg["headwise"] or cfg["elementwise"]:
        # L304-316: the q_proj output viewed per KV group, then split into r query heads and r gate
        # scores (headwise) or r*D gate scores (elementwise) inside every group.
        per_group = query.view(bsz, q_len, G, -1)
        gate_width = r if cfg["headwise"] else r * D
        query, gate_score = torch.split(per_group, [r * D, gate_width], dim=-1)
        gate_score = gate_score.reshape(bsz, q_len, -1, 1 if cfg["headwise"] else D)
        query = query.reshape(bsz, q_len, -1, D).transpose(1, 2)
    else:
        query = query.view(bsz, q_len, -1, D).transpose(1, 2)
    key = key.view(bsz, q_len, -1, D).transpose(1, 2)
    value = value.view(bsz, q_len, -1, D).transpose(1, 2)
    key = qwen3_repeat_kv(key, r, tile_groups)        # L333-334
    value = qwen3_repeat_kv(value, r, tile_groups)
    weights = torch.matmul(query, key.transpose(2, 3)) / math.sqrt(D)   # L336
    if causal:                                                          # L337-339
        weights = weights + qwen3_causal_mask(q_len, weights.dtype)
    weights = torch.softmax(weights, dim=-1, dtype=torch.float32).to(query.dtype)  # L342
    out = torch.matmul(weights, value)                                  # L345
    out = out.transpose(1, 2).contiguous()                              # L353: [B, N, H, D]
    if gate_score is not None:                                          # L355-356
        out = out * torch.sigmoid(gate_score)
    out = out.reshape(bsz, q_len, -1)                                   # L358
    return lin(out, sd["o_proj.weight"], sd.get("o_proj.bias"))         # L360


# --- tensorgi/TPA, file model/llama-gqa.py, class CausalSelfAttention L63-110 (read at commit
# --- 4ce5744a56fae57044c5b06534aff185d80a2efc; the same lines at HEAD 3d7f51deb97b8f51cd799c632fe2e417a3c2662c).

def sdpa_math(q, k, v, is_causal):
    """PyTorch's documented reference of F.scaled_dot_product_attention (the math backend,
    aten/src/ATen/native/transformers/attention.cpp `_scaled_dot_product_attention_math`): scale
    1/sqrt(E), a -inf bias above the diagonal when is_causal, softmax, times v. (torch 1.13 has no
    F.scaled_dot_product_attention, so the reference is written out.)"""
    n, m = q.shape[-2], k.shape[-2]
    bias = torch.zeros(n, m, dtype=q.dtype)
    if is_causal:
        bias = bias.masked_fill(~torch.ones(n, m, dtype=torch.bool).tril(), float("-inf"))
    w = q @ k.transpose(-2, -1) * (1.0 / math.sqrt(q.shape[-1])) + bias
    return torch.softmax(w, dim=-1) @ v


def tpa_gqa_attention(sd, cfg, x, tile_groups=False):
    """Port of CausalSelfAttention.forward, llama-gqa.py L83-110 (weights L72-75): c_q/c_k/c_v (no
    bias), heads viewed [B, T, heads, D] (L85-87), transposed to [B, heads, T, D] (L91-93), K and V
    repeated with repeat_interleave(group_size, dim=1) (L95-96; group_size = query heads per KV head
    = H/G), SDPA with is_causal=True (L97-102), heads merged and c_proj (L108-109). Left out: the
    rotary embedding (L88-89) and the optional per-head RMSNorm (using_groupnorm, L104-106)."""
    B, T, _ = x.shape
    H, D, group_size = cfg["n_head"], cfg["head_dim"], cfg["group_size"]
    lin = torch.nn.functional.linear
    q = lin(x, sd["c_q.weight"]).view(B, T, H, D).transpose(1, 2)
    k = lin(x, sd["c_k.weight"]).view(B, T, H // group_size, D).transpose(1, 2)
    v = lin(x, sd["c_v.weight"]).view(B, T, H // group_size, D).transpose(1, 2)
    if tile_groups:  # WRONG order, negative control only
        k, v = k.repeat(1, group_size, 1, 1), v.repeat(1, group_size, 1, 1)
    else:
        k, v = torch.repeat_interleave(k, group_size, dim=1), torch.repeat_interleave(v, group_size, dim=1)
    y = sdpa_math(q, k, v, is_causal=True)
    y = y.transpose(1, 2).contiguous().reshape(B, T, -1)
    return lin(y, sd["c_proj.weight"])


# --- tensorgi/TPA, commit 3d7f51d (3d7f51d of "Update citation to NeurIPS 38"), files model/T6.py and
# --- model/T6_kvonly.py: Rotary L36-53, apply_rotary_emb L55-62, CPLinear.forward T6.py L107-138 /
# --- T6_kvonly.py L103-130, CausalSelfAttention.forward T6.py L163-185.

def t6_attention(sd, cfg, x, bf16_rotary=False):
    """Port of T6's CausalSelfAttention with its CPLinear: head factors A = W_A(x) viewed [B, T, H, R]
    and feature factors B = W_B(x) viewed [B, T, R, D] (L111-118); the rotary on B_q and B_k (L121-122;
    T6_kvonly: on the full queries c_q(x) and on B_k, L116-118), its halves x[..., :D/2], x[..., D/2:]
    turned as (x1 cos + x2 sin, -x1 sin + x2 cos) (L55-62) with inv_freq = base^(-arange(0, D, 2)/D)
    and angles t*inv_freq (L40, L49-50); q = bmm(A_q, B_q)/R_Q, k, v likewise (L134-136); SDPA with
    is_causal=True (L172-177); heads merged, c_proj (L183-184). The official Rotary caches cos and sin
    in bfloat16 (L51-52): bf16_rotary=True does too (reported, not required); the parity check keeps
    them in float32, the precision of the rest. The optional per-head RMSNorm (using_groupnorm,
    L157-161, L179-181; off in every config of the repository) runs when sd holds subln.weight: T6's
    RMSNorm (L13-34) normalises y [B, H, T, D] over D in float32 with eps 1e-5, casts back and scales
    by the weight [D]. Constant head factors (contextual_a false) and constant feature factors
    (contextual_b false) are not in T6: sd then holds A_* [H, R] instead of W_A_*, B_* [R, D]
    instead of W_B_*, expanded over the tokens as T6 would use a token's factor."""
    B, T, _ = x.shape
    H, D, base = cfg["n_head"], cfg["head_dim"], cfg["base"]
    lin = torch.nn.functional.linear
    inv_freq = 1.0 / (base ** (torch.arange(0, D, 2).float() / D))
    freqs = torch.outer(torch.arange(T).float(), inv_freq)
    cos, sin = freqs.cos(), freqs.sin()
    if bf16_rotary:
        cos, sin = cos.bfloat16().float(), sin.bfloat16().float()
    cos, sin = cos[None, :, None, :], sin[None, :, None, :]

    def rotary(u):
        d = u.shape[3] // 2
        x1, x2 = u[..., :d], u[..., d:]
        return torch.cat([x1 * cos + x2 * sin, x1 * (-sin) + x2 * cos], 3) if cfg["rope"] else u

    def factors(v, R, turn):
        if ("c_qkv.W_A_%s.weight" % v) in sd:
            a = lin(x, sd["c_qkv.W_A_%s.weight" % v]).view(B * T, H, R)
        else:
            a = sd["c_qkv.A_%s" % v].expand(B * T, H, R)
        if ("c_qkv.W_B_%s.weight" % v) in sd:
            b = lin(x, sd["c_qkv.W_B_%s.weight" % v]).view(B, T, R, D)
        else:
            b = sd["c_qkv.B_%s" % v].expand(B, T, R, D)
        if turn:
            b = rotary(b)
        return torch.bmm(a, b.reshape(B * T, R, D)).div(R).view(B, T, H, D)

    if "c_qkv.c_q.weight" in sd:  # T6_kvonly
        q = rotary(lin(x, sd["c_qkv.c_q.weight"]).view(B, T, H, D))
    else:
        q = factors("q", cfg["q_rank"], True)
    k, v = factors("k", cfg["rank_k"], True), factors("v", cfg["rank_v"], False)
    y = sdpa_math(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=True)
    if "subln.weight" in sd:  # self.subln(y): RMSNorm._norm(y.float()).type_as(y) * weight
        yf = y.float()
        y = (yf * torch.rsqrt(yf.pow(2).mean(-1, keepdim=True) + 1e-5)).type_as(y) * sd["subln.weight"]
    return lin(y.transpose(1, 2).contiguous().view(B, T, H * D), sd["c_proj.weight"])


# --- tensorflow/models, commit 00b830c7ca641413f37e5147cf059c89f79b0e8e, file
# --- official/nlp/modeling/layers/talking_heads_attention.py, class TalkingHeadsAttention (a
# --- tf.keras.layers.MultiHeadAttention): _build_attention L61-104, _compute_attention L106-157.

# The base class is Keras 2's MultiHeadAttention (tf.keras at the TF 2.x versions tensorflow/models
# targets; read in tf_keras' src/layers/attention/multi_head_attention.py): `_build_proj_equation`
# gives the projections, `_build_attention_equation(rank=4, attn_axes=(1,))` the equations
# 'aecd,abcd->acbe' (key, query -> scores) and 'acbe,aecd->abcd' (scores, value), and Keras'
# Softmax layer adds (1 - mask) * _large_compatible_negative = -1e9 (float32) to masked scores.

def keras_dense(x, kernel, bias, equation):
    """Keras MultiHeadAttention's EinsumDense projections: query/key/value kernels [F, H, D] with
    'abc,cde->abde' and bias [H, D] (bias_axes 'de'); the output kernel [H, D, F] with
    'abcd,cde->abe', bias [F]; use_bias (default True) puts a bias on all four."""
    y = torch.einsum(equation, x, kernel)
    return y if bias is None else y + bias


def tf_talking_heads_attention(sd, x, causal):
    """Port of the layer's call for self-attention (query = value = key = x) on [B, T, F] inputs
    (attention_axes = (1,), so the talking-heads einsum built L72-87 is 'abcd,be->aecd': the weight
    is indexed [from-head, to-head]). _compute_attention L130-157: scores = einsum(key, query)
    ([B, H, T, S]), times 1/sqrt(key_dim) (L134-135), pre-softmax mixing (L138-139), masked softmax
    (L143; Keras' Softmax adds (1 - mask) * -1e9 for float32), post-softmax mixing (L146-147),
    dropout (identity at inference, L151-152), einsum with the values (L155-156); then the output
    projection of the base class."""
    get = lambda n: sd.get(n)  # noqa: E731
    q = keras_dense(x, sd["query/kernel"], get("query/bias"), "abc,cde->abde")   # [B, T, H, D]
    k = keras_dense(x, sd["key/kernel"], get("key/bias"), "abc,cde->abde")       # [B, S, H, D]
    v = keras_dense(x, sd["value/kernel"], get("value/bias"), "abc,cde->abde")
    key_dim = q.shape[-1]
    scores = torch.einsum("aecd,abcd->acbe", k, q)                 # Keras' _dot_product_equation
    scores = scores * (1.0 / math.sqrt(float(key_dim)))
    scores = torch.einsum("abcd,be->aecd", scores, sd["pre_softmax_weight"])
    if causal:
        T = x.shape[1]
        mask = torch.ones(T, T).tril()  # 1 = may attend
        scores = scores + (1.0 - mask) * -1e9
    scores = torch.softmax(scores, dim=-1)
    scores = torch.einsum("abcd,be->aecd", scores, sd["post_softmax_weight"])
    out = torch.einsum("acbe,aecd->abcd", scores, v)               # Keras' _combine_equation
    return keras_dense(out, sd["attention_output/kernel"], get("attention_output/bias"), "abcd,cde->abe")


# --- facebookresearch/RAM, commit e6f051fbcfaef4cab69bf2ea1b25f500f94c0c64, file
# --- projects/mta/mta_transformer.py, class Attention (L152-), the talking-heads configuration of
# --- projects/mta/configs/*_talking_heads.yaml: use_mta, pre_sm_linear_head, head_kernel_size = H.

def ram_talking_heads_attention(sd, cfg, x):
    """Port of Attention.forward, use_mta branch, L303-387 and L435: wq/wk/wv/wo without bias
    (L176-196), heads viewed [B, S, heads, D] (L319-321), K/V repeat_kv (L334-335; it is
    facebookresearch/lingua lingua/transformer.py L62-73 at commit 613018aae799cfb9726fcc401a7880be20e0f4f2:
    [B, S, G, D] expanded after the group axis, so head h reads h // heads_per_group), transposed (L338-340), scores =
    q k^T * rsqrt(head_dim) (L343-345), pre-softmax mixing by the nn.Linear wpsm applied to the
    head axis (L357), the causal -inf mask of _update_mask (L439-446) added after it (L360), float32
    softmax (L362, normalize_attention L286-288), the post-softmax head convolution with one
    [H, H] kernel (_head_convolution L537-552: scores^T @ head_kernel[0], so head_kernel is indexed
    [from, to]), dropout (identity at inference, L382), scores @ v (L387), wo (L435). Left out: the
    rotary embedding (L322), the KV cache, the query/key MTA convolutions (None in the talking-heads configs)."""
    B, T, _ = x.shape
    H, G, D = cfg["n_heads"], cfg["n_kv_heads"], cfg["head_dim"]
    lin = torch.nn.functional.linear
    xq = lin(x, sd["wq.weight"]).view(B, T, H, D)
    xk = lin(x, sd["wk.weight"]).view(B, T, G, D)
    xv = lin(x, sd["wv.weight"]).view(B, T, G, D)
    rep = H // G
    xk = xk[:, :, :, None].expand(B, T, G, rep, D).reshape(B, T, H, D)
    xv = xv[:, :, :, None].expand(B, T, G, rep, D).reshape(B, T, H, D)
    xq, xk, xv = (e.transpose(1, 2) for e in (xq, xk, xv))
    mask = torch.triu(torch.full((T, T), float("-inf")), diagonal=1)
    scores = torch.matmul(xq, xk.transpose(2, 3)) * torch.rsqrt(torch.tensor(float(D)))
    scores = lin(scores.transpose(1, -1), sd["wpsm.weight"]).transpose(1, -1)
    scores = scores + mask
    scores = torch.softmax(scores.float(), dim=-1).type_as(xq)
    kernel = sd["head_kernel"]  # [H // head_kernel_size, k, k] = [1, H, H]
    chunks = scores.reshape(B, H // kernel.shape[1], kernel.shape[1], T, -1)
    mixed = torch.empty_like(chunks)
    for i in range(kernel.shape[0]):
        mixed[:, i] = torch.matmul(chunks[:, i].transpose(1, -1), kernel[i]).transpose(1, -1)
    scores = mixed.reshape(B, H, T, -1)
    out = torch.matmul(scores, xv).transpose(1, 2)
    return lin(out.reshape(B, T, H * D), sd["wo.weight"])


# --- facebookresearch/RAM, commit e6f051fbcfaef4cab69bf2ea1b25f500f94c0c64, file
# --- projects/mta/mta_transformer.py, class Attention, the MTA configuration of
# --- projects/mta/configs/*_mta.yaml (use_mta with the key-query convolutions, pre_sm_linear_head,
# --- head_kernel_size, after_sm kernels, pad_key, group_norm, add_gating / gate_1d).

def ram_mta_attention(sd, cfg, x, layer_id=0):
    """Port of Attention.forward, use_mta branch (L303-436) with _update_mask (L439-462, the causal
    branch: mask = triu(-inf, 1) repeated over batch and heads), _mta_convolution (L464-535, one cut:
    no chunk_start_ids outside generation), _head_convolution (L537-552) and RMSNorm (L33-86):
    wq/wk/wv/wo without bias (L176-196), repeat_kv (lingua, head h reads h // heads_per_group),
    scores = q k^T * rsqrt(head_dim) (L343-345); if mta_kernel: masked scores set to 0 (L472), padded
    by (c_q - 1) queries above and the keys as pad_key (L497-512), F.conv2d(groups=n_heads) (L513-518);
    wpsm over the head axis (L357); + mask (L360); float softmax (L362); if mta_kernel_after_sm: the
    same convolution then where(mask == -inf, 0) (L364-372); head convolution or wposm (L374-380);
    scores @ v (L387); subln = RMSNorm(head_dim, eps 1e-5) over each head, optionally times
    1 - lambda_init(layer_id) (L423-424, L68-79); output * sigmoid(gate(output)) (L426-427); wo (L435).
    Left out: the rotary embedding (L322; Tensorscope's rotary is a model option, section 9), the KV
    cache and the chunked generation masks, dropout (identity at inference), the attention-map cache."""
    B, T, _ = x.shape
    H, G, D = cfg["n_heads"], cfg["n_kv_heads"], cfg["head_dim"]
    lin = torch.nn.functional.linear
    xq = lin(x, sd["wq.weight"]).view(B, T, H, D)
    xk = lin(x, sd["wk.weight"]).view(B, T, G, D)
    xv = lin(x, sd["wv.weight"]).view(B, T, G, D)
    rep = H // G
    xk = xk[:, :, :, None].expand(B, T, G, rep, D).reshape(B, T, H, D)
    xv = xv[:, :, :, None].expand(B, T, G, rep, D).reshape(B, T, H, D)
    xq, xk, xv = (e.transpose(1, 2) for e in (xq, xk, xv))
    mask = torch.triu(torch.full((T, T), float("-inf")), diagonal=1).type_as(xq).repeat(B, H, 1, 1)

    def mta_convolution(scores, kernel):
        scores = scores.clone()
        scores[mask == float("-inf")] = 0
        n_loc, head_sz, qdim, kdim = kernel.shape
        if cfg["pad_key"] == "left":
            padded = torch.nn.functional.pad(scores, (kdim - 1, 0, qdim - 1, 0), value=0.0)
        elif cfg["pad_key"] == "right":
            padded = torch.nn.functional.pad(scores, (0, kdim - 1, qdim - 1, 0), value=0.0)
        else:
            assert (kdim - 1) % 2 == 0
            padded = torch.nn.functional.pad(scores, ((kdim - 1) // 2, (kdim - 1) // 2, qdim - 1, 0), value=0.0)
        return torch.nn.functional.conv2d(padded, kernel, padding=0, groups=H // head_sz)

    scores = torch.matmul(xq, xk.transpose(2, 3)) * torch.rsqrt(torch.tensor(float(D)))
    if "mta_kernel" in sd:
        scores = mta_convolution(scores, sd["mta_kernel"])
    if "wpsm.weight" in sd:
        scores = lin(scores.transpose(1, -1), sd["wpsm.weight"]).transpose(1, -1)
    scores = scores + mask
    scores = torch.softmax(scores.float(), dim=-1).type_as(xq)
    if "mta_kernel_after_sm" in sd:
        scores = mta_convolution(scores, sd["mta_kernel_after_sm"])
        scores = torch.where(mask == float("-inf"), 0.0, scores)
    if "head_kernel" in sd:
        kernel = sd["head_kernel"]  # [H // head_kernel_size, k, k], indexed [group, from, to]
        chunks = scores.reshape(B, H // kernel.shape[1], kernel.shape[1], T, -1)
        mixed = torch.empty_like(chunks)
        for i in range(kernel.shape[0]):
            mixed[:, i] = torch.matmul(chunks[:, i].transpose(1, -1), kernel[i]).transpose(1, -1)
        scores = mixed.reshape(B, H, T, -1)
    elif "wposm.weight" in sd:
        scores = lin(scores.transpose(1, -1), sd["wposm.weight"]).transpose(1, -1)
    output = torch.matmul(scores, xv).transpose(1, 2)  # [B, S, H, D]
    if "subln.weight" in sd:
        normed = output.float()
        output = (normed * torch.rsqrt(normed.pow(2).mean(-1, keepdim=True) + 1e-5)).type_as(output) * sd["subln.weight"]
        if cfg.get("layer_norm_rescale"):
            output = output * (1 - (0.8 - 0.6 * math.exp(-0.3 * layer_id)))
    if "gate.weight" in sd:
        output = output * torch.sigmoid(lin(output, sd["gate.weight"], sd["gate.bias"]))
    return lin(output.reshape(B, T, H * D), sd["wo.weight"])


# =============================================================================================
# Weight mappings Tensorscope -> official state_dict (docs/attention-variants.md section 8).
# w: Tensorscope's weights of one layer (wq.weight, ..., mix_pre, mix_post), without prefix.
# =============================================================================================

# --- epfml/collaborative-attention, commit 5b05408, src/collaborative_attention/collaborative_attention.py,
# --- class CollaborativeAttention (L13-): use_dense_layer, no layer norm, no head mask, eval (no dropout).
def collaborative_attention(sd, cfg, x, causal):
    """Port of CollaborativeAttention.forward (L80-139): query, key = Linear(dim_input,
    dim_key_query_all, bias=False) (L63-64); mixed_query = query[..., None, :, :] * mixing[..., :, None, :]
    (L99), the key broadcast over heads (L103), scores = mixed_query . mixed_key^T (L106); the content
    bias Linear(dim_input, num_heads, bias=False) of the key sequence transposed to [B, heads, 1, to]
    and added (L110-113); divided by sqrt(attention_head_size) with attention_head_size =
    dim_key_query_all / num_heads, not an integer in general (L57-59, L115); + attention_mask, here
    the additive causal mask (L116-117); softmax (L120); the value Linear(dim_input, dim_value_all)
    with bias split into heads (L130-131, transpose_for_scores L145-148); context merged (L132-135);
    dense = Linear(dim_value_all, dim_output) with bias (L69-71, L137)."""
    B, N, _ = x.shape
    H, Dk = cfg["num_attention_heads"], cfg["dim_key_query_all"]
    query = x @ sd["query.weight"].t()
    key = x @ sd["key.weight"].t()
    mixed_query = query[..., None, :, :] * sd["mixing"][..., :, None, :]
    mixed_key = key[..., None, :, :]
    scores = torch.matmul(mixed_query, mixed_key.transpose(-1, -2))
    content_bias = x @ sd["content_bias.weight"].t()
    scores = scores + content_bias.transpose(-1, -2).unsqueeze(-2)
    scores = scores / math.sqrt(Dk / H)
    if causal:
        scores = scores + torch.full((N, N), -math.inf).triu(1)
    probs = torch.softmax(scores, dim=-1)
    value = x @ sd["value.weight"].t() + sd["value.bias"]
    value = value.view(B, N, H, -1).permute(0, 2, 1, 3)
    context = torch.matmul(probs, value).permute(0, 2, 1, 3).contiguous().view(B, N, -1)
    return context @ sd["dense.weight"].t() + sd["dense.bias"]


def to_collaborative(w, H, D, wrong=False):
    """Collaborative attention (section 8.9): wq -> query, wk -> key, mixing and content_bias as they
    are, wv -> value, wo -> dense; the official value and dense always have a bias (zeros when the
    spec has none), its content bias is always there (zeros with content_bias false). wrong: the
    value rows read [D, H] (head-minor) instead of [H, D]."""
    F = w["wq.weight"].shape[1]
    value = w["wv.weight"]
    if wrong:
        value = value.view(H, D, F).transpose(0, 1).reshape(H * D, F)
    return {"query.weight": w["wq.weight"], "key.weight": w["wk.weight"], "mixing": w["mixing"],
            "content_bias.weight": w.get("content_bias.weight", torch.zeros(H, F)),
            "value.weight": value, "value.bias": w.get("wv.bias", torch.zeros(H * D)),
            "dense.weight": w["wo.weight"], "dense.bias": w.get("wo.bias", torch.zeros(F))}


def to_qwen3(w, H, G, D, gate, stacked=False):
    """q_proj rows per KV group g: [its r query heads' D rows each, then its r gate rows (headwise)
    or r*D gate rows (elementwise)]; with C the group's block size and h = g*r + j:
    q_proj[g*C + j*D + d] = wq[h*D + d], q_proj[g*C + r*D + j] = wg[h] (headwise),
    q_proj[g*C + r*D + j*D + d] = wg[h*D + d] (elementwise). stacked=True is the WRONG layout
    [wq; wg] (negative control)."""
    sd = {}
    r = H // G
    for t in ("weight", "bias"):
        q = w.get("wq." + t)
        if q is None:
            continue
        if gate == "none":
            sd["q_proj." + t] = q
        elif stacked:
            sd["q_proj." + t] = torch.cat([q, w["wg." + t]], 0)
        else:
            g_rows = w["wg." + t]
            per = 1 if gate == "headwise" else D
            q_groups = q.reshape(G, r * D, *q.shape[1:])
            g_groups = g_rows.reshape(G, r * per, *g_rows.shape[1:])
            sd["q_proj." + t] = torch.cat([q_groups, g_groups], 1).reshape(-1, *q.shape[1:])
        for ts, off in (("wk", "k_proj"), ("wv", "v_proj"), ("wo", "o_proj")):
            sd[off + "." + t] = w[ts + "." + t]
    return sd


def to_tpa(w):
    return {"c_q.weight": w["wq.weight"], "c_k.weight": w["wk.weight"], "c_v.weight": w["wv.weight"],
            "c_proj.weight": w["wo.weight"]}


def to_t6(w, H, wrong=False):
    """Contract section 8.7: W_A_*/W_B_*.weight -> c_qkv.W_A_*/W_B_*.weight (the same [H*R, F] and
    [R*D, F] layouts), A_* -> c_qkv.A_* and B_* -> c_qkv.B_* (constant factors, not in T6),
    wq.weight -> c_qkv.c_q.weight (T6_kvonly), subln.weight -> subln.weight (using_groupnorm),
    wo.weight -> c_proj.weight. wrong=True reads the head-factor rows as [R, H] instead of [H, R]
    (negative control)."""
    sd = {"c_proj.weight": w["wo.weight"]}
    if "subln.weight" in w:
        sd["subln.weight"] = w["subln.weight"]
    if "wq.weight" in w:
        sd["c_qkv.c_q.weight"] = w["wq.weight"]
    for v in ("q", "k", "v"):
        if "W_B_%s.weight" % v in w:
            sd["c_qkv.W_B_%s.weight" % v] = w["W_B_%s.weight" % v]
        if "W_A_%s.weight" % v in w:
            a = w["W_A_%s.weight" % v]
            R = a.shape[0] // H
            sd["c_qkv.W_A_%s.weight" % v] = a.view(R, H, -1).transpose(0, 1).reshape(H * R, -1) if wrong else a
        if "A_%s" % v in w:
            a = w["A_%s" % v]
            sd["c_qkv.A_%s" % v] = a.reshape(a.shape[1], a.shape[0]).t() if wrong else a
        if "B_%s" % v in w:
            sd["c_qkv.B_%s" % v] = w["B_%s" % v]
    return sd


def to_tf(w, H, D, transpose=True):
    """Keras kernels are [in, out] with the head axes split: query/kernel [F, H, D] = wq^T reshaped,
    attention_output/kernel [H, D, F] = wo^T reshaped; pre/post_softmax_weight [from, to] =
    mix_pre^T, mix_post^T (transpose=False is the WRONG mapping, negative control)."""
    F = w["wq.weight"].shape[1]
    sd = {}
    for ts, name in (("wq", "query"), ("wk", "key"), ("wv", "value")):
        sd[name + "/kernel"] = w[ts + ".weight"].t().reshape(F, H, D)
        if ts + ".bias" in w:
            sd[name + "/bias"] = w[ts + ".bias"].reshape(H, D)
    sd["attention_output/kernel"] = w["wo.weight"].t().reshape(H, D, F)
    if "wo.bias" in w:
        sd["attention_output/bias"] = w["wo.bias"]
    sd["pre_softmax_weight"] = w["mix_pre"].t() if transpose else w["mix_pre"]
    sd["post_softmax_weight"] = w["mix_post"].t() if transpose else w["mix_post"]
    return sd


def to_ram(w):
    """wpsm is an nn.Linear over heads, [to, from] like mix_pre; head_kernel[0] is [from, to]."""
    return {"wq.weight": w["wq.weight"], "wk.weight": w["wk.weight"], "wv.weight": w["wv.weight"],
            "wo.weight": w["wo.weight"], "wpsm.weight": w["mix_pre"], "head_kernel": w["mix_post"].t()[None]}


def to_ram_mta(w, wrong=False, post_as_head_kernel=True):
    """MTA (section 8.8): wq, wk, wv, wo as they are; mta_kernel and mta_kernel_after_sm [H, c_q, c_k]
    -> [H, 1, c_q, c_k] (the official depthwise conv2d weight); mix_pre -> wpsm.weight ([to, from] on
    both sides); mix_post -> head_kernel = mix_post^T[None] (head_kernel_size = n_heads, the configs'
    choice: [1, from, to]) or -> wposm.weight as it is (post_sm_linear_head); head_kernel (groups),
    subln.weight, gate.weight, gate.bias as they are. wrong: the kernels flipped on both axes (a true
    convolution instead of F.conv2d's cross-correlation) and head_kernel read [to, from]."""
    sd = {}
    for k, v in w.items():
        if k in ("mta_kernel", "mta_kernel_after_sm"):
            sd[k] = (v.flip(1, 2) if wrong else v)[:, None]
        elif k == "head_kernel":
            sd[k] = v.transpose(1, 2) if wrong else v
        elif k == "mix_pre":
            sd["wpsm.weight"] = v
        elif k == "mix_post" and post_as_head_kernel:
            sd["head_kernel"] = (v if wrong else v.t())[None]
        elif k == "mix_post":
            sd["wposm.weight"] = v.t() if wrong else v
        else:
            sd[k] = v
    return sd


def swap_kv(w):
    w = dict(w)
    for t in ("weight", "bias"):
        if "wk." + t in w:
            w["wk." + t], w["wv." + t] = w["wv." + t], w["wk." + t]
    return w


# =============================================================================================
# The cases: preset -> official forwards, each with its right and wrong use.
# =============================================================================================

def officials(spec):
    """[(name, f(w, x, causal, wrong) -> y, supports_bias, supports_noncausal)] for a spec; `wrong`
    selects the case's negative control."""
    z, slots = spec["sizes"], spec["slots"]
    H, D = z["H"], z["D"]
    if slots.get("tpa"):
        t = slots["tpa"]
        cfg_t6 = {"n_head": H, "head_dim": D, "q_rank": t.get("q_rank", 0), "rank_k": t["k_rank"], "rank_v": t["v_rank"],
                  "rope": t.get("rope", True), "base": t.get("rope_base", 10000.0)}
        return [("tensorgi/TPA T6 CPLinear + CausalSelfAttention",
                 lambda w, x, causal, wrong: t6_attention(to_t6(w, H, wrong), cfg_t6, x), False, False)]
    if slots.get("collaborative"):
        c = slots["collaborative"]
        cfg_c = {"num_attention_heads": H, "dim_key_query_all": c["key_dim"]}
        return [("epfml/collaborative-attention CollaborativeAttention",
                 lambda w, x, causal, wrong: collaborative_attention(to_collaborative(w, H, D, wrong), cfg_c, x, causal),
                 True, True)]
    G = slots["kv_groups"] or H
    if slots.get("mta"):
        m = slots["mta"]
        cfg_m = {"n_heads": H, "n_kv_heads": G, "head_dim": D, "pad_key": m.get("pad", "both"),
                 "layer_norm_rescale": m.get("norm_rescale", False)}
        # The full post-softmax mixing as the configs' head convolution over all heads, or (the
        # mta_wposm case, no pre-softmax convolution) as post_sm_linear_head.
        as_kernel = m.get("q_kernel", 0) > 0
        return [("facebookresearch/RAM Attention (MTA%s)" % ("" if as_kernel else ", wposm"),
                 lambda w, x, causal, wrong: ram_mta_attention(to_ram_mta(w, wrong, as_kernel), cfg_m, x), False, False)]
    gate = slots["gate"]
    out = []
    if slots["pre_mix"] or slots["post_mix"]:
        out.append(("tensorflow/models TalkingHeadsAttention",
                    lambda w, x, causal, wrong: tf_talking_heads_attention(to_tf(w, H, D, transpose=not wrong), x, causal),
                    True, True))
        out.append(("facebookresearch/RAM Attention (talking-heads config)",
                    lambda w, x, causal, wrong: ram_talking_heads_attention(
                        to_ram({k: (v.t() if wrong and k.startswith("mix") else v) for k, v in w.items()}),
                        {"n_heads": H, "n_kv_heads": G, "head_dim": D}, x),
                    False, False))
        return out
    cfg = {"num_heads": H, "num_key_value_heads": G, "head_dim": D,
           "headwise": gate == "headwise", "elementwise": gate == "elementwise"}

    def qwen3(w, x, causal, wrong):
        if gate != "none":  # wrong: [wq; wg] stacked instead of interleaved per KV group
            return qwen3_attention(to_qwen3(w, H, G, D, gate, stacked=wrong), cfg, x, causal)
        if G == 1:          # MQA has one group, so its order cannot be wrong: swap K and V instead
            return qwen3_attention(to_qwen3(swap_kv(w) if wrong else w, H, G, D, gate), cfg, x, causal)
        return qwen3_attention(to_qwen3(w, H, G, D, gate), cfg, x, causal, tile_groups=wrong)
    out.append(("qiuzh20/gated_attention Qwen3Attention", qwen3, True, True))
    if gate == "none":
        def tpa(w, x, causal, wrong):
            cfg_t = {"n_head": H, "head_dim": D, "group_size": H // G}
            if G == 1:
                return tpa_gqa_attention(to_tpa(swap_kv(w) if wrong else w), cfg_t, x)
            return tpa_gqa_attention(to_tpa(w), cfg_t, x, tile_groups=wrong)
        out.append(("tensorgi/TPA llama-gqa CausalSelfAttention", tpa, False, False))
    return out


WRONG_NAMES = {"mqa": "K and V swapped", "gqa": "head h reads group h % G",
               "talking_heads": "mixings not transposed", "gated": "q_proj stacked [Wq; Wg]",
               "gated_headwise": "q_proj stacked [Wq; Wg]", "gated_gqa": "q_proj stacked [Wq; Wg]",
               "gated_headwise_gqa": "q_proj stacked [Wq; Wg]",
               "tpa": "head factors read [R, H]", "tpa_kv_only": "head factors read [R, H]",
               "tpa_constant": "head factors read [R, H]", "tpa_groupnorm": "head factors read [R, H]",
               "tpa_constant_b": "head factors read [R, H]",
               "mta": "kernels flipped, head_kernel not transposed",
               "mta_variant": "kernels flipped, head_kernel read [to, from]",
               "mta_wposm": "kernel flipped, wposm transposed",
               "collaborative": "value heads read [D, H]", "collaborative_plain": "value heads read [D, H]"}


def run(cmd):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        raise RuntimeError("%s failed (%d): %s%s" % (" ".join(cmd), p.returncode, p.stdout[-1500:], p.stderr[-1500:]))
    return p.stdout


def preset_specs(binary):
    """(case name, spec) for the five presets at small sizes, plus the gates with G = 2."""
    out = []
    for name in ("mqa", "gqa", "talking_heads", "gated", "gated_headwise"):
        spec = json.loads(run([binary, "spec", "preset", name]))
        spec["sizes"].update({"F": F_, "H": H_, "D": D_, "R": H_ * D_, "seq_len": N_})
        out.append((name, spec))
    for name in ("gated", "gated_headwise"):
        spec = copy.deepcopy(dict(out)[name])
        spec["slots"]["kv_groups"] = 2
        out.append((name + "_gqa", spec))
    for name in ("tpa", "tpa_kv_only"):  # T6 and T6_kvonly (section 8.7)
        spec = json.loads(run([binary, "spec", "preset", name]))
        spec["sizes"].update({"F": F_, "H": H_, "D": D_, "R": H_ * D_, "seq_len": N_})
        out.append((name, spec))
    spec = copy.deepcopy(dict(out)["tpa"])  # constant head factors (not in T6), another base
    spec["slots"]["tpa"].update({"contextual_a": False, "rope_base": 500.0, "q_rank": 3, "k_rank": 3, "v_rank": 1})
    out.append(("tpa_constant", spec))
    spec = copy.deepcopy(dict(out)["tpa"])  # T6 with using_groupnorm (its subln, off in T6's configs)
    spec["slots"]["tpa"]["group_norm"] = True
    out.append(("tpa_groupnorm", spec))
    spec = copy.deepcopy(dict(out)["tpa_kv_only"])  # constant feature factors (not in T6) with the norm
    spec["slots"]["tpa"].update({"contextual_b": False, "group_norm": True, "k_rank": 3, "v_rank": 2})
    out.append(("tpa_constant_b", spec))
    # Multi-token attention (section 8.8): the preset (RAM's 300M_mta.yaml at small sizes), and the
    # other options: pad_key left, post_sm_linear_head (mix_post) instead of the head convolution,
    # a [D, D] gate (gate_1d false), shared K and V.
    spec = json.loads(run([binary, "spec", "preset", "mta"]))
    spec["sizes"].update({"F": F_, "H": H_, "D": D_, "R": H_ * D_, "seq_len": N_})
    out.append(("mta", spec))
    variant = copy.deepcopy(spec)
    variant["slots"]["mta"].update({"pad": "left", "q_kernel": 3, "k_kernel": 4, "post_q_kernel": 2, "post_k_kernel": 3,
                                    "head_group": 2, "out_gate": "elementwise"})
    variant["slots"].update({"post_mix": False, "kv_groups": 2})
    out.append(("mta_variant", variant))
    wposm = copy.deepcopy(spec)
    wposm["slots"]["mta"].update({"pad": "right", "q_kernel": 0, "k_kernel": 0, "group_norm": False, "out_gate": "none"})
    out.append(("mta_wposm", wposm))
    # Collaborative attention (section 8.9): the preset (D~ = H·D/2 with the content bias), and a key
    # space of 7 (attention_head_size 7/4, not an integer) without the content bias, mixing
    # concatenated.
    spec = json.loads(run([binary, "spec", "preset", "collaborative"]))
    spec["sizes"].update({"F": F_, "H": H_, "D": D_, "R": H_ * D_, "seq_len": N_})
    spec["slots"]["collaborative"]["key_dim"] = H_ * D_ // 2
    out.append(("collaborative", spec))
    plain = copy.deepcopy(spec)
    plain["slots"]["collaborative"].update({"key_dim": 7, "content_bias": False, "mixing_init": "concatenate"})
    out.append(("collaborative_plain", plain))
    return out


def rel_diff(got, want):
    return float((got.double() - want.double()).abs().max()) / max(1.0, float(want.double().abs().max()))


class Results:
    def __init__(self):
        self.passed = self.failed = 0
        self.worst = 0.0

    def check(self, ok, line):
        print(("ok    " if ok else "FAIL  ") + line, flush=True)
        self.passed += bool(ok)
        self.failed += not ok


def layer_checks(binary, work, name, spec, res):
    for bias in (False, True):
        if bias and spec["slots"].get("tpa"):  # TPA has no biases (section 8.7): validation refuses them
            continue
        for causal in (True, False):
            s = copy.deepcopy(spec)
            s["bias"], s["causal"] = bias, causal
            tag = "%s%s%s" % (name, "-bias" if bias else "", "-causal" if causal else "")
            sp, wp, xp, yp = (os.path.join(work, "%s.%s" % (tag, e)) for e in ("json", "w.safetensors", "x.safetensors", "y.safetensors"))
            with open(sp, "w") as f:
                json.dump(s, f)
            gen = torch.Generator().manual_seed(5)
            x = torch.randn(2, N_, F_, generator=gen, dtype=torch.float32)
            st.save(xp, {"x": x})
            # Built, saved and run in one command (each start loads LibTorch); a second run only
            # where identity-initialised weights are perturbed.
            run([binary, "attention", "--spec", sp, "--seed", "11", "--save-weights", wp, "--input", xp, "--output", yp])
            w, meta = st.load(wp)
            mixes = [n for n in ("mix_pre", "mix_post", "mta_kernel", "mta_kernel_after_sm", "head_kernel",
                                 "subln.weight") if n in w]
            if mixes:  # identity at init: a random non-symmetric offset, so a transpose or flip would show
                gen = torch.Generator().manual_seed(7)
                for n in mixes:
                    w[n] = w[n] + 0.4 * torch.randn(w[n].shape, generator=gen, dtype=w[n].dtype)
                st.save(wp, w, meta)
                run([binary, "attention", "--spec", sp, "--weights", wp, "--input", xp, "--output", yp])
            y_ts = st.load(yp)[0]["y"]
            for official, f, with_bias, noncausal in officials(s):
                if (bias and not with_bias) or (not causal and not noncausal):
                    continue
                with torch.no_grad():
                    d = rel_diff(f(w, x, causal, False), y_ts)
                    dw = rel_diff(f(w, x, causal, True), y_ts)
                res.worst = max(res.worst, d)
                res.check(d <= REL_TOL, "layer %-28s %-52s max|diff|/scale %.1e (tol %.0e)" % (tag, official, d, REL_TOL))
                if s["slots"].get("tpa") and s["slots"]["tpa"].get("rope", True):
                    with torch.no_grad():  # T6 as written: cos and sin cached in bfloat16 (reported only)
                        t = s["slots"]["tpa"]
                        cfg_bf = {"n_head": s["sizes"]["H"], "head_dim": s["sizes"]["D"], "q_rank": t.get("q_rank", 0),
                                  "rank_k": t["k_rank"], "rank_v": t["v_rank"], "rope": True,
                                  "base": t.get("rope_base", 10000.0)}
                        db = rel_diff(t6_attention(to_t6(w, s["sizes"]["H"]), cfg_bf, x, bf16_rotary=True), y_ts)
                    print("info  layer %-28s T6 with its bfloat16 cos/sin cache: max|diff|/scale %.1e" % (tag, db))
                res.check(dw > WRONG_MIN, "layer %-28s %-52s wrong mapping (%s) misses by %.1e" % (
                    tag, official, WRONG_NAMES[name], dw))


class OfficialAttention(torch.nn.Module):
    """Stands in for a block's attention in the exported model: Tensorscope's weights of that block
    mapped to the official state_dict, forward = the official port."""

    def __init__(self, w, f, causal, wrong=False):
        super().__init__()
        self.w, self.f, self.causal, self.wrong = w, f, causal, wrong

    def forward(self, x):
        return self.f(self.w, x, self.causal, self.wrong)


def import_model(directory, tag):
    spec = importlib.util.spec_from_file_location("tensorscope_export_" + tag, os.path.join(directory, "model.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def model_checks(binary, work, name, spec, res):
    s = copy.deepcopy(spec)
    s["causal"], s["bias"] = True, name in ("gqa", "gated", "gated_headwise_gqa", "collaborative")  # Qwen3's qkv_bias; the official collaborative value and dense biases
    s["sizes"]["seq_len"] = 16
    config = {"format": "tensorscope.run_config", "version": 1,
              "model": {"kind": "decoder", "layers": 2, "d_model": F_, "ffn_multiplier": 2, "positions": "learned",
                        "tied_embeddings": True, "tp_role_embedding": False, "residual_dropout": 0.0,
                        "attention": [s]},
              "task": {"name": "reverse", "seed": 3, "seq_len": 16, "algorithmic_length": 4},
              "train": {"steps": 6, "batch": 4, "lr": 3e-2, "warmup": 1, "eval_interval": 100, "eval_examples": 4,
                        "checkpoint_interval": 100, "inspect_interval": 100, "seed": 7, "threads": 1}}
    base = os.path.join(work, "model_" + name)
    shutil.rmtree(base, ignore_errors=True)
    os.makedirs(base)
    cfg_path, run_dir, export_dir = (os.path.join(base, x) for x in ("run.json", "run", "export"))
    with open(cfg_path, "w") as f:
        json.dump(config, f)
    run([binary, "train", "--config", cfg_path, "--out", run_dir, "--json"])
    run([binary, "export", "--run", run_dir, "--format", "pytorch", "--out", export_dir])
    module = import_model(export_dir, name)
    net = module.load(export_dir)
    gen = torch.Generator().manual_seed(11)
    tokens = torch.randint(0, net.vocab, (3, 16), generator=gen)
    in_path, out_path = os.path.join(base, "in.safetensors"), os.path.join(base, "out.safetensors")
    st.save(in_path, {"tokens": tokens})
    run([binary, "infer", "--run", run_dir, "--input", in_path, "--output", out_path])
    want = st.load(out_path)[0]["logits"]
    tensors = st.load(os.path.join(export_dir, "model.safetensors"))[0]
    layer = [{k[len("blocks.%d.attn." % i):]: v for k, v in tensors.items() if k.startswith("blocks.%d.attn." % i)}
             for i in range(len(net.blocks))]
    with torch.no_grad():
        d_export = rel_diff(net(tokens), want)
    res.check(d_export <= REL_TOL, "model %-28s %-52s max|diff|/scale %.1e" % (name, "exported model.py (baseline)", d_export))
    for official, f, with_bias, _ in officials(s):
        if s["bias"] and not with_bias:
            continue
        diffs = []
        for wrong in (False, True):
            swapped = copy.deepcopy(net)
            for i, block in enumerate(swapped.blocks):
                block.attn = OfficialAttention(layer[i], f, True, wrong)
            with torch.no_grad():
                diffs.append(rel_diff(swapped(tokens), want))
        res.worst = max(res.worst, diffs[0])
        res.check(diffs[0] <= REL_TOL, "model %-28s %-52s max|logits diff|/scale %.1e (tol %.0e)" % (
            name, official, diffs[0], REL_TOL))
        res.check(diffs[1] > WRONG_MIN, "model %-28s %-52s wrong mapping (%s) misses by %.1e" % (
            name, official, WRONG_NAMES[name], diffs[1]))


# =============================================================================================
# Rotary positions (docs/attention-variants.md section 9): a GQA decoder with model.positions
# "rotary" / "rotary_interleaved", every block's attention replaced by a port of an official rotary
# convention on the block's own weights.
# =============================================================================================

# --- qiuzh20/gated_attention, commit 49645df63aafe9e680bc44a9c0ca280d4aefa8e9, modeling_qwen3.py
# --- (Hugging Face's Llama/Qwen3 code): Qwen3RotaryEmbedding.forward L153-169 (inv_freq =
# --- 1/base^(arange(0, D, 2)/D), emb = cat(freqs, freqs), cos/sin of emb in float32),
# --- rotate_half L173-177 (cat(-x2, x1)), apply_rotary_pos_emb L181-205 (q*cos + rotate_half(q)*sin).

def hf_rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def hf_rotary(u, base=10000.0):
    """u [B, H, N, D] (HF's layout after transpose(1, 2)): u*cos + rotate_half(u)*sin."""
    d, n = u.shape[-1], u.shape[-2]
    inv_freq = 1.0 / (base ** (torch.arange(0, d, 2, dtype=torch.int64).float() / d))
    freqs = torch.outer(torch.arange(n).float(), inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    return u * emb.cos() + hf_rotate_half(u) * emb.sin()


# --- deepseek-ai/DeepSeek-V3, commit 9b4e9788e4a3a731f7567338ed15d3ec549ce03b, inference/model.py:
# --- precompute_freqs_cis L297-375 (freqs = 1/base^(arange(0, D, 2)/D), float32; the YaRN correction
# --- only for seqlen > original_seq_len = 4096, not here; freqs_cis = polar(1, outer(t, freqs))),
# --- apply_rotary_emb L378-393 (view_as_complex of x viewed [..., D/2, 2], times freqs_cis,
# --- view_as_real, flatten). Meta's Llama (model.py, apply_rotary_emb) is the same form.

def deepseek_rotary(u, base=10000.0):
    """u [B, N, H, D] (DeepSeek's layout): pairs (2j, 2j+1) as complex numbers turned by freqs_cis."""
    d, n = u.shape[-1], u.shape[1]
    freqs = 1.0 / (base ** (torch.arange(0, d, 2, dtype=torch.float32) / d))
    freqs_cis = torch.polar(torch.ones(n, d // 2), torch.outer(torch.arange(n).float(), freqs))
    z = torch.view_as_complex(u.float().reshape(*u.shape[:-1], -1, 2))
    return torch.view_as_real(z * freqs_cis.view(1, n, 1, d // 2)).flatten(3).to(u.dtype)


def rotary_gqa_attention(w, x, causal, convention):
    """GQA with the official rotary `convention` ("hf": rotate_half, "deepseek": complex pairs) on q
    and k before the groups are repeated (llama-gqa L88-96, Qwen3 and DeepSeek alike), then SDPA."""
    B, N, _ = x.shape
    D = D_
    lin = lambda name: torch.nn.functional.linear(x, w[name + ".weight"], w.get(name + ".bias"))  # noqa: E731
    q, k, v = lin("wq").view(B, N, -1, D), lin("wk").view(B, N, -1, D), lin("wv").view(B, N, -1, D)
    if convention == "hf":
        q, k = hf_rotary(q.transpose(1, 2)).transpose(1, 2), hf_rotary(k.transpose(1, 2)).transpose(1, 2)
    else:
        q, k = deepseek_rotary(q), deepseek_rotary(k)
    H, G = q.shape[2], k.shape[2]
    q, k, v = q.transpose(1, 2), qwen3_repeat_kv(k.transpose(1, 2), H // G), qwen3_repeat_kv(v.transpose(1, 2), H // G)
    o = sdpa_math(q, k, v, causal)
    return torch.nn.functional.linear(o.transpose(1, 2).reshape(B, N, H * D), w["wo.weight"], w.get("wo.bias"))


def rotary_model_checks(binary, work, res):
    """model.positions rotary (half-split pairs) = HF/Qwen3's rotate_half and rotary_interleaved =
    DeepSeek-V3's complex pairs, on the trained weights of a 2-layer GQA decoder; the other
    convention (the wrong pairing) must miss."""
    spec = json.loads(run([binary, "spec", "preset", "gqa"]))
    spec["sizes"].update({"F": F_, "H": H_, "D": D_, "R": H_ * D_, "seq_len": N_})
    for positions, right, wrong in (("rotary", "hf", "deepseek"), ("rotary_interleaved", "deepseek", "hf")):
        name = "gqa_" + positions
        s = copy.deepcopy(spec)
        s["causal"], s["bias"] = True, True
        s["sizes"]["seq_len"] = 16
        config = {"format": "tensorscope.run_config", "version": 1,
                  "model": {"kind": "decoder", "layers": 2, "d_model": F_, "ffn_multiplier": 2, "positions": positions,
                            "tied_embeddings": True, "tp_role_embedding": False, "residual_dropout": 0.0,
                            "attention": [s]},
                  "task": {"name": "reverse", "seed": 3, "seq_len": 16, "algorithmic_length": 4},
                  "train": {"steps": 6, "batch": 4, "lr": 3e-2, "warmup": 1, "eval_interval": 100, "eval_examples": 4,
                            "checkpoint_interval": 100, "inspect_interval": 100, "seed": 7, "threads": 1}}
        base = os.path.join(work, "model_" + name)
        shutil.rmtree(base, ignore_errors=True)
        os.makedirs(base)
        cfg_path, run_dir, export_dir = (os.path.join(base, x) for x in ("run.json", "run", "export"))
        with open(cfg_path, "w") as f:
            json.dump(config, f)
        run([binary, "train", "--config", cfg_path, "--out", run_dir, "--json"])
        run([binary, "export", "--run", run_dir, "--format", "pytorch", "--out", export_dir])
        net = import_model(export_dir, name).load(export_dir)
        gen = torch.Generator().manual_seed(11)
        tokens = torch.randint(0, net.vocab, (3, 16), generator=gen)
        in_path, out_path = os.path.join(base, "in.safetensors"), os.path.join(base, "out.safetensors")
        st.save(in_path, {"tokens": tokens})
        run([binary, "infer", "--run", run_dir, "--input", in_path, "--output", out_path])
        want = st.load(out_path)[0]["logits"]
        tensors = st.load(os.path.join(export_dir, "model.safetensors"))[0]
        layer = [{k[len("blocks.%d.attn." % i):]: v for k, v in tensors.items() if k.startswith("blocks.%d.attn." % i)}
                 for i in range(len(net.blocks))]
        diffs = {}
        for convention in (right, wrong):
            swapped = copy.deepcopy(net)
            for i, block in enumerate(swapped.blocks):
                block.attn = OfficialAttention(layer[i], lambda w, x, causal, _, c=convention: rotary_gqa_attention(w, x, causal, c), True)
            with torch.no_grad():
                diffs[convention] = rel_diff(swapped(tokens), want)
        names = {"hf": "HF/Qwen3 rotate_half (49645df)", "deepseek": "DeepSeek-V3 apply_rotary_emb (9b4e978)"}
        res.worst = max(res.worst, diffs[right])
        res.check(diffs[right] <= REL_TOL, "model %-28s %-52s max|logits diff|/scale %.1e (tol %.0e)" % (
            name, names[right], diffs[right], REL_TOL))
        res.check(diffs[wrong] > WRONG_MIN, "model %-28s %-52s the other pairing misses by %.1e" % (
            name, names[wrong], diffs[wrong]))


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    binary, work = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    os.makedirs(work, exist_ok=True)
    torch.set_num_threads(1)
    res = Results()
    for name, spec in preset_specs(binary):
        try:
            layer_checks(binary, work, name, spec, res)
            model_checks(binary, work, name, spec, res)
        except Exception as e:  # noqa: BLE001 - every failure is reported and counted
            res.check(False, "%s: %r" % (name, e))
    try:
        rotary_model_checks(binary, work, res)
    except Exception as e:  # noqa: BLE001
        res.check(False, "rotary: %r" % (e,))
    print("worst parity max|diff|/scale: %.2e" % res.worst)
    print("%d passed, %d failed" % (res.passed, res.failed))
    return 1 if res.failed or not res.passed else 0


if __name__ == "__main__":
    sys.exit(main())
