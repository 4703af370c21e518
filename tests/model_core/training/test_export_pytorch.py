"""End-to-end check of `tensorscope export --format pytorch`: for small configs covering every
attention variant, every THSA core preset, custom Kronecker/dense cores, every task, learned and
sinusoidal and rotary positions, tied and untied heads and the TP role embedding, it trains a few steps with
`tensorscope train`, exports the run, imports the exported model.py and checks that its logits equal
the C++ logits of `tensorscope infer` on the same random input (max abs difference < 1e-4).
For sequence tasks it checks vocab.json and model.py's vocabulary functions (load_vocabulary,
encode, decode), and for a few runs that answer() / generate() give the text of Tensorscope's own
greedy decoding (one `tensorscope infer` per token); image classifiers' exports hold no vocab.json.
It also checks the export's error messages.

usage: test_export_pytorch.py [--device cpu|cuda] TENSORSCOPE_BINARY WORK_DIR [NAME_SUBSTRING...]
Prints "N passed, M failed" and exits non-zero when any case fails.

--device cuda (issue 16): the runs train on the GPU (train.device "cuda"), `tensorscope infer` runs
there, and the exported module is moved to the GPU before it is compared. Without a usable CUDA
device (in PyTorch or in the tensorscope binary's LibTorch) it prints why and exits with 77, which
CTest reports as skipped.
"""
import copy
import importlib.util
import json
import os
import shutil
import struct
import subprocess
import sys
import traceback

import torch

TOLERANCE = 1e-4
FASHION_MNIST = "/usr/share/datasets/fashion-mnist"
SPECIALS = ["<pad>", "<bos>", "<sep>", "<eos>"]
ALGORITHMIC_SYMBOLS = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
# Runs whose answer() (question-answer tasks) or generate() (char_lm) is compared with Tensorscope's
# greedy decoding: a copy and an arithmetic run, a multilinear run (fixed N: padded prompts) and a
# char_lm run.
DECODING_CASES = ("mhsa_copy_learned_tied", "arithmetic_thsa_dense", "multilinear_causal", "char_lm_corpus_skip_left")
NEW_TOKENS = 6

# ---------------------------------------------------------------------------------------------
# safetensors (the same logic as tests/python/safetensors_py.py, kept here so the test stands alone)

DTYPES = {"F64": torch.float64, "F32": torch.float32, "I64": torch.int64, "I32": torch.int32,
          "U8": torch.uint8, "BOOL": torch.bool}
NAMES = {v: k for k, v in DTYPES.items()}


def st_load(path):
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n].decode("utf-8"))
    data = raw[8 + n:]
    header.pop("__metadata__", None)
    out = {}
    for name, e in header.items():
        begin, end = e["data_offsets"]
        t = torch.frombuffer(bytearray(data[begin:end]), dtype=DTYPES[e["dtype"]]) if end > begin \
            else torch.empty(0, dtype=DTYPES[e["dtype"]])
        out[name] = t.reshape(e["shape"]).clone()
    return out


def st_save(path, tensors):
    header, chunks, offset = {}, [], 0
    for name in sorted(tensors):
        t = tensors[name].contiguous()
        b = t.reshape(-1).view(torch.uint8).numpy().tobytes()
        header[name] = {"dtype": NAMES[t.dtype], "shape": list(t.shape), "data_offsets": [offset, offset + len(b)]}
        chunks.append(b)
        offset += len(b)
    h = json.dumps(header).encode("utf-8")
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(chunks))


# ---------------------------------------------------------------------------------------------
# configs


def attention(variant, F=16, H=2, D=8, R=None, P=2, c=2, seq_len=16, causal=True, bias=False, core=None,
              core_softmax=False, slots=None):
    spec = {"format": "tensorscope.attention_spec", "version": 1, "variant": variant,
            "sizes": {"F": F, "H": H, "D": D, "R": R if R is not None else H * D, "P": P, "c": c,
                      "seq_len": seq_len},
            "causal": causal, "bias": bias, "dropout": 0.0, "core_softmax": core_softmax}
    if core is not None:
        spec["core"] = core
    if slots is not None:
        spec["slots"] = {"kv_groups": 0, "pre_mix": False, "post_mix": False, "gate": "none", **slots}
    return spec


def preset(name, H=2, D=8, **kw):
    if name in ("heads_only", "trainable_heads_only"):
        D = 1
    return attention("thsa", H=H, D=D, core={"preset": name}, **kw)


def run_config(att, task="copy", seq_len=16, kind="decoder", layers=2, F=16, positions="learned", tied=True,
               tp_role=False, batch=4, extra_task=None):
    task_cfg = {"name": task, "seed": 3, "seq_len": seq_len, "algorithmic_length": 4}
    task_cfg.update(extra_task or {})
    return {"format": "tensorscope.run_config", "version": 1,
            "model": {"kind": kind, "layers": layers, "d_model": F, "ffn_multiplier": 2,
                      "positions": positions, "tied_embeddings": tied, "tp_role_embedding": tp_role,
                      "residual_dropout": 0.0, "attention": att if isinstance(att, list) else [att]},
            "task": task_cfg,
            "train": {"steps": 3, "batch": batch, "lr": 3e-3, "warmup": 1, "eval_interval": 100,
                      "eval_examples": 4, "checkpoint_interval": 100, "inspect_interval": 100, "seed": 7,
                      "threads": 1}}


def cases(corpus):
    H4 = 2 ** 0.25
    out = [
        ("mhsa_copy_learned_tied", run_config(attention("mhsa"))),
        ("mhsa_bias_reverse_sinusoidal_untied",
         run_config(attention("mhsa", bias=True), task="reverse", positions="sinusoidal", tied=False)),
        ("fixed_head_sort", run_config(attention("fixed_head", H=2, D=12), task="sort")),
        ("tp_copy_role_embedding_untied", run_config(attention("tp"), tp_role=True, tied=False)),
        ("tp_sinusoidal_role_embedding", run_config(attention("tp", bias=True), positions="sinusoidal", tp_role=True)),
        ("thsa_linear_causal", run_config(attention("thsa_linear", core={"preset": "thsa"}))),
        ("thsa_linear_bias_skip_left", run_config(attention("thsa_linear", bias=True, core={"preset": "skip_left"}))),
        ("multilinear_causal", run_config(attention("multilinear", R=8, P=3, seq_len=16))),
        ("multilinear_core_softmax_sinusoidal",
         run_config(attention("multilinear", R=8, P=2, seq_len=16, core_softmax=True), positions="sinusoidal")),
        ("dimwise_causal", run_config(attention("dimwise", R=8, c=3))),
        ("dimwise_bias_untied", run_config(attention("dimwise", R=8, c=2, bias=True), tied=False)),
        ("mixed_layers", run_config([attention("mhsa"), preset("skip_right")])),
        # The slots of mhsa and fixed_head (docs/attention-variants.md section 8).
        ("gqa_reverse", run_config(attention("mhsa", H=4, D=4, slots={"kv_groups": 2}), task="reverse")),
        ("mqa_bias_sort", run_config(attention("mhsa", H=4, D=4, bias=True, slots={"kv_groups": 1}), task="sort")),
        ("talking_heads_copy", run_config(attention("mhsa", H=4, D=4, slots={"pre_mix": True, "post_mix": True}))),
        ("gated_headwise_bias", run_config(attention("mhsa", bias=True, slots={"gate": "headwise"}))),
        # Drawn head mixings with frozen entries (slots.pre_mixing / post_mixing): the frozen entries
        # keep their values through training (weight decay included) and the export applies them.
        ("talking_heads_drawn_partly_frozen", run_config(attention("mhsa", H=4, D=4, slots={
            "pre_mix": True, "post_mix": True,
            "pre_mixing": {"values": [[0.25 if i != j else 1.0 for j in range(4)] for i in range(4)], "trainable": True},
            "post_mixing": {"values": [[(0.5 if j == (i + 1) % 4 else 0.0) + (1.0 if i == j else 0.0) for j in range(4)]
                                       for i in range(4)],
                            "trainable": [[1 if i == j else 0 for j in range(4)] for i in range(4)]}}))),
        # Differential attention: λ_init differs between the two blocks (0.2, then 0.8 − 0.6·e^−0.3).
        ("diff_two_blocks_sort", run_config(attention("mhsa", H=2, D=4, slots={"differential": True}), task="sort")),
        ("diff_shared_kv_bias", run_config(attention("mhsa", H=4, D=2, bias=True,
                                                     slots={"differential": True, "kv_groups": 2}))),
        # Multi-head latent attention (section 8.6): both orders, a query latent, the rotary key.
        ("mla_naive_copy", run_config(attention("mhsa", H=2, D=4, slots={"latent": {"kv_rank": 6, "rope_dim": 4}}))),
        ("mla_absorbed_query_latent_sort",
         run_config(attention("fixed_head", H=2, D=3, slots={"latent": {"kv_rank": 5, "q_rank": 4, "rope_dim": 2,
                                                                         "order": "absorbed"}}), task="sort")),
        # Tensor product attention (section 8.7): contextual factors with the rotary; T6_kvonly with
        # constant head factors and another rotary base.
        ("tpa_copy", run_config(attention("mhsa", H=2, D=4, slots={"tpa": {"q_rank": 3, "k_rank": 2, "v_rank": 2}}))),
        ("tpa_kv_only_constant_sort",
         run_config(attention("fixed_head", H=2, D=4, slots={"tpa": {"k_rank": 1, "v_rank": 2, "contextual_a": False,
                                                                      "rope_base": 100.0}}), task="sort")),
        # Constant feature factors (paper Table 1, non-contextual B) turned by position, with T6's
        # head norm (using_groupnorm).
        ("tpa_constant_b_norm_copy",
         run_config(attention("mhsa", H=2, D=4, slots={"tpa": {"q_rank": 2, "k_rank": 2, "v_rank": 3,
                                                                 "contextual_b": False, "group_norm": True}}))),
        # Multi-token attention (section 8.8): the preset's structure (its λ-free norm and 1-d gate),
        # and head groups with shared K/V, pad left, the rescaled norm (λ_init of each block) and an
        # elementwise gate under the interleaved rotary.
        ("mta_copy", run_config(attention("mhsa", H=2, D=8, slots={
            "pre_mix": True, "post_mix": True,
            "mta": {"q_kernel": 6, "k_kernel": 11, "post_q_kernel": 6, "post_k_kernel": 11, "pad": "both",
                    "group_norm": True, "out_gate": "headwise"}}))),
        ("mta_drawn_kernels_frozen_mix", run_config(attention("mhsa", H=2, D=4, slots={
            "post_mix": True, "post_mixing": {"values": [[0.5, 0.5], [0.5, 0.5]], "trainable": [[0, 1], [1, 0]]},
            "mta": {"q_kernel": 2, "k_kernel": 3, "post_q_kernel": 2, "post_k_kernel": 2, "pad": "left",
                    "kernel": [[[0.0, 0.1, 0.0], [0.2, 1.0, 0.2]], [[0.0, 0.0, 0.0], [0.3, 0.4, 0.3]]],
                    "post_kernel": [[[0.0, 0.5], [0.0, 0.5]], [[0.1, 0.0], [0.9, 0.0]]]}}))),
        ("mta_groups_rotary_sort",
         run_config(attention("mhsa", H=4, D=4, slots={"kv_groups": 2, "pre_mix": True,
                                                       "mta": {"q_kernel": 2, "k_kernel": 4, "post_q_kernel": 3,
                                                               "post_k_kernel": 2, "pad": "left", "head_group": 2,
                                                               "group_norm": True, "norm_rescale": True,
                                                               "out_gate": "elementwise"}}),
                    task="sort", positions="rotary_interleaved")),
        # Collaborative attention (section 8.9): a shared key space narrower than H·D with the content
        # bias and biases on W^V and W^O, and a wider one (D~ = 11, not a multiple of H) with a gate.
        ("collaborative_copy", run_config(attention("mhsa", H=2, D=8, bias=True, slots={
            "collaborative": {"key_dim": 8, "content_bias": True, "mixing_init": "normal"}}))),
        ("collaborative_gated_sort", run_config(attention("fixed_head", H=2, D=6, slots={
            "gate": "headwise", "collaborative": {"key_dim": 11, "content_bias": False, "mixing_init": "concatenate"}}),
            task="sort")),
        ("fixed_head_gated_talking_gqa",
         run_config(attention("fixed_head", H=4, D=6, slots={"kv_groups": 2, "pre_mix": True, "gate": "elementwise"}))),
        # Rotary positions (section 9): no position table; every layer turns its queries and keys.
        ("mhsa_rotary_reverse", run_config(attention("mhsa", bias=True), task="reverse", positions="rotary")),
        ("gqa_gated_rotary_interleaved", run_config(attention("mhsa", H=4, D=4, slots={"kv_groups": 2, "gate": "headwise"}),
                                                    positions="rotary_interleaved")),
        ("talking_heads_rotary", run_config(attention("mhsa", H=4, D=4, slots={"pre_mix": True, "post_mix": True}),
                                            positions="rotary")),
        ("diff_rotary_sort", run_config(attention("mhsa", H=2, D=4, slots={"differential": True}), task="sort",
                                        positions="rotary")),
        ("tp_fixed_head_rotary", run_config([attention("tp"), attention("fixed_head", H=2, D=6)],
                                            positions="rotary_interleaved")),
        ("thsa_presets_rotary", run_config([preset("skip_left"), preset("thsa")], positions="rotary")),
        ("arithmetic_thsa_dense", run_config(preset("thsa"), task="arithmetic", seq_len=48,
                                             extra_task={"arithmetic_module": "add_or_sub"})),
        ("char_lm_corpus_skip_left", run_config(preset("skip_left"), task="char_lm", seq_len=24,
                                                extra_task={"corpus": corpus})),
        ("char_lm_corpus_mhsa_sinusoidal", run_config(attention("mhsa"), task="char_lm", seq_len=24,
                                                      positions="sinusoidal", extra_task={"corpus": corpus})),
        # Custom Kronecker and dense cores: every factor kind and the contraction paths they take.
        ("core_A_fixed_B_trainable", run_config(attention("thsa", core={
            "structure": "kronecker", "scale": 0.7,
            "A": {"kind": "fixed", "values": [[1.0, 0.3], [-0.2, 0.9]]},
            "B": {"kind": "trainable", "values": [[1.0 if i == j else 0.1 for j in range(8)] for i in range(8)]}}))),
        ("core_A_trainable_B_identity", run_config(attention("thsa", core={
            "structure": "kronecker", "scale": 1.5,
            "A": {"kind": "trainable", "values": [[1.0, 0.2], [0.1, 1.0]]}, "B": {"kind": "identity"}}))),
        ("core_A_ones_B_fixed", run_config(attention("thsa", core={
            "structure": "kronecker", "scale": 1.0, "A": {"kind": "ones"},
            "B": {"kind": "fixed", "values": [[0.5 * ((i + j) % 3) for j in range(8)] for i in range(8)]}}))),
        ("core_rank1_frozen", run_config(attention("thsa", core={
            "structure": "kronecker", "scale": 1.0, "A": {"kind": "identity"},
            "B": {"kind": "rank1", "c2": [H4] * 8, "c3": [0.5 + 0.1 * i for i in range(8)], "trainable": False}}))),
        ("core_dense_partly_frozen", run_config(attention("thsa", H=2, D=4, core={
            "structure": "dense",
            "values": [[(1.0 if i // 4 == j // 4 else 0.0) * 2 ** 0.5 for j in range(8)] for i in range(8)],
            "trainable": [[1 if (i + j) % 2 == 0 else 0 for j in range(8)] for i in range(8)]}))),
        ("core_low_rank_3", run_config(attention("thsa", core={
            "structure": "low_rank", "rank": 3,
            "U": [[0.3 * ((i + 2 * j) % 5 - 2) for j in range(3)] for i in range(16)],
            "V": [[0.25 * ((3 * i + j) % 4 - 1.5) for j in range(3)] for i in range(16)]}))),
        ("thsa_linear_low_rank_frozen", run_config(attention("thsa_linear", core={
            "structure": "low_rank", "rank": 2, "trainable": False,
            "U": [[0.5 if i % 2 == j else 0.1 for j in range(2)] for i in range(16)],
            "V": [[0.4 if i < 8 else -0.2 for j in range(2)] for i in range(16)]}))),
    ]
    for name in ("mhsa", "thsa", "skip_left", "skip_right", "trainable_heads_only", "heads_only", "single_head",
                 "low_rank"):
        out.append(("preset_" + name, run_config(preset(name))))
    out.append(("preset_skip_left_H4", run_config(preset("skip_left", H=4, D=4), task="reverse")))
    if os.path.isdir(FASHION_MNIST):
        enc = dict(causal=False)
        out.append(("fashion_mnist_classifier", run_config(
            [preset("skip_right", **enc), attention("dimwise", R=8, c=2, **enc)], task="fashion_mnist",
            kind="encoder_classifier", extra_task={"patch": 7})))
        out.append(("fashion_mnist_classifier_sinusoidal", run_config(
            [attention("tp", **enc), attention("thsa_linear", core={"preset": "thsa"}, **enc)],
            task="fashion_mnist", kind="encoder_classifier", positions="sinusoidal", extra_task={"patch": 7})))
        # multilinear fixes N: the classifier's 16 patch tokens must equal task.seq_len.
        out.append(("fashion_mnist_classifier_multilinear", run_config(
            attention("multilinear", R=8, P=2, seq_len=16, **enc), task="fashion_mnist", seq_len=16,
            kind="encoder_classifier", extra_task={"patch": 7})))
    return out


# ---------------------------------------------------------------------------------------------


def run(cmd, expect_ok=True):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if expect_ok and p.returncode != 0:
        raise RuntimeError("%s failed (%d):\n%s%s" % (" ".join(cmd), p.returncode, p.stdout[-2000:], p.stderr[-2000:]))
    return p


def import_model(directory, tag):
    spec = importlib.util.spec_from_file_location("tensorscope_export_" + tag, os.path.join(directory, "model.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


SKIPPED = 77  # CTest's SKIP_RETURN_CODE for this test


def check_case(binary, work, name, config, device="cpu"):
    base = os.path.join(work, name)
    shutil.rmtree(base, ignore_errors=True)
    os.makedirs(base)
    cfg_path, run_dir, export_dir = (os.path.join(base, x) for x in ("run.json", "run", "export"))
    config = copy.deepcopy(config)
    config["train"]["device"] = device
    with open(cfg_path, "w") as f:
        json.dump(config, f, indent=1)
    run([binary, "train", "--config", cfg_path, "--out", run_dir, "--steps", "3", "--json"])
    run([binary, "export", "--run", run_dir, "--format", "pytorch", "--out", export_dir])
    for f in ("model.py", "model.safetensors", "config.json"):
        if not os.path.isfile(os.path.join(export_dir, f)):
            raise AssertionError("export lacks " + f)
    module = import_model(export_dir, name)
    if not (module.__doc__ or "").strip().startswith("A Tensorscope run exported for PyTorch"):
        raise AssertionError("model.py lacks its usage docstring")
    net = module.load(export_dir)
    if net.training:
        raise AssertionError("load() must return a module in eval mode")
    if not isinstance(net, torch.nn.Module):
        raise AssertionError("load() must return a torch.nn.Module")
    net = net.to(device)

    gen = torch.Generator().manual_seed(11)
    classifier = config["model"]["kind"] == "encoder_classifier"
    inputs = []
    if classifier:
        T, P = net.seq_len, net.patch_dim
        inputs.append(("patches", torch.randn(3, T, P, generator=gen)))
    else:
        V, N = net.vocab, config["task"]["seq_len"]
        inputs.append(("tokens", torch.randint(0, V, (3, N), generator=gen)))
        if not any(a["variant"] == "multilinear" for a in config["model"]["attention"]):
            inputs.append(("tokens", torch.randint(0, V, (2, N - 5), generator=gen)))  # shorter than seq_len
    worst = 0.0
    for i, (key, x) in enumerate(inputs):
        in_path, out_path = os.path.join(base, "in%d.safetensors" % i), os.path.join(base, "out%d.safetensors" % i)
        st_save(in_path, {key: x})
        run([binary, "infer", "--run", run_dir, "--input", in_path, "--output", out_path])
        want = st_load(out_path)["logits"]
        with torch.no_grad():
            got = net(x.to(device))
        if got.device.type != device:
            raise AssertionError("the module's logits are on %s, not %s" % (got.device, device))
        got = got.cpu()
        if tuple(got.shape) != tuple(want.shape):
            raise AssertionError("%s: Python logits %s, C++ logits %s" % (key, list(got.shape), list(want.shape)))
        if not torch.isfinite(got).all():
            raise AssertionError("Python logits are not finite")
        diff = float((got - want).abs().max())
        worst = max(worst, diff)
        if diff >= TOLERANCE:
            raise AssertionError("%s %s: max |python - c++| = %.3g >= %g" % (key, list(x.shape), diff, TOLERANCE))
    if classifier:
        if os.path.exists(os.path.join(export_dir, "vocab.json")):
            raise AssertionError("an image classifier's export holds vocab.json")
    else:
        vocab = check_vocabulary(module, export_dir, config)
        if name in DECODING_CASES:
            check_decoding(binary, base, run_dir, module, net, vocab, config)
    # The weights the Python model would write are exactly the file's.
    tensors = st_load(os.path.join(export_dir, "model.safetensors"))
    mine = net.cpu().weight_file_tensors()
    if set(mine) != set(tensors):
        raise AssertionError("weight names differ: %s" % sorted(set(mine) ^ set(tensors)))
    return worst


def expected_tokens(task):
    """The task's vocabulary as Tensorscope builds it (the specials, then the characters sorted by
    code point), or None for arithmetic (its characters come from the generator)."""
    if task["name"] == "char_lm":
        with open(task["corpus"], encoding="utf-8") as f:
            return SPECIALS + sorted(set(f.read()))
    if task["name"] in ("copy", "reverse", "sort"):
        return SPECIALS + sorted(ALGORITHMIC_SYMBOLS[:task.get("algorithmic_alphabet", 10)])
    return None


def check_vocabulary(module, export_dir, config):
    """vocab.json holds the task's vocabulary; encode and decode round-trip every character; an
    unknown character is named with its code point. Returns the loaded vocabulary."""
    with open(os.path.join(export_dir, "vocab.json"), encoding="utf-8") as f:
        raw = json.load(f)
    want = {"format": "tensorscope.vocabulary", "version": 1, "pad": 0, "bos": 1, "sep": 2, "eos": 3}
    if {k: raw.get(k) for k in want} != want:
        raise AssertionError("vocab.json: %r" % {k: raw.get(k) for k in want})
    tokens = raw["tokens"]
    if tokens[:4] != SPECIALS:
        raise AssertionError("vocab.json specials: %r" % tokens[:4])
    expected = expected_tokens(config["task"])
    if expected is not None and tokens != expected:
        raise AssertionError("vocab.json tokens %r, the task's %r" % (tokens, expected))
    vocab = module.load_vocabulary(export_dir)
    text = "".join(tokens[4:])
    ids = module.encode(vocab, text)
    if ids != list(range(4, len(tokens))) or module.decode(vocab, ids) != text:
        raise AssertionError("encode/decode do not round-trip the vocabulary's characters")
    if module.decode(vocab, [1, 2, 3]) != "<bos><sep><eos>":
        raise AssertionError("decode of the specials: %r" % module.decode(vocab, [1, 2, 3]))
    try:
        module.encode(vocab, text[:2] + "\u20ac")
        raise AssertionError("encode of an unknown character did not fail")
    except ValueError as e:
        if "'\u20ac'" not in str(e) or "U+20AC" not in str(e):
            raise AssertionError("unknown character: unclear message %r" % str(e))
    return vocab


def cxx_greedy(binary, base, run_dir, prefix, stop, count, seq_len, fixed):
    """Tensorscope's greedy decoding (TrainingSession::exactMatch), one `tensorscope infer` per
    token: the argmax at the prefix's last position is appended until `stop`, `count` new tokens
    or seq_len; a fixed-N (multilinear) model gets the prefix padded with PAD to seq_len."""
    seq, new = list(prefix), []
    in_path, out_path = os.path.join(base, "greedy_in.safetensors"), os.path.join(base, "greedy_out.safetensors")
    while len(new) < count:
        x = seq + [0] * (seq_len - len(seq)) if fixed else seq
        st_save(in_path, {"tokens": torch.tensor([x], dtype=torch.int64)})
        run([binary, "infer", "--run", run_dir, "--input", in_path, "--output", out_path])
        token = int(st_load(out_path)["logits"][0, len(seq) - 1].argmax())
        if token == stop:
            break
        new.append(token)
        if len(seq) == seq_len:
            break
        seq.append(token)
    return new


def check_decoding(binary, base, run_dir, module, net, vocab, config):
    """answer() (question-answer tasks) or generate() (char_lm) gives Tensorscope's greedy text."""
    seq_len = config["task"]["seq_len"]
    fixed = any(a["variant"] == "multilinear" for a in config["model"]["attention"])
    chars = "".join(vocab.tokens[4:])
    if config["task"]["name"] == "char_lm":
        prompt = "In the"
        got = module.generate(net, vocab, prompt, NEW_TOKENS)
        want = module.decode(vocab, cxx_greedy(binary, base, run_dir, module.encode(vocab, prompt), None, NEW_TOKENS,
                                               seq_len, fixed))
        if len(got) != NEW_TOKENS:
            raise AssertionError("generate gave %r, not %d characters" % (got, NEW_TOKENS))
    else:
        question = "12+7" if all(c in vocab.ids for c in "12+7") else chars[:4]
        got = module.answer(net, vocab, question, max_new_tokens=NEW_TOKENS)
        prompt = [vocab.bos] + module.encode(vocab, question) + [vocab.sep]
        want = module.decode(vocab, cxx_greedy(binary, base, run_dir, prompt, vocab.eos, NEW_TOKENS, seq_len, fixed))
    if got != want:
        raise AssertionError("greedy decoding: model.py %r, tensorscope %r" % (got, want))


def check_errors(binary, work, good_run):
    """Clear errors: export of a missing run, model.py on an incomplete directory or unknown variant."""
    problems = []
    p = run([binary, "export", "--run", os.path.join(work, "no_such_run"), "--format", "pytorch",
             "--out", os.path.join(work, "x")], expect_ok=False)
    if p.returncode == 0 or "no_such_run" not in p.stderr:
        problems.append("export of a missing run: rc %d, stderr %r" % (p.returncode, p.stderr))
    p = run([binary, "export", "--run", good_run, "--format", "onnx", "--out", os.path.join(work, "x")], expect_ok=False)
    if p.returncode == 0 or "pytorch" not in p.stderr:
        problems.append("export --format onnx: rc %d, stderr %r" % (p.returncode, p.stderr))
    export_dir = os.path.join(work, "errors_export")
    shutil.rmtree(export_dir, ignore_errors=True)
    run([binary, "export", "--run", good_run, "--format", "pytorch", "--out", export_dir])
    module = import_model(export_dir, "errors")
    broken = os.path.join(work, "errors_broken")
    shutil.rmtree(broken, ignore_errors=True)
    os.makedirs(broken)
    shutil.copy(os.path.join(export_dir, "config.json"), broken)
    try:
        module.load(broken)
        problems.append("load() without model.safetensors did not fail")
    except FileNotFoundError as e:
        if "model.safetensors" not in str(e):
            problems.append("missing weights: unclear message %r" % str(e))
    with open(os.path.join(export_dir, "config.json")) as f:
        config = json.load(f)
    bad = copy.deepcopy(config)
    bad["model"]["attention"][0]["variant"] = "warp_attention"
    with open(os.path.join(broken, "config.json"), "w") as f:
        json.dump(bad, f)
    shutil.copy(os.path.join(export_dir, "model.safetensors"), broken)
    try:
        module.load(broken)
        problems.append("load() with an unknown variant did not fail")
    except ValueError as e:
        if "warp_attention" not in str(e):
            problems.append("unknown variant: unclear message %r" % str(e))
    # Weights that do not fit the config: every problem named.
    tensors = st_load(os.path.join(export_dir, "model.safetensors"))
    tensors.pop("ln_f.weight")
    tensors["blocks.0.attn.extra"] = torch.zeros(2)
    st_save(os.path.join(broken, "model.safetensors"), tensors)
    with open(os.path.join(broken, "config.json"), "w") as f:
        json.dump(config, f)
    try:
        module.load(broken)
        problems.append("load() with wrong weights did not fail")
    except ValueError as e:
        if "ln_f.weight" not in str(e) or "blocks.0.attn.extra" not in str(e):
            problems.append("wrong weights: unclear message %r" % str(e))
    # A vocab.json that is not Tensorscope's, or none.
    try:
        module.load_vocabulary(broken)
        problems.append("load_vocabulary() without vocab.json did not fail")
    except FileNotFoundError as e:
        if "vocab.json" not in str(e):
            problems.append("missing vocab.json: unclear message %r" % str(e))
    with open(os.path.join(export_dir, "vocab.json"), encoding="utf-8") as f:
        vocab = json.load(f)
    vocab["sep"] = 5
    with open(os.path.join(broken, "vocab.json"), "w", encoding="utf-8") as f:
        json.dump(vocab, f)
    try:
        module.load_vocabulary(broken)
        problems.append("load_vocabulary() with a wrong sep id did not fail")
    except ValueError as e:
        if "sep" not in str(e):
            problems.append("wrong sep id: unclear message %r" % str(e))
    p = run([binary, "export", "--run", broken, "--format", "pytorch", "--out", os.path.join(work, "x2")],
            expect_ok=False)
    if p.returncode == 0 or "ln_f.weight" not in p.stderr:
        problems.append("export of mismatched weights: rc %d, stderr %r" % (p.returncode, p.stderr))
    return problems


def cuda_unavailable(binary):
    """Why the CUDA checks cannot run here, or None."""
    if not torch.cuda.is_available():
        return "PyTorch %s sees no CUDA device" % torch.__version__
    version = run([binary, "--version"]).stdout
    if "device: cuda" not in version:
        return "the tensorscope binary's LibTorch has no usable CUDA device: " + \
            next((l for l in version.splitlines() if l.startswith("device:")), "?")
    return None


def main():
    args = sys.argv[1:]
    device = "cpu"
    if args[:1] == ["--device"] and len(args) >= 2:
        device, args = args[1], args[2:]
    if len(args) < 2 or device not in ("cpu", "cuda"):
        print(__doc__)
        return 2
    binary, work = os.path.abspath(args[0]), os.path.abspath(args[1])
    filters = args[2:]
    if device == "cuda":
        why = cuda_unavailable(binary)
        if why:
            print("skipped: " + why)
            return SKIPPED
    os.makedirs(work, exist_ok=True)
    torch.set_num_threads(1)
    corpus = os.path.join(work, "corpus.txt")
    with open(corpus, "w", encoding="utf-8") as f:
        f.write("In the beginning was the word, and the word was with the tensor.\n" * 40 +
                "Attention is all you need; heads are a design choice (Tuformer).\n" * 40)
    passed, failed = 0, 0
    good_run = None
    for name, config in cases(corpus):
        if filters and not any(s in name for s in filters):
            continue
        try:
            worst = check_case(binary, work, name, config, device)
            print("ok    %-40s max |diff| %.2e" % (name, worst), flush=True)
            passed += 1
            good_run = good_run or os.path.join(work, name, "run")
        except Exception as e:  # noqa: BLE001 - every failure is reported and counted
            print("FAIL  %-40s %s" % (name, e), flush=True)
            if not isinstance(e, (AssertionError, RuntimeError)):
                traceback.print_exc()
            failed += 1
    if good_run and not filters and device == "cpu":  # the messages do not depend on the device
        try:
            problems = check_errors(binary, work, good_run)
        except Exception as e:  # noqa: BLE001
            problems = ["error checks raised %r" % e]
            traceback.print_exc()
        for p in problems:
            print("FAIL  errors: " + p)
        if problems:
            failed += 1
        else:
            print("ok    error messages")
            passed += 1
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed or not passed else 0


if __name__ == "__main__":
    sys.exit(main())
