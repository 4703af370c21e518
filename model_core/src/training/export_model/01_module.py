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
  slots (mhsa, fixed_head) K, V of G groups (head h reads h // (H/G)); logits mixed across heads by
                      mix_pre before the softmax and weights by mix_post after it; o ⊙ σ(x Wgᵀ) per head
                      or element
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


