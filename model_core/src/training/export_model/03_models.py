# ---------------------------------------------------------------------------------------------
# the models


class Block(nn.Module):
    """Pre-LN block: x + attn(LN1(x)), then + fc2(GELU(fc1(LN2(x))))."""

    def __init__(self, spec, ffn_multiplier, residual_dropout, layer=0):
        super().__init__()
        F_ = spec["sizes"]["F"]
        self.ln1 = nn.LayerNorm(F_)
        self.attn = make_attention(spec, layer)
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
        elif positions not in ("rotary", "rotary_interleaved"):
            raise ValueError("unknown model.positions %r (learned, sinusoidal, rotary or rotary_interleaved)" % positions)
        self.rotary = {"rotary": "half", "rotary_interleaved": "interleaved"}.get(positions)
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
            blocks.append(Block(spec, int(m.get("ffn_multiplier", 4)), float(m.get("residual_dropout", 0.0)), i))
        self.blocks = nn.ModuleList(blocks)
        if self.rotary is not None:  # no position table: every layer turns its queries and keys
            for i, block in enumerate(self.blocks):
                if not hasattr(block.attn, "rotary"):
                    raise ValueError("layer %d (%s) does not take rotary positions" % (i, type(block.attn).__name__))
                block.attn.rotary = self.rotary
        self.ln_f = nn.LayerNorm(F_)
        if self.classifier:
            self.head = nn.Linear(F_, classes)
        elif not m.get("tied_embeddings", True):
            self.head = nn.Linear(F_, vocab, bias=False)

    def embed_input(self, x):
        N = x.shape[1]
        if self.rotary is not None:
            return self.patch_in(x) if self.classifier else self.embed(x)
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
            for name in ("mix_pre", "mix_post"):  # a mixing with frozen entries as it applies
                if getattr(block.attn, name + "_mask", None) is not None:
                    out["blocks.%d.attn.%s" % (i, name)] = head_mixing(block.attn, name).detach()
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


