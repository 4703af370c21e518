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


def _head_mixing(module, name, slots, on_key, drawn_key, H):
    """Sets parameter `name` [H, H] (to-head, from-head) when slots[on_key]: the drawn values of
    slots[drawn_key] (the identity when none), with frozen entries (trainable 0) kept as
    non-persistent buffers `<name>_frozen` and `<name>_mask`, as the dense core C keeps them."""
    if not slots.get(on_key):
        setattr(module, name, None)
        return
    drawn = slots.get(drawn_key)
    values = _matrix(drawn["values"], H, H, "slots.%s.values" % drawn_key) if drawn else torch.eye(H)
    trainable = drawn.get("trainable", True) if drawn else True
    if isinstance(trainable, bool):
        mask = torch.full((H, H), trainable, dtype=torch.bool)
    else:
        mask = torch.tensor(_flatten(trainable), dtype=torch.long).reshape(H, H) != 0
    setattr(module, name, nn.Parameter(values.clone(), requires_grad=bool(mask.any())))
    if not bool(mask.all()):
        module.register_buffer(name + "_frozen", values.clone(), persistent=False)
        module.register_buffer(name + "_mask", mask, persistent=False)


def head_mixing(module, name):
    """The mixing `name` as the layer applies it: the parameter where trained, the drawn value
    where frozen; None when the layer has no such mixing."""
    p = getattr(module, name, None)
    if p is None:
        return None
    mask = getattr(module, name + "_mask", None)
    return torch.where(mask, p, getattr(module, name + "_frozen")) if mask is not None else p


class Mhsa(nn.Module):
    """mhsa, fixed_head (free head size D, scale 1/√D) and tp (roles r = x·Wrᵀ bound by o ⊙ r), with the
    slots of mhsa and fixed_head: K and V shared by G groups of heads (query head h reads group
    h // (H/G): MQA, GQA), talking heads before (mix_pre) and after (mix_post) the softmax, and the
    output gate σ(x·Wgᵀ) per head or per element."""

    def __init__(self, spec):
        super().__init__()
        self.spec = spec
        z = spec["sizes"]
        slots = spec.get("slots", {})
        F_, H, HD = z["F"], z["H"], z["H"] * z["D"]
        self.heads, self.scale, self.causal = H, 1.0 / math.sqrt(z["D"]), bool(spec["causal"])
        self.groups = slots.get("kv_groups", 0) or H
        self.gate = slots.get("gate", "none")
        self.wq = nn.Linear(F_, HD, bias=spec["bias"])
        self.wk = nn.Linear(F_, self.groups * z["D"], bias=spec["bias"])
        self.wv = nn.Linear(F_, self.groups * z["D"], bias=spec["bias"])
        self.wr = nn.Linear(F_, HD, bias=spec["bias"]) if spec["variant"] == "tp" else None
        self.wg = nn.Linear(F_, H if self.gate == "headwise" else HD, bias=spec["bias"]) if self.gate != "none" else None
        self.wo = nn.Linear(HD, F_, bias=spec["bias"])
        _head_mixing(self, "mix_pre", slots, "pre_mix", "pre_mixing", H)
        _head_mixing(self, "mix_post", slots, "post_mix", "post_mixing", H)
        self.dropout = nn.Dropout(spec.get("dropout", 0.0))
        self.size, self.rotary = z["D"], None  # rotary: None, "half" or "interleaved" (set by the model)

    def forward(self, x, with_maps=False):
        _check_input(self.spec, x)
        H, G = self.heads, self.groups
        q = split_heads(rotary(self.wq(x), self.size, self.rotary), H)
        k, v = split_heads(rotary(self.wk(x), self.size, self.rotary), G), split_heads(self.wv(x), G)  # [B, G, N, D]
        if G != H:
            k, v = k.repeat_interleave(H // G, dim=1), v.repeat_interleave(H // G, dim=1)
        logits = torch.matmul(q, k.transpose(-2, -1))
        if self.mix_pre is not None:
            logits = torch.einsum("lh,bhnm->blnm", head_mixing(self, "mix_pre"), logits)
        P = masked_softmax(logits * self.scale, self.causal)  # [B, H, N, N]
        if self.mix_post is not None:
            P = torch.einsum("wl,blnm->bwnm", head_mixing(self, "mix_post"), P)
        o = torch.matmul(self.dropout(P), v)
        self.roles = None
        if self.wr is not None:
            r = split_heads(self.wr(x), H)  # [B, H, N, D] role vectors
            o = o * r
            self.roles = r
        if self.wg is not None:
            g = torch.sigmoid(self.wg(x))  # [B, N, H] or [B, N, H·D]
            o = o * (g.transpose(1, 2).unsqueeze(-1) if self.gate == "headwise" else split_heads(g, H))
        y = self.wo(merge_heads(o))
        return (y, P) if with_maps else y


class DiffAttention(nn.Module):
    """Differential attention (slots.differential; Ye et al. 2024, microsoft/unilm
    Diff-Transformer/multihead_diffattn.py): H heads, each with two query/key maps of size D (rows
    (2h + i)·D of wq and wk) and a value head of size 2D; A_h = P_(h,0) − λ·P_(h,1) with
    λ = exp(λq1·λk1) − exp(λq2·λk2) + λ_init and λ_init = 0.8 − 0.6·exp(−0.3·layer); each head's
    A_h·V_h is RMS-normalised over its 2D features (eps 1e-5), weighted by subln.weight and scaled
    by 1 − λ_init. The maps returned are A [B, H, N, N]."""

    def __init__(self, spec, layer=0):
        super().__init__()
        self.spec = spec
        z = spec["sizes"]
        F_, H, D = z["F"], z["H"], z["D"]
        self.heads, self.size, self.causal = H, D, bool(spec["causal"])
        self.groups = spec.get("slots", {}).get("kv_groups", 0) or H  # shared K/V: the official repeat_kv
        self.wq = nn.Linear(F_, 2 * H * D, bias=spec["bias"])
        self.wk = nn.Linear(F_, 2 * self.groups * D, bias=spec["bias"])
        self.wv = nn.Linear(F_, 2 * self.groups * D, bias=spec["bias"])
        self.wo = nn.Linear(2 * H * D, F_, bias=spec["bias"])
        self.lambda_init = 0.8 - 0.6 * math.exp(-0.3 * layer)
        for name in ("lambda_q1", "lambda_k1", "lambda_q2", "lambda_k2"):
            setattr(self, name, nn.Parameter(torch.randn(D) * 0.1))
        self.subln = nn.Module()
        self.subln.weight = nn.Parameter(torch.ones(2 * D))
        self.dropout = nn.Dropout(spec.get("dropout", 0.0))
        self.rotary = None  # None, "half" or "interleaved" (set by the model): every map's q and k turned

    def forward(self, x, with_maps=False):
        _check_input(self.spec, x)
        B, N, _ = x.shape
        H, D = self.heads, self.size
        G = self.groups
        q = split_heads(rotary(self.wq(x), D, self.rotary), 2 * H)  # [B, 2H, N, D]: map i of head h is 2h + i
        # Query map j reads key map j // (H/G) of 2G; head h reads value head h // (H/G) of G.
        k = split_heads(rotary(self.wk(x), D, self.rotary), 2 * G).repeat_interleave(H // G, dim=1)
        v = split_heads(self.wv(x), G).repeat_interleave(H // G, dim=1)  # [B, H, N, 2D]
        P = masked_softmax(torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(D), self.causal).view(B, H, 2, N, N)
        lam = (torch.exp(torch.dot(self.lambda_q1, self.lambda_k1)) - torch.exp(torch.dot(self.lambda_q2, self.lambda_k2))
               + self.lambda_init)
        A = P[:, :, 0] - lam * P[:, :, 1]
        o = torch.matmul(self.dropout(A), v)  # [B, H, N, 2D]
        o = o * torch.rsqrt(o.pow(2).mean(-1, keepdim=True) + 1e-5) * self.subln.weight * (1.0 - self.lambda_init)
        y = self.wo(merge_heads(o))
        return (y, A) if with_maps else y


class RmsNormWeight(nn.Module):
    """Holds the `weight` of an RMSNorm (eps given at the call), as the official module names it."""

    def __init__(self, size):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(size))

    def forward(self, u, eps):
        return u * torch.rsqrt(u.pow(2).mean(-1, keepdim=True) + eps) * self.weight


def rotary(u, block, pairs="half", theta=10000.0):
    """Rotary positions (contract section 9): u [B, N, ..., X] with the token on axis 1, X whole
    blocks (heads) of the even size `block`; pair j of each block turned by n·theta^(-2j/block).
    `pairs` "half" pairs feature j with j + block/2 (GPT-NeoX, Hugging Face Llama/Qwen rotate_half),
    "interleaved" pairs 2j with 2j + 1 (RoFormer, Meta's Llama, DeepSeek). Angles in float64."""
    if pairs is None or block == 0:
        return u
    B, N, half = u.shape[0], u.shape[1], block // 2
    freqs = theta ** (-torch.arange(0, block, 2, dtype=torch.float64, device=u.device) / block)
    angle = torch.outer(torch.arange(N, dtype=torch.float64, device=u.device), freqs).view(1, N, 1, half)
    cos, sin = torch.cos(angle).to(u.dtype), torch.sin(angle).to(u.dtype)
    t = u.reshape(B, N, -1, block)
    if pairs == "interleaved":
        a, b = t[..., 0::2], t[..., 1::2]
    else:
        a, b = t[..., :half], t[..., half:]
    ra, rb = a * cos - b * sin, a * sin + b * cos
    out = torch.stack((ra, rb), -1).flatten(-2) if pairs == "interleaved" else torch.cat((ra, rb), -1)
    return out.reshape(u.shape)


def mla_rotary(u, theta=10000.0):
    """DeepSeek's interleaved rotary turn of u [B, N, ..., r] at positions 0 .. N-1: the pair
    (u_2j, u_2j+1) turned by n·theta^(-2j/r) (deepseek-ai/DeepSeek-V3 apply_rotary_emb)."""
    return rotary(u, u.shape[-1], "interleaved", theta)


class Mla(nn.Module):
    """Multi-head latent attention (slots.latent; contract section 8.6; deepseek-ai/DeepSeek-V3
    inference/model.py class MLA, commit 1ea5a1a7): heads of content size D and rotary size r,
    keys and values from the RMS-normalised latent c = kv_norm(wkv_a(x)[:L]) through wkv_b, one
    rotary key wkv_a(x)[L:] for all heads, logits scaled by (D + r)^-1/2. `order` naive forms the
    keys and values per head; absorbed folds wkv_b's key half into the query and its value half
    after the softmax (the same function). No biases; RMSNorm eps 1e-6; no YaRN."""

    def __init__(self, spec):
        super().__init__()
        self.spec = spec
        z, lat = spec["sizes"], spec["slots"]["latent"]
        F_, H, D = z["F"], z["H"], z["D"]
        L, q, r = int(lat["kv_rank"]), int(lat.get("q_rank", 0)), int(lat.get("rope_dim", 0))
        self.heads, self.size, self.kv_rank, self.rope = H, D, L, r
        self.absorbed = lat.get("order", "naive") == "absorbed"
        self.causal = bool(spec["causal"])
        if q == 0:
            self.wq = nn.Linear(F_, H * (D + r), bias=False)
        else:
            self.wq_a = nn.Linear(F_, q, bias=False)
            self.q_norm = RmsNormWeight(q)
            self.wq_b = nn.Linear(q, H * (D + r), bias=False)
        self.q_rank = q
        self.wkv_a = nn.Linear(F_, L + r, bias=False)
        self.kv_norm = RmsNormWeight(L)
        self.wkv_b = nn.Linear(L, 2 * H * D, bias=False)
        self.wo = nn.Linear(H * D, F_, bias=False)
        self.dropout = nn.Dropout(spec.get("dropout", 0.0))

    def forward(self, x, with_maps=False):
        _check_input(self.spec, x)
        B, N, _ = x.shape
        H, D, L, r = self.heads, self.size, self.kv_rank, self.rope
        q = self.wq(x) if self.q_rank == 0 else self.wq_b(self.q_norm(self.wq_a(x), 1e-6))
        q = q.view(B, N, H, D + r)
        q_nope, q_pe = q[..., :D], mla_rotary(q[..., D:])
        kv = self.wkv_a(x)
        c, k_pe = self.kv_norm(kv[..., :L], 1e-6), mla_rotary(kv[..., L:])  # [B, M, L], [B, M, r]
        w = self.wkv_b.weight.view(H, 2 * D, L)
        if not self.absorbed:
            kvb = self.wkv_b(c).view(B, N, H, 2 * D)
            logits = torch.einsum("bnhd,bmhd->bhnm", q_nope, kvb[..., :D])
        else:
            logits = torch.einsum("bnhc,bmc->bhnm", torch.einsum("bnhd,hdc->bnhc", q_nope, w[:, :D]), c)
        if r > 0:
            logits = logits + torch.einsum("bnhr,bmr->bhnm", q_pe, k_pe)
        P = masked_softmax(logits / math.sqrt(D + r), self.causal)  # [B, H, N, M]
        Pd = self.dropout(P)
        if not self.absorbed:
            o = torch.einsum("bhnm,bmhd->bnhd", Pd, kvb[..., D:])
        else:
            o = torch.einsum("bnhc,hdc->bnhd", torch.einsum("bhnm,bmc->bnhc", Pd, c), w[:, D:])
        y = self.wo(o.reshape(B, N, H * D))
        return (y, P) if with_maps else y


def tpa_rotary(u, base=10000.0):
    """T6's half-split rotary turn of u [B, N, ..., D] at positions 0 .. N-1 (tensorgi/TPA
    model/T6.py apply_rotary_emb, commit 3d7f51d): (u1 cos + u2 sin, -u1 sin + u2 cos) with
    u1 = u[..., :D/2], u2 = u[..., D/2:] and the angle n·base^(-2j/D) (here in float64)."""
    N, D = u.shape[1], u.shape[-1]
    freqs = base ** (-torch.arange(0, D, 2, dtype=torch.float64, device=u.device) / D)
    angle = torch.outer(torch.arange(N, dtype=torch.float64, device=u.device), freqs)
    shape = [1, N] + [1] * (u.dim() - 3) + [D // 2]
    cos, sin = torch.cos(angle).to(u.dtype).view(shape), torch.sin(angle).to(u.dtype).view(shape)
    u1, u2 = u[..., : D // 2], u[..., D // 2 :]
    return torch.cat((u1 * cos + u2 * sin, u2 * cos - u1 * sin), -1)


class Tpa(nn.Module):
    """Tensor Product Attention (slots.tpa; contract section 8.7; tensorgi/TPA model/T6.py
    CPLinear, commit 3d7f51d): q, k, v per token (1/R)·Σ_r A[h, r]·B[r, :], the head factors A from
    W_A_* (or the constants A_* when not contextual), the feature factors B from W_B_* (or the
    constants B_* [R, D] when contextual_b is false), the rotary on the feature factors of q and k;
    q_rank 0 gives the queries as MHSA, wq, turned (T6_kvonly). Then MHSA's softmax attention (1/√D),
    T6's head norm subln (RMSNorm of each head, eps 1e-5) when group_norm is set, and wo. No biases."""

    def __init__(self, spec):
        super().__init__()
        self.spec = spec
        z, t = spec["sizes"], spec["slots"]["tpa"]
        F_, H, D = z["F"], z["H"], z["D"]
        self.heads, self.size = H, D
        self.ranks = {"q": int(t.get("q_rank", 0)), "k": int(t["k_rank"]), "v": int(t["v_rank"])}
        self.contextual = bool(t.get("contextual_a", True))
        self.contextual_b = bool(t.get("contextual_b", True))
        self.rope = bool(t.get("rope", True))
        self.base = float(t.get("rope_base", 10000.0))
        self.causal = bool(spec["causal"])
        if self.ranks["q"] == 0:
            self.wq = nn.Linear(F_, H * D, bias=False)
        for v, R in self.ranks.items():
            if R == 0:
                continue
            if self.contextual:
                setattr(self, "W_A_" + v, nn.Linear(F_, H * R, bias=False))
            else:
                setattr(self, "A_" + v, nn.Parameter(torch.randn(H, R)))
        for v, R in self.ranks.items():
            if R > 0 and self.contextual_b:
                setattr(self, "W_B_" + v, nn.Linear(F_, R * D, bias=False))
            elif R > 0:
                setattr(self, "B_" + v, nn.Parameter(torch.randn(R, D)))
        self.subln = RmsNormWeight(D) if t.get("group_norm") else None
        self.wo = nn.Linear(H * D, F_, bias=False)
        self.dropout = nn.Dropout(spec.get("dropout", 0.0))

    def _made(self, x, v, turn):
        B, N, _ = x.shape
        H, D, R = self.heads, self.size, self.ranks[v]
        if self.contextual_b:
            b = getattr(self, "W_B_" + v)(x).view(B, N, R, D)
        else:  # the constants, the same for every token (turned by position below)
            b = getattr(self, "B_" + v).expand(B, N, R, D)
        if turn:
            b = tpa_rotary(b, self.base)
        if self.contextual:
            a = getattr(self, "W_A_" + v)(x).view(B, N, H, R)
            return torch.einsum("bnhr,bnrd->bnhd", a, b) / R
        return torch.einsum("hr,bnrd->bnhd", getattr(self, "A_" + v), b) / R

    def forward(self, x, with_maps=False):
        _check_input(self.spec, x)
        B, N, _ = x.shape
        H, D = self.heads, self.size
        if self.ranks["q"] == 0:
            q = self.wq(x).view(B, N, H, D)
            q = tpa_rotary(q, self.base) if self.rope else q
        else:
            q = self._made(x, "q", self.rope)
        k, v = self._made(x, "k", self.rope), self._made(x, "v", False)
        P = masked_softmax(torch.einsum("bnhd,bmhd->bhnm", q, k) / math.sqrt(D), self.causal)
        o = torch.einsum("bhnm,bmhd->bnhd", self.dropout(P), v)
        if self.subln is not None:
            o = self.subln(o, 1e-5)
        y = self.wo(o.reshape(B, N, H * D))
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
        self.rotary = None  # None, "half" or "interleaved" (thsa, set by the model): blocks of D turned

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
        q, k, v = rotary(self.wq(x), D, self.rotary), rotary(self.wk(x), D, self.rotary), self.wv(x)  # [B, N, R]
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


class Mta(nn.Module):
    """Multi-token attention (slots.mta; contract section 8.8; facebookresearch/RAM
    projects/mta/mta_transformer.py class Attention, commit e6f051f). Per head, the scaled logits are
    convolved over (query, key) offsets by mta_kernel [H, c_q, c_k] (future entries zeroed first,
    zero padding: c_q - 1 earlier queries, the keys as `pad`), mixed across heads by mix_pre [to, from],
    masked and softmaxed; the weights convolved by mta_kernel_after_sm (masked entries zeroed after),
    mixed in groups by head_kernel [H/g, g, g] (from, to) or by mix_post [to, from]; each head's output
    RMS-normalised over D (subln.weight, eps 1e-5, times 1 - lambda_init with norm_rescale) and gated
    by sigmoid(gate(o_h)). The maps returned are the weights that meet V [B, H, N, N]."""

    def __init__(self, spec, layer=0):
        super().__init__()
        self.spec = spec
        z, slots = spec["sizes"], spec.get("slots", {})
        m = slots["mta"]
        F_, H, D = z["F"], z["H"], z["D"]
        self.heads, self.scale, self.causal = H, 1.0 / math.sqrt(D), bool(spec["causal"])
        self.groups = slots.get("kv_groups", 0) or H
        self.pad = m.get("pad", "both")
        self.wq = nn.Linear(F_, H * D, bias=spec["bias"])
        self.wk = nn.Linear(F_, self.groups * D, bias=spec["bias"])
        self.wv = nn.Linear(F_, self.groups * D, bias=spec["bias"])
        self.wo = nn.Linear(H * D, F_, bias=spec["bias"])
        cq, ck = m.get("q_kernel", 0), m.get("k_kernel", 0)
        pq, pk = m.get("post_q_kernel", 0), m.get("post_k_kernel", 0)
        self.mta_kernel = nn.Parameter(self._start(m.get("kernel"), H, cq, ck)) if cq else None
        _head_mixing(self, "mix_pre", slots, "pre_mix", "pre_mixing", H)
        self.mta_kernel_after_sm = nn.Parameter(self._start(m.get("post_kernel"), H, pq, pk)) if pq else None
        g = m.get("head_group", 0)
        self.head_kernel = nn.Parameter(torch.eye(g).repeat(H // g, 1, 1)) if g else None
        _head_mixing(self, "mix_post", slots, "post_mix", "post_mixing", H)
        self.subln = RmsNormWeight(D) if m.get("group_norm") else None
        self.norm_scale = 1.0 - (0.8 - 0.6 * math.exp(-0.3 * layer)) if m.get("norm_rescale") else 1.0
        gate = m.get("out_gate", "none")
        self.gate = nn.Linear(D, 1 if gate == "headwise" else D) if gate != "none" else None
        self.dropout = nn.Dropout(spec.get("dropout", 0.0))
        self.size, self.rotary = D, None  # rotary: None, "half" or "interleaved" (set by the model)

    def _left(self, ck):
        return {"both": (ck - 1) // 2, "left": ck - 1, "right": 0}[self.pad]

    def _identity(self, H, cq, ck):
        k = torch.zeros(H, cq, ck)
        k[:, cq - 1, self._left(ck)] = 1.0
        return k

    def _start(self, drawn, H, cq, ck):
        """A kernel's start: the spec's drawn values [head][query offset][key offset], else the identity."""
        if drawn is None:
            return self._identity(H, cq, ck)
        flat = a_list(drawn)
        if len(flat) != H * cq * ck:
            raise ValueError("an MTA kernel must hold %d x %d x %d values; got %d" % (H, cq, ck, len(flat)))
        return torch.tensor(flat, dtype=torch.float64).reshape(H, cq, ck).float()

    def _convolve(self, maps, kernel, future):
        if future is not None:
            maps = maps.masked_fill(future, 0.0)
        cq, ck = kernel.shape[1], kernel.shape[2]
        left = self._left(ck)
        padded = F.pad(maps, (left, ck - 1 - left, cq - 1, 0))
        return F.conv2d(padded, kernel.unsqueeze(1), groups=self.heads)

    def forward(self, x, with_maps=False):
        _check_input(self.spec, x)
        B, N, _ = x.shape
        H, G = self.heads, self.groups
        q = split_heads(rotary(self.wq(x), self.size, self.rotary), H)
        k, v = split_heads(rotary(self.wk(x), self.size, self.rotary), G), split_heads(self.wv(x), G)
        if G != H:
            k, v = k.repeat_interleave(H // G, dim=1), v.repeat_interleave(H // G, dim=1)
        S = torch.matmul(q, k.transpose(-2, -1)) * self.scale
        future = future_mask(N, N, x.device) if self.causal else None
        if self.mta_kernel is not None:
            S = self._convolve(S, self.mta_kernel, future)
        if self.mix_pre is not None:
            S = torch.einsum("gh,bhnm->bgnm", head_mixing(self, "mix_pre"), S)
        if future is not None:
            S = S.masked_fill(future, -math.inf)
        P = torch.softmax(S, -1)
        if self.mta_kernel_after_sm is not None:
            P = self._convolve(P, self.mta_kernel_after_sm, future)
            if future is not None:
                P = P.masked_fill(future, 0.0)
        if self.head_kernel is not None:
            g = self.head_kernel.shape[1]
            P = torch.einsum("bcinm,cij->bcjnm", P.reshape(B, H // g, g, N, N), self.head_kernel).reshape(B, H, N, N)
        elif self.mix_post is not None:
            P = torch.einsum("gh,bhnm->bgnm", head_mixing(self, "mix_post"), P)
        o = torch.matmul(self.dropout(P), v).transpose(1, 2)  # [B, N, H, D]
        if self.subln is not None:
            o = self.subln(o, 1e-5) * self.norm_scale
        if self.gate is not None:
            o = o * torch.sigmoid(self.gate(o))
        y = self.wo(o.reshape(B, N, -1))
        return (y, P) if with_maps else y


class Collaborative(nn.Module):
    """Collaborative attention (slots.collaborative; Cordonnier, Loukas, Jaggi 2020,
    epfml/collaborative-attention, class CollaborativeAttention): one query and one key space of
    D~ = key_dim features for every head (wq, wk without bias), head h reading it through its mixing
    vector (mixing [H, D~]); the optional content bias x_m·w^c_h (content_bias, no bias) is added to
    head h's logits for key m; both divided by sqrt(D~/H). Values, the output gate and wo as Mhsa."""

    def __init__(self, spec):
        super().__init__()
        self.spec = spec
        z = spec["sizes"]
        slots = spec.get("slots", {})
        c = slots["collaborative"]
        F_, H, HD, Dk = z["F"], z["H"], z["H"] * z["D"], c["key_dim"]
        self.heads, self.causal = H, bool(spec["causal"])
        self.scale = 1.0 / math.sqrt(Dk / H)  # the official attention_head_size D~/H need not be an integer
        self.gate = slots.get("gate", "none")
        self.wq = nn.Linear(F_, Dk, bias=False)
        self.wk = nn.Linear(F_, Dk, bias=False)
        self.content_bias = nn.Linear(F_, H, bias=False) if c.get("content_bias", True) else None
        self.wv = nn.Linear(F_, HD, bias=spec["bias"])
        mixing = torch.zeros(H, Dk)
        if c.get("mixing_init", "normal") == "concatenate":  # head h: ones on its block of ceil(D~/H)
            block = -(-Dk // H)
            for h in range(H):
                mixing[h, h * block:(h + 1) * block] = 1.0
        else:  # the official default, N(0, 0.2^2)
            mixing.normal_(std=0.2)
        self.mixing = nn.Parameter(mixing)
        self.wg = nn.Linear(F_, H if self.gate == "headwise" else HD, bias=spec["bias"]) if self.gate != "none" else None
        self.wo = nn.Linear(HD, F_, bias=spec["bias"])
        self.dropout = nn.Dropout(spec.get("dropout", 0.0))

    def forward(self, x, with_maps=False):
        _check_input(self.spec, x)
        H = self.heads
        q = self.wq(x).unsqueeze(1) * self.mixing.unsqueeze(1)  # [B, H, N, D~]: q~ ⊙ m_h
        logits = torch.matmul(q, self.wk(x).unsqueeze(1).transpose(-2, -1))  # [B, H, N, M]
        if self.content_bias is not None:
            logits = logits + self.content_bias(x).transpose(1, 2).unsqueeze(2)  # [B, H, 1, M]
        P = masked_softmax(logits * self.scale, self.causal)
        o = torch.matmul(self.dropout(P), split_heads(self.wv(x), H))
        if self.wg is not None:
            g = torch.sigmoid(self.wg(x))
            o = o * (g.transpose(1, 2).unsqueeze(-1) if self.gate == "headwise" else split_heads(g, H))
        y = self.wo(merge_heads(o))
        return (y, P) if with_maps else y


def make_attention(spec, layer=0):
    """The attention module of one layer spec (the JSON object of config.json model.attention);
    `layer` is the block's index (0 first), on which differential attention's λ_init depends."""
    variant = spec.get("variant")
    if variant in ("mhsa", "fixed_head") and spec.get("slots", {}).get("differential"):
        return DiffAttention(spec, layer)
    if variant in ("mhsa", "fixed_head") and spec.get("slots", {}).get("latent"):
        return Mla(spec)
    if variant in ("mhsa", "fixed_head") and spec.get("slots", {}).get("tpa"):
        return Tpa(spec)
    if variant in ("mhsa", "fixed_head") and spec.get("slots", {}).get("mta"):
        return Mta(spec, layer)
    if variant in ("mhsa", "fixed_head") and spec.get("slots", {}).get("collaborative"):
        return Collaborative(spec)
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


