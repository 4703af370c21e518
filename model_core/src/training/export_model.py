"""A Tensorscope run exported for PyTorch (>= 1.13), self-contained: the standard library and torch.

This directory holds
  model.py           this file: every Tensorscope attention variant, the decoder language model and
                     the image-patch encoder classifier, and a safetensors reader/writer
  config.json        the run configuration ("tensorscope.run_config"); the architecture is read from it
  model.safetensors  the trained weights, under the same names as this module's state_dict (the
                     THSA family also stores its effective core C as `...attn.core`)
  vocab.json         sequence tasks only (image classifiers have no vocabulary, and no vocab.json):
                     the task's character vocabulary, "tokens" = id -> UTF-8 text, one token per
                     Unicode code point after the specials "pad" 0, "bos" 1, "sep" 2, "eos" 3

Usage:
    import sys; sys.path.insert(0, "/path/to/this/directory")
    import model
    net = model.load("/path/to/this/directory")  # torch.nn.Module, eval mode, float32, CPU
    logits = net(tokens)      # decoder: tokens [B, N] int64 (N <= task.seq_len) -> logits [B, N, V]
    logits = net(patches)     # encoder_classifier: patches [B, T, P] float32 -> class logits [B, classes]

    fresh = model.build(config_dict, vocab=V)  # an untrained model of the same architecture

    vocab = model.load_vocabulary("/path/to/this/directory")  # sequence tasks: reads vocab.json
    ids = model.encode(vocab, "12+7")         # one id per character; ValueError for an unknown one
    text = model.decode(vocab, ids)           # specials read "<bos>", "<sep>", "<eos>", "<pad>"
    model.answer(net, vocab, "12+7")          # question-answer tasks (arithmetic, copy, reverse, sort):
                                              # greedy decoding of [BOS] question [SEP] up to [EOS] -> "19"
    model.generate(net, vocab, "In the", 40)  # char_lm: the prompt's greedy continuation, 40 characters

The layers follow Tensorscope's layer contract (docs/attention-variants.md in the Tensorscope sources) and its C++ implementation
operation for operation, so the logits agree with `tensorscope infer` to float32 rounding:
  mhsa / fixed_head   P = softmax(q kᵀ / √D), o = P v, y = concat(o) Woᵀ
  tp                  as mhsa, each head's filler bound to its role r = x Wrᵀ: y = concat(o ⊙ r) Woᵀ
  thsa                logits[r,n,m] = Σ_s C[r,s] q[n,s] k[m,s] / √R, per-channel softmax, Ω[n,r] = Σ_m P v[m,r]
                      (Kronecker cores s·(A ⊗ B) are contracted through their factors)
  thsa_linear         φ = elu + 1, Ω[n,r] = Σ_s φ(C_r⊙q_n)_s S[s,r] / Σ_s φ(C_r⊙q_n)_s z_s (prefix sums if causal)
  multilinear         T[i,j,k] = Σ_r ḡ[r] q[i,r] k[j,r] v[k,r] (ḡ = mean of softmax(g_p) or g_p), y_i = Wo vec(T[i])
  dimwise             f(S) = softmax(qᵀk / √N) (causal: prefix sums, 1/√i), O_c = v (W_c ⊙ f(S))ᵀ
Blocks are pre-LN: x + attn(LN1(x)), then + fc2(GELU(fc1(LN2(x)))); a final LayerNorm; the decoder's
head is tied to the token embedding unless model.tied_embeddings is false. Decoder embedding:
E[w] + p (+ E_r[w] ⊙ p with model.tp_role_embedding); classifier: patch_in(patch) + p, mean-pooled.
"""
import json
import math
import os
import struct

import torch
import torch.nn as nn
import torch.nn.functional as F

RUN_CONFIG_FORMAT = "tensorscope.run_config"
VOCABULARY_FORMAT = "tensorscope.vocabulary"
SPECIAL_TOKENS = (("pad", 0, "<pad>"), ("bos", 1, "<bos>"), ("sep", 2, "<sep>"), ("eos", 3, "<eos>"))
VARIANTS = ("mhsa", "fixed_head", "thsa", "thsa_linear", "tp", "multilinear", "dimwise")
CORE_PRESETS = ("mhsa", "thsa", "skip_left", "skip_right", "trainable_heads_only", "heads_only", "single_head",
                "low_rank")

# ---------------------------------------------------------------------------------------------
# safetensors (written from the format description; no `safetensors` package needed)

_DTYPES = {"F64": torch.float64, "F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16,
           "I64": torch.int64, "I32": torch.int32, "I16": torch.int16, "I8": torch.int8,
           "U8": torch.uint8, "BOOL": torch.bool}
_DTYPE_NAMES = {v: k for k, v in _DTYPES.items()}


def load_safetensors(path):
    """Returns ({name: tensor}, metadata dict). Raises ValueError for a malformed file."""
    with open(path, "rb") as f:
        raw = f.read()
    if len(raw) < 8:
        raise ValueError("%s: not a safetensors file (shorter than its 8-byte header size)" % path)
    (n,) = struct.unpack("<Q", raw[:8])
    if 8 + n > len(raw):
        raise ValueError("%s: header size %d runs past the end of the file" % (path, n))
    try:
        header = json.loads(raw[8:8 + n].decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ValueError("%s: malformed safetensors header: %s" % (path, e)) from None
    data = raw[8 + n:]
    meta = header.pop("__metadata__", {}) or {}
    out = {}
    for name, e in header.items():
        if e.get("dtype") not in _DTYPES:
            raise ValueError("%s: tensor '%s' has unsupported dtype %r" % (path, name, e.get("dtype")))
        begin, end = e["data_offsets"]
        dtype = _DTYPES[e["dtype"]]
        count = 1
        for s in e["shape"]:
            count *= s
        if end - begin != count * torch.empty(0, dtype=dtype).element_size() or end > len(data):
            raise ValueError("%s: tensor '%s' has inconsistent data offsets" % (path, name))
        t = torch.frombuffer(bytearray(data[begin:end]), dtype=dtype) if end > begin \
            else torch.empty(0, dtype=dtype)
        out[name] = t.reshape(e["shape"]).clone()
    return out, meta


def save_safetensors(path, tensors, metadata=None):
    """Writes {name: tensor} (sorted by name, header padded to 8 bytes)."""
    header, chunks, offset = {}, [], 0
    for name in sorted(tensors):
        t = tensors[name].detach().cpu().contiguous()
        b = t.reshape(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b""
        header[name] = {"dtype": _DTYPE_NAMES[t.dtype], "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(b)]}
        chunks.append(b)
        offset += len(b)
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    h = json.dumps(header).encode("utf-8")
    h += b" " * ((8 - len(h) % 8) % 8)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(chunks))
    os.replace(tmp, path)


# ---------------------------------------------------------------------------------------------
# shared kernels


def future_mask(n, m, device=None):
    """[n, m] boolean, True where m > n (what a causal layer must not see)."""
    return torch.ones(n, m, dtype=torch.bool, device=device).triu(1)


def masked_softmax(logits, causal):
    if not causal:
        return torch.softmax(logits, -1)
    n, m = logits.shape[-2], logits.shape[-1]
    return torch.softmax(logits.masked_fill(future_mask(n, m, logits.device), -math.inf), -1)


def split_heads(x, heads):
    """[B, N, H*D] -> [B, H, N, D]"""
    B, N, W = x.shape
    return x.view(B, N, heads, W // heads).transpose(1, 2)


def merge_heads(x):
    """[B, H, N, D] -> [B, N, H*D]"""
    B, H, N, D = x.shape
    return x.transpose(1, 2).reshape(B, N, H * D)


def _check_input(spec, x, fixed_length=False):
    z = spec["sizes"]
    if x.dim() != 3 or x.shape[2] != z["F"]:
        raise ValueError("attention input must be [B, N, F] with F = %d; got %s" % (z["F"], list(x.shape)))
    if fixed_length and x.shape[1] != z["seq_len"]:
        raise ValueError("%s is built for N = seq_len = %d tokens; got N = %d"
                         % (spec["variant"], z["seq_len"], x.shape[1]))
    if x.shape[0] == 0 or x.shape[1] == 0:
        raise ValueError("attention input is empty: %s" % list(x.shape))


# ---------------------------------------------------------------------------------------------
# attention variants


class Mhsa(nn.Module):
    """mhsa, fixed_head (free head size D, scale 1/√D) and tp (roles r = x·Wrᵀ bound by o ⊙ r)."""

    def __init__(self, spec):
        super().__init__()
        self.spec = spec
        z = spec["sizes"]
        F_, HD = z["F"], z["H"] * z["D"]
        self.heads, self.scale, self.causal = z["H"], 1.0 / math.sqrt(z["D"]), bool(spec["causal"])
        self.wq = nn.Linear(F_, HD, bias=spec["bias"])
        self.wk = nn.Linear(F_, HD, bias=spec["bias"])
        self.wv = nn.Linear(F_, HD, bias=spec["bias"])
        self.wr = nn.Linear(F_, HD, bias=spec["bias"]) if spec["variant"] == "tp" else None
        self.wo = nn.Linear(HD, F_, bias=spec["bias"])
        self.dropout = nn.Dropout(spec.get("dropout", 0.0))

    def forward(self, x, with_maps=False):
        _check_input(self.spec, x)
        H = self.heads
        q, k, v = split_heads(self.wq(x), H), split_heads(self.wk(x), H), split_heads(self.wv(x), H)
        P = masked_softmax(torch.matmul(q, k.transpose(-2, -1)) * self.scale, self.causal)  # [B, H, N, N]
        o = torch.matmul(self.dropout(P), v)
        self.roles = None
        if self.wr is not None:
            r = split_heads(self.wr(x), H)  # [B, H, N, D] role vectors
            o = o * r
            self.roles = r
        y = self.wo(merge_heads(o))
        return (y, P) if with_maps else y


class ThsaCore(nn.Module):
    """The THSA core C [R, R]: dense (`dense`, with frozen entries where the spec's mask is 0),
    s·(A ⊗ B) with A [H, H] and B [D, D] (or B = c2 c3ᵀ), or low rank U·Vᵀ (U, V [R, rank]).
    Identity/ones factors are not saved."""

    def __init__(self, core, H, D, R):
        super().__init__()
        if "structure" not in core:
            core = expand_core_preset(core.get("preset", "mhsa"), H, D)
        self.structure = core["structure"]
        self.H, self.D, self.R = H, D, R
        if self.structure == "dense":
            values = _matrix(core["values"], R, R, "core.values")
            mask = torch.tensor(_flatten(core.get("trainable", [[1] * R] * R)), dtype=torch.long).reshape(R, R) != 0
            self.dense = nn.Parameter(values.clone(), requires_grad=bool(mask.any()))
            if not bool(mask.all()):
                self.register_buffer("frozen", values.clone(), persistent=False)
                self.register_buffer("mask", mask, persistent=False)
            else:
                self.frozen, self.mask = None, None
            self.kind_a = self.kind_b = None
            return
        if self.structure == "low_rank":  # C = U·Vᵀ, computed through U and V
            rank = int(core["rank"])
            U, V = _matrix(core["U"], R, rank, "core.U"), _matrix(core["V"], R, rank, "core.V")
            if core.get("trainable", True):
                self.U, self.V = nn.Parameter(U), nn.Parameter(V)
            else:
                self.register_buffer("U", U)
                self.register_buffer("V", V)
            self.kind_a = self.kind_b = None
            return
        if self.structure != "kronecker":
            raise ValueError("unknown core structure '%s' (dense, kronecker or low_rank)" % self.structure)
        self.scale = float(core.get("scale", 1.0))
        a, b = core["A"], core["B"]
        self.kind_a, self.kind_b = a["kind"], b["kind"]
        if self.kind_a == "rank1":
            raise ValueError("core factor kind rank1 is only allowed for B")
        self._factor("A", a, H)
        if self.kind_b == "rank1":
            c2 = torch.tensor(a_list(b["c2"]), dtype=torch.float64).float()
            c3 = torch.tensor(a_list(b["c3"]), dtype=torch.float64).float()
            if b.get("trainable", True):
                self.c2, self.c3 = nn.Parameter(c2), nn.Parameter(c3)
            else:
                self.register_buffer("c2", c2)
                self.register_buffer("c3", c3)
            self.B = None
        else:
            self._factor("B", b, D)
            self.c2 = self.c3 = None

    def _factor(self, name, f, n):
        kind = f["kind"]
        if kind == "identity":
            self.register_buffer(name, torch.eye(n), persistent=False)
        elif kind == "ones":
            self.register_buffer(name, torch.ones(n, n), persistent=False)
        elif kind == "fixed":
            self.register_buffer(name, _matrix(f["values"], n, n, "core." + name))
        elif kind == "trainable":
            setattr(self, name, nn.Parameter(_matrix(f["values"], n, n, "core." + name)))
        else:
            raise ValueError("unknown core factor kind '%s' (identity, ones, fixed, trainable, rank1)" % kind)

    def is_dense(self):
        return self.structure == "dense"

    def is_low_rank(self):
        return self.structure == "low_rank"

    def effective(self):
        if self.is_dense():
            return torch.where(self.mask, self.dense, self.frozen) if self.mask is not None else self.dense
        if self.is_low_rank():
            return self.U @ self.V.t()
        B = torch.outer(self.c2, self.c3) if self.c2 is not None else self.B
        return torch.kron(self.A, B) * self.scale


class _ThsaBase(nn.Module):
    def __init__(self, spec):
        super().__init__()
        self.spec = spec
        z = spec["sizes"]
        F_, R = z["F"], z["R"]
        self.H, self.D, self.R, self.causal = z["H"], z["D"], R, bool(spec["causal"])
        if spec.get("core") is None:
            raise ValueError("%s needs a core" % spec["variant"])
        self.wq = nn.Linear(F_, R, bias=spec["bias"])
        self.wk = nn.Linear(F_, R, bias=spec["bias"])
        self.wv = nn.Linear(F_, R, bias=spec["bias"])
        self.wo = nn.Linear(R, F_, bias=spec["bias"])
        self.core = ThsaCore(spec["core"], z["H"], z["D"], R)

    def effective_core(self):
        return self.core.effective()


class Thsa(_ThsaBase):
    """Tunable-head self-attention (Tuformer), scale 1/√R, one softmax map per channel r."""

    def __init__(self, spec):
        super().__init__(spec)
        self.dropout = nn.Dropout(spec.get("dropout", 0.0))

    def forward(self, x, with_maps=False):
        _check_input(self.spec, x)
        B, N = x.shape[0], x.shape[1]
        R, H, D = self.R, self.H, self.D
        inv_sqrt_r = 1.0 / math.sqrt(R)
        q, k, v = self.wq(x), self.wk(x), self.wv(x)  # [B, N, R]
        core = self.core
        if core.is_dense():
            C = core.effective()
            qt = C.unsqueeze(1) * q.unsqueeze(1)  # [B, R, N, R]: C[r,s]·q[n,s]
            logits = torch.matmul(qt, k.transpose(1, 2).unsqueeze(1))  # [B, R, N, M]
            P = masked_softmax(logits * inv_sqrt_r, self.causal)
            omega = torch.matmul(self.dropout(P), v.transpose(1, 2).unsqueeze(-1)).squeeze(-1).transpose(1, 2)
            maps = P
        elif core.is_low_rank():  # ρ base maps G_j = (q ⊙ V_j)·kᵀ, logits_r = Σ_j U[r,j]·G_j
            rank = core.U.shape[1]
            qv = core.V.t().unsqueeze(1) * q.unsqueeze(1)  # [B, ρ, N, R]
            G = torch.matmul(qv, k.transpose(1, 2).unsqueeze(1))  # [B, ρ, N, M]
            logits = torch.matmul(core.U, G.reshape(B, rank, N * N)).view(B, R, N, N)
            P = masked_softmax(logits * inv_sqrt_r, self.causal)
            omega = torch.matmul(self.dropout(P), v.transpose(1, 2).unsqueeze(-1)).squeeze(-1).transpose(1, 2)
            maps = P
        else:
            qh, kh, vh = split_heads(q, H), split_heads(k, H), split_heads(v, H)  # [B, H, N, D]
            kT = kh.transpose(-2, -1)
            kb = core.kind_b
            if kb == "ones":
                L = torch.matmul(qh, kT)
            elif kb == "rank1":  # B = c2 c3ᵀ: c3 on q, c2 after the head mixing
                L = torch.matmul(qh * core.c3, kT)
            elif kb == "identity":
                L = qh.transpose(-2, -1).unsqueeze(-1) * kh.transpose(-2, -1).unsqueeze(-2)  # [B, H, D, N, M]
            else:
                qt = core.B.view(1, 1, D, 1, D) * qh.unsqueeze(2)  # [B, H, D, N, D']
                L = torch.matmul(qt, kT.unsqueeze(2))  # [B, H, D, N, M]
            if core.kind_a != "identity":  # Σ_h' A[h,h']·L[b,h',...]
                shape = L.shape
                L = torch.matmul(core.A, L.reshape(shape[0], shape[1], -1)).reshape(shape)
            if kb == "rank1":
                L = L.unsqueeze(2) * core.c2.view(1, 1, D, 1, 1)
            P = masked_softmax(L * (core.scale * inv_sqrt_r), self.causal)
            Pd = self.dropout(P)
            if P.dim() == 4:  # one map per head, shared by its D channels
                omega = merge_heads(torch.matmul(Pd, vh))
                maps = P.unsqueeze(2).expand(B, H, D, N, N).reshape(B, R, N, N) if with_maps else None
            else:
                vc = vh.transpose(-2, -1).unsqueeze(-1)  # [B, H, D, M, 1]
                omega = torch.matmul(Pd, vc).squeeze(-1).permute(0, 3, 1, 2).reshape(B, N, R)
                maps = P.reshape(B, R, N, N) if with_maps else None
        y = self.wo(omega)
        return (y, maps) if with_maps else y


class ThsaLinear(_ThsaBase):
    """THSA with the ELU kernel φ(z) = elu(z) + 1 (linear attention, no 1/√R)."""

    def forward(self, x, with_maps=False):
        _check_input(self.spec, x)
        N = x.shape[1]
        q, k, v = self.wq(x), self.wk(x), self.wv(x)
        C = self.core.effective()
        phi = F.elu(C * q.unsqueeze(2)) + 1.0  # [B, N, R, S]
        K = F.elu(k) + 1.0  # [B, M, S]
        if not self.causal:
            S = torch.matmul(K.transpose(1, 2), v)  # [B, S, R]
            z = K.sum(1)  # [B, S]
            num = (phi * S.transpose(1, 2).unsqueeze(1)).sum(-1)
            den = torch.matmul(phi, z.unsqueeze(1).unsqueeze(-1)).squeeze(-1)
        else:
            S = torch.cumsum(K.unsqueeze(-1) * v.unsqueeze(-2), 1)  # [B, N, S, R]
            z = torch.cumsum(K, 1)  # [B, N, S]
            num = (phi * S.transpose(-1, -2)).sum(-1)
            den = (phi * z.unsqueeze(2)).sum(-1)
        y = self.wo(num / den)
        if not with_maps:
            return y
        sim = torch.matmul(phi.transpose(1, 2), K.transpose(1, 2).unsqueeze(1))  # [B, R, N, M]
        if self.causal:
            sim = sim.masked_fill(future_mask(N, N, x.device), 0.0)
        return y, sim / sim.sum(-1, keepdim=True)


class Multilinear(nn.Module):
    """Multi-linear attention by block-term decomposition (Tensorized Transformer), causal mask applied."""

    def __init__(self, spec):
        super().__init__()
        self.spec = spec
        z = spec["sizes"]
        F_, R, N = z["F"], z["R"], z["seq_len"]
        self.causal, self.core_softmax = bool(spec["causal"]), bool(spec.get("core_softmax", False))
        self.wq = nn.Linear(F_, R, bias=spec["bias"])
        self.wk = nn.Linear(F_, R, bias=spec["bias"])
        self.wv = nn.Linear(F_, R, bias=spec["bias"])
        self.wo = nn.Linear(N * N, F_, bias=spec["bias"])
        self.cores = nn.Parameter(torch.rand(z["P"], R))
        if self.causal:
            future = future_mask(N, N)
            self.register_buffer("causal_mask", future.unsqueeze(2) | future.unsqueeze(1), persistent=False)

    def effective_cores(self):
        return torch.softmax(self.cores, -1) if self.core_softmax else self.cores

    def forward(self, x, with_maps=False):
        _check_input(self.spec, x, fixed_length=True)
        B, N = x.shape[0], x.shape[1]
        q, k, v = self.wq(x), self.wk(x), self.wv(x)
        gbar = self.effective_cores().mean(0)
        a = q * gbar
        ak = a.unsqueeze(2) * k.unsqueeze(1)  # [B, i, j, R]
        T = torch.matmul(ak.reshape(B, N * N, -1), v.transpose(1, 2)).view(B, N, N, N)
        if self.causal:
            T = T.masked_fill(self.causal_mask, 0.0)
        y = self.wo(T.reshape(B, N, N * N))
        if not with_maps:
            return y
        A = torch.matmul(a, k.transpose(1, 2))
        if self.causal:
            A = A.masked_fill(future_mask(N, N, x.device), 0.0)
        return y, A


class Dimwise(nn.Module):
    """Dimension-wise attention (TensorCoder): softmax over the last axis of qᵀk/√N, c filters."""

    def __init__(self, spec):
        super().__init__()
        self.spec = spec
        z = spec["sizes"]
        F_, d, c = z["F"], z["R"], z["c"]
        self.d, self.c, self.causal = d, c, bool(spec["causal"])
        self.wq = nn.Linear(F_, d, bias=spec["bias"])
        self.wk = nn.Linear(F_, d, bias=spec["bias"])
        self.wv = nn.Linear(F_, d, bias=spec["bias"])
        self.wo = nn.Linear(c * d, F_, bias=spec["bias"])
        self.conv = nn.Parameter(torch.ones(c, d, d) + 0.02 * torch.randn(c, d, d))
        self.dropout = nn.Dropout(spec.get("dropout", 0.0))

    def forward(self, x, with_maps=False):
        _check_input(self.spec, x)
        B, N = x.shape[0], x.shape[1]
        d, c = self.d, self.c
        q, k, v = self.wq(x), self.wk(x), self.wv(x)
        if not self.causal:
            S = torch.matmul(q.transpose(1, 2), k)  # [B, d, d]
            f = torch.softmax(S / math.sqrt(N), -1)
            M = self.conv.unsqueeze(0) * self.dropout(f).unsqueeze(1)  # [B, c, d, d]
            O = torch.matmul(v.unsqueeze(1), M.transpose(-1, -2)).transpose(1, 2)  # [B, N, c, d]
            maps = f
        else:
            S = torch.cumsum(q.unsqueeze(-1) * k.unsqueeze(-2), 1)  # [B, N, d, d]
            pos = torch.arange(1, N + 1, dtype=x.dtype, device=x.device).sqrt().view(1, N, 1, 1)
            f = torch.softmax(S / pos, -1)
            fv = self.dropout(f) * v.unsqueeze(-2)
            O = torch.einsum("cjm,bijm->bicj", self.conv, fv)
            maps = f.select(1, N - 1)
        y = self.wo(O.reshape(B, N, c * d))
        return (y, maps) if with_maps else y


def make_attention(spec):
    """The attention module of one layer spec (the JSON object of config.json model.attention)."""
    variant = spec.get("variant")
    if variant in ("mhsa", "fixed_head", "tp"):
        return Mhsa(spec)
    if variant == "thsa":
        return Thsa(spec)
    if variant == "thsa_linear":
        return ThsaLinear(spec)
    if variant == "multilinear":
        return Multilinear(spec)
    if variant == "dimwise":
        return Dimwise(spec)
    raise ValueError("unknown attention variant %r (known: %s)" % (variant, ", ".join(VARIANTS)))


# ---------------------------------------------------------------------------------------------
# the models


class Block(nn.Module):
    """Pre-LN block: x + attn(LN1(x)), then + fc2(GELU(fc1(LN2(x))))."""

    def __init__(self, spec, ffn_multiplier, residual_dropout):
        super().__init__()
        F_ = spec["sizes"]["F"]
        self.ln1 = nn.LayerNorm(F_)
        self.attn = make_attention(spec)
        self.ln2 = nn.LayerNorm(F_)
        self.fc1 = nn.Linear(F_, ffn_multiplier * F_)
        self.fc2 = nn.Linear(ffn_multiplier * F_, F_)
        self.drop = nn.Dropout(residual_dropout)

    def forward(self, x):
        h = x + self.drop(self.attn(self.ln1(x)))
        return h + self.drop(self.fc2(F.gelu(self.fc1(self.ln2(h)))))


def sinusoid_table(n, f):
    """Vaswani et al.: PE[p, 2i] = sin(p / 10000^(2i/F)), PE[p, 2i+1] = cos(...)."""
    pe = torch.zeros(n, f)
    pos = torch.arange(n, dtype=torch.float32).unsqueeze(1)
    div = torch.exp(torch.arange(0, f, 2, dtype=torch.float32) * (-math.log(10000.0) / float(f)))
    pe[:, 0::2] = torch.sin(pos * div)
    pe[:, 1::2] = torch.cos(pos * div)[:, :f // 2]
    return pe


class TensorscopeModel(nn.Module):
    """Decoder-only language model (model.kind "decoder") or image-patch encoder classifier
    ("encoder_classifier"), built from a run config dict."""

    def __init__(self, config, vocab=None, seq_len=None, patch_dim=None, classes=None):
        super().__init__()
        m = config["model"]
        self.config = config
        self.kind = m.get("kind", "decoder")
        if self.kind not in ("decoder", "encoder_classifier"):
            raise ValueError("unknown model.kind %r (decoder or encoder_classifier)" % self.kind)
        self.classifier = self.kind == "encoder_classifier"
        F_ = int(m["d_model"])
        layers = int(m["layers"])
        task = config.get("task", {})
        if self.classifier:
            patch = int(task.get("patch", 7))
            seq_len = seq_len or (28 // patch) ** 2
            patch_dim = patch_dim or patch * patch
            classes = classes or 10
        else:
            seq_len = seq_len or int(task["seq_len"])
            if not vocab:
                raise ValueError("a decoder needs its vocabulary size (vocab=...)")
        self.seq_len, self.vocab, self.patch_dim, self.classes = seq_len, vocab, patch_dim, classes
        self.embed = self.role_embed = self.patch_in = self.pos = self.head = None
        if self.classifier:
            self.patch_in = nn.Linear(patch_dim, F_)
        else:
            self.embed = nn.Embedding(vocab, F_)
            nn.init.normal_(self.embed.weight, 0.0, 0.02)
            if m.get("tp_role_embedding", False):
                self.role_embed = nn.Embedding(vocab, F_)
                nn.init.normal_(self.role_embed.weight, 0.0, 0.02)
        positions = m.get("positions", "learned")
        if positions == "learned":
            self.pos = nn.Embedding(seq_len, F_)
            nn.init.normal_(self.pos.weight, 0.0, 0.02)
        elif positions == "sinusoidal":
            self.register_buffer("sinusoid", sinusoid_table(seq_len, F_), persistent=False)
        else:
            raise ValueError("unknown model.positions %r (learned or sinusoidal)" % positions)
        specs = m["attention"] if isinstance(m["attention"], list) else [m["attention"]]
        if len(specs) not in (1, layers):
            raise ValueError("model.attention has %d specs for %d layers" % (len(specs), layers))
        blocks = []
        for i in range(layers):
            spec = dict(specs[0] if len(specs) == 1 else specs[i])
            if self.classifier:
                spec["causal"] = False
            if spec["sizes"]["F"] != F_:
                raise ValueError("layer %d: attention sizes.F = %d differs from model.d_model = %d"
                                 % (i, spec["sizes"]["F"], F_))
            blocks.append(Block(spec, int(m.get("ffn_multiplier", 4)), float(m.get("residual_dropout", 0.0))))
        self.blocks = nn.ModuleList(blocks)
        self.ln_f = nn.LayerNorm(F_)
        if self.classifier:
            self.head = nn.Linear(F_, classes)
        elif not m.get("tied_embeddings", True):
            self.head = nn.Linear(F_, vocab, bias=False)

    def embed_input(self, x):
        N = x.shape[1]
        pos = self.pos.weight.narrow(0, 0, N) if self.pos is not None else self.sinusoid.narrow(0, 0, N)
        if self.classifier:
            return self.patch_in(x) + pos
        h = self.embed(x) + pos
        if self.role_embed is not None:
            h = h + self.role_embed(x) * pos  # TP-Transformer eq. 2
        return h

    def forward(self, x):
        if self.classifier:
            if x.dim() != 3 or x.shape[1] != self.seq_len or x.shape[2] != self.patch_dim:
                raise ValueError("patches must be [B, %d, %d]; got %s" % (self.seq_len, self.patch_dim, list(x.shape)))
            x = x.float()
        else:
            if x.dim() != 2 or x.dtype != torch.int64:
                raise ValueError("tokens must be int64 [B, N]; got %s %s" % (x.dtype, list(x.shape)))
            if x.shape[1] > self.seq_len:
                raise ValueError("input has %d tokens; the model was built for %d" % (x.shape[1], self.seq_len))
            if x.numel() and (int(x.min()) < 0 or int(x.max()) >= self.vocab):
                raise ValueError("token ids must lie in [0, %d)" % self.vocab)
        h = self.embed_input(x)
        for block in self.blocks:
            h = block(h)
        h = self.ln_f(h)
        if self.classifier:
            return self.head(h.mean(1))
        if self.head is not None:
            return self.head(h)
        return torch.matmul(h, self.embed.weight.t())  # tied: h·Eᵀ

    # -- weight files ------------------------------------------------------------------------

    def weight_file_tensors(self):
        """The tensors a Tensorscope model.safetensors holds for this model, by name."""
        out = {}
        for name, p in self.state_dict().items():
            if not name.endswith(".attn.core.dense"):
                out[name] = p
        for i, block in enumerate(self.blocks):
            if isinstance(block.attn, _ThsaBase):  # the effective C, also for dense cores
                out["blocks.%d.attn.core" % i] = block.attn.core.effective().detach()
        return out

    def load_weights(self, tensors, source="weights"):
        """Copies Tensorscope weight-file tensors into the model; every problem is reported at once."""
        own = self.state_dict()
        derived = {"blocks.%d.attn.core" % i for i, b in enumerate(self.blocks)
                   if isinstance(b.attn, _ThsaBase) and not b.attn.core.is_dense()}
        problems, plan = [], {}
        for name, t in tensors.items():
            if name in derived:
                continue
            key = name + ".dense" if name + ".dense" in own else name
            if key not in own:
                problems.append("unexpected tensor '%s'" % name)
            elif tuple(t.shape) != tuple(own[key].shape):
                problems.append("'%s' has shape %s, expected %s" % (name, list(t.shape), list(own[key].shape)))
            else:
                plan[key] = t
        for key in own:
            name = key[: -len(".dense")] if key.endswith(".attn.core.dense") else key
            if name not in tensors:
                problems.append("missing tensor '%s' %s" % (name, list(own[key].shape)))
        if not problems:
            with torch.no_grad():
                for key, t in plan.items():
                    own[key].copy_(t.to(own[key].dtype))
            # Derived and frozen values must read back as given.
            current = self.weight_file_tensors()
            for name, t in tensors.items():
                a, b = t.double(), current[name].double()
                diff = float((a - b).abs().max()) if a.numel() else 0.0
                scale = max(1.0, float(b.abs().max()) if b.numel() else 0.0)
                if diff > 1e-5 * scale:
                    problems.append("'%s' disagrees with the spec and the other weights: max difference %g"
                                    % (name, diff))
        if problems:
            raise ValueError("cannot load %s:\n  %s" % (source, "\n  ".join(problems)))


def expand_core_preset(name, H, D):
    """The explicit core of a preset (what Tensorscope writes into config.json)."""
    sqrt_h = math.sqrt(H)
    eye = lambda n, s: [[s if i == j else 0.0 for j in range(n)] for i in range(n)]  # noqa: E731
    if name in ("mhsa", "heads_only"):
        return {"structure": "kronecker", "scale": sqrt_h, "A": {"kind": "identity"}, "B": {"kind": "ones"}}
    if name == "thsa":
        R = H * D
        values = [[sqrt_h if r // D == s // D else 0.0 for s in range(R)] for r in range(R)]
        return {"structure": "dense", "values": values, "trainable": [[1] * R for _ in range(R)]}
    if name == "skip_left":
        c = [H ** 0.25] * D
        return {"structure": "kronecker", "scale": 1.0, "A": {"kind": "identity"},
                "B": {"kind": "rank1", "c2": list(c), "c3": list(c), "trainable": True}}
    if name in ("skip_right", "trainable_heads_only"):
        return {"structure": "kronecker", "scale": 1.0, "A": {"kind": "trainable", "values": eye(H, sqrt_h)},
                "B": {"kind": "ones"}}
    if name == "single_head":
        return {"structure": "kronecker", "scale": 1.0, "A": {"kind": "ones"}, "B": {"kind": "ones"}}
    if name == "low_rank":  # rank H: U = V = H^(1/4)·(I_H ⊗ 1_D), so U·Vᵀ is the mhsa preset
        R, q = H * D, H ** 0.25
        u = [[q if r // D == j else 0.0 for j in range(H)] for r in range(R)]
        return {"structure": "low_rank", "rank": H, "U": u, "V": [list(row) for row in u], "trainable": True}
    raise ValueError("unknown core preset %r (known: %s)" % (name, ", ".join(CORE_PRESETS)))


def _flatten(v):
    out = []
    for x in v:
        if isinstance(x, list):
            out.extend(_flatten(x))
        else:
            out.append(x)
    return out


def a_list(v):
    return [float(x) for x in _flatten(v)]


def _matrix(values, rows, cols, what):
    flat = a_list(values)
    if len(flat) != rows * cols:
        raise ValueError("%s must hold %d x %d values; got %d" % (what, rows, cols, len(flat)))
    return torch.tensor(flat, dtype=torch.float64).reshape(rows, cols).float()


def _read_json(path, missing_hint):
    """The JSON document at `path`: FileNotFoundError (with `missing_hint`) when there is none,
    ValueError naming the file for malformed JSON."""
    if not os.path.isfile(path):
        raise FileNotFoundError("%s: missing (%s)" % (path, missing_hint))
    with open(path, "r", encoding="utf-8") as f:
        try:
            return json.load(f)
        except json.JSONDecodeError as e:
            raise ValueError("%s: malformed JSON: %s" % (path, e)) from None


def read_config(directory):
    path = os.path.join(directory, "config.json")
    config = _read_json(path, "an exported Tensorscope run holds config.json, model.safetensors and model.py")
    if not isinstance(config, dict) or config.get("format") != RUN_CONFIG_FORMAT:
        raise ValueError("%s: not a Tensorscope run config (format must be %r)" % (path, RUN_CONFIG_FORMAT))
    if "model" not in config or "attention" not in config["model"]:
        raise ValueError("%s: model.attention is missing" % path)
    specs = config["model"]["attention"]
    for i, spec in enumerate(specs if isinstance(specs, list) else [specs]):
        if spec.get("variant") not in VARIANTS:
            raise ValueError("%s: model.attention[%d]: unknown attention variant %r (known: %s)"
                             % (path, i, spec.get("variant"), ", ".join(VARIANTS)))
    return config


def build(config, vocab=None, seq_len=None, patch_dim=None, classes=None):
    """A freshly initialised model for a run config dict (PyTorch's default initialisation)."""
    return TensorscopeModel(config, vocab=vocab, seq_len=seq_len, patch_dim=patch_dim, classes=classes)


def load(directory=None):
    """The exported model of `directory` (default: this file's directory), in eval mode."""
    directory = directory or os.path.dirname(os.path.abspath(__file__))
    config = read_config(directory)
    weights_path = os.path.join(directory, "model.safetensors")
    if not os.path.isfile(weights_path):
        raise FileNotFoundError("%s: missing (the trained weights)" % weights_path)
    tensors, _ = load_safetensors(weights_path)
    kind = config["model"].get("kind", "decoder")
    if kind == "encoder_classifier":
        for name in ("patch_in.weight", "head.weight"):
            if name not in tensors:
                raise ValueError("%s: no '%s' (not an encoder classifier's weights)" % (weights_path, name))
        model = TensorscopeModel(config, patch_dim=tensors["patch_in.weight"].shape[1],
                                 classes=tensors["head.weight"].shape[0])
    else:
        if "embed.weight" not in tensors:
            raise ValueError("%s: no 'embed.weight' (not a decoder's weights)" % weights_path)
        model = TensorscopeModel(config, vocab=tensors["embed.weight"].shape[0])
    model.load_weights(tensors, weights_path)
    return model.eval()


# ---------------------------------------------------------------------------------------------
# vocabulary and greedy decoding (sequence tasks)


class Vocabulary:
    """A Tensorscope character vocabulary: `tokens[id]` is the text of token `id`; ids pad, bos,
    sep, eos (0 to 3) are the specials, every other token is one Unicode code point."""

    pad, bos, sep, eos = (wanted for _, wanted, _ in SPECIAL_TOKENS)

    def __init__(self, tokens):
        self.tokens = list(tokens)
        self.ids = {t: i for i, t in enumerate(self.tokens) if i > self.eos}  # characters only

    def __len__(self):
        return len(self.tokens)


def load_vocabulary(directory=None):
    """The Vocabulary in `directory`/vocab.json (default: this file's directory). Raises
    FileNotFoundError when it is missing (an image classifier's export has none) and ValueError
    when it is not a valid Tensorscope vocabulary."""
    directory = directory or os.path.dirname(os.path.abspath(__file__))
    path = os.path.join(directory, "vocab.json")
    v = _read_json(path, "exports of sequence tasks hold vocab.json; image classifiers have no vocabulary")
    if not isinstance(v, dict) or v.get("format") != VOCABULARY_FORMAT:
        raise ValueError("%s: not a Tensorscope vocabulary (format must be %r)" % (path, VOCABULARY_FORMAT))
    if v.get("version") != 1:
        raise ValueError("%s: unsupported version %r (this model.py reads version 1)" % (path, v.get("version")))
    tokens = v.get("tokens")
    if not isinstance(tokens, list) or not all(isinstance(t, str) for t in tokens):
        raise ValueError("%s: tokens must be a list of strings" % path)
    for key, wanted, text in SPECIAL_TOKENS:
        if v.get(key) != wanted or len(tokens) <= wanted or tokens[wanted] != text:
            raise ValueError("%s: %s must be id %d with token %r" % (path, key, wanted, text))
    for i, t in enumerate(tokens[len(SPECIAL_TOKENS):], len(SPECIAL_TOKENS)):
        if len(t) != 1:
            raise ValueError("%s: token %d is %r, not one character" % (path, i, t))
    if len(set(tokens)) != len(tokens):
        raise ValueError("%s: tokens must be distinct" % path)
    return Vocabulary(tokens)


def encode(vocab, text):
    """One id per code point of `text` (a list of ints). Raises ValueError naming the first
    character the vocabulary lacks and its code point, as Tensorscope's encode does."""
    ids = []
    for pos, c in enumerate(text):
        if c not in vocab.ids:
            code = "U+%04X" % ord(c)
            what = code if ord(c) < 0x20 or ord(c) == 0x7F else "'%s' (%s)" % (c, code)
            raise ValueError("cannot encode: character %s at character %d is not in the vocabulary" % (what, pos))
        ids.append(vocab.ids[c])
    return ids


def decode(vocab, ids):
    """The concatenated token texts of `ids`; specials appear as "<bos>" etc. Raises ValueError for
    an id outside the vocabulary."""
    out = []
    for i in ids:
        i = int(i)
        if not 0 <= i < len(vocab.tokens):
            raise ValueError("token id %d is outside the vocabulary [0, %d)" % (i, len(vocab.tokens)))
        out.append(vocab.tokens[i])
    return "".join(out)


def _greedy(net, prefix, stop, count):
    """Greedy decoding, as Tensorscope's exact match does: appends the argmax of the last
    position's logits to the token list `prefix` until `stop` (not appended), `count` new tokens or
    the model's seq_len; returns the new tokens. A model with a multilinear layer (fixed N) is fed
    the prefix right-padded with PAD to seq_len."""
    if net.classifier:
        raise ValueError("an image classifier has no vocabulary to decode")
    if not prefix or len(prefix) > net.seq_len:
        raise ValueError("the prompt has %d tokens; the model takes 1 to %d" % (len(prefix), net.seq_len))
    fixed = any(isinstance(b.attn, Multilinear) for b in net.blocks)
    device = next(net.parameters()).device
    seq, new = list(prefix), []
    with torch.no_grad():
        while len(new) < count:
            x = seq + [0] * (net.seq_len - len(seq)) if fixed else seq
            logits = net(torch.tensor([x], dtype=torch.int64, device=device))
            token = int(logits[0, len(seq) - 1].argmax())
            if token == stop:
                break
            new.append(token)
            if len(seq) == net.seq_len:
                break
            seq.append(token)
    return new


def answer(net, vocab, question, max_new_tokens=None):
    """The model's answer to `question` (question-answer tasks): greedy decoding of
    [BOS] question [SEP] until [EOS], `max_new_tokens` tokens (default: as many as seq_len allows)
    or seq_len, decoded without the EOS. Raises ValueError for a character outside the vocabulary."""
    prompt = [vocab.bos] + encode(vocab, question) + [vocab.sep]
    count = max_new_tokens if max_new_tokens is not None else net.seq_len
    return decode(vocab, _greedy(net, prompt, vocab.eos, count))


def generate(net, vocab, prompt, n):
    """char_lm: the greedy continuation of `prompt` (`n` characters at most, fewer when the
    context of seq_len tokens is full)."""
    return decode(vocab, _greedy(net, encode(vocab, prompt), None, n))
