"""PyTorch counterpart of train_bench: the same training steps in plain PyTorch, for a side-by-side
throughput comparison (bench/run_train_bench.sh runs both and prints the ratios).

usage: /usr/bin/python3 train_bench_pytorch.py EMIT_DIR [--steps S] [--warmup W] [--threads T] [--only A,B]
                                                [--device cpu|cuda] [--compile]

EMIT_DIR is what `train_bench --emit EMIT_DIR` wrote: model.py (the module of Tensorscope's PyTorch
export, i.e. the same architecture operation for operation), corpus.txt (the King James text) and
configs.json (the run configs train_bench uses). Each step does what Session::trainStep does:
  random windows of seq_len+1 characters from the training 95% of the text (batch 32),
  logits = model(x), masked mean cross-entropy, zero_grad, backward, clip_grad_norm_(1.0),
  torch.optim.AdamW(lr 1e-3, betas (0.9, 0.98), eps 1e-8; weight decay 0.01 on parameters with
  dim >= 2 only, 0 on biases, LayerNorm gains and core vectors), loss.item().
Threads: torch.set_num_threads(T) (T = 0: all cores, as train_bench). Prints one JSON document;
tokens/s come from the median step time (and the mean), as in train_bench.
Memory: peak resident set size during the timed steps (VmHWM after resetting it through
/proc/self/clear_refs); PyTorch has no exact CPU tensor counter like Tensorscope's CpuMemoryTracker.
--device cuda: the model and each batch on CUDA device 0 (the windows are drawn on the CPU, as
before, so both devices see the same data), each timed step between two torch.cuda.synchronize()
calls, and also peak_tensor_mb / resident_tensor_mb from the CUDA caching allocator (what
Tensorscope's train_bench reports on CUDA). Runs on PyTorch 1.13 (Debian's, CPU) and 2.x.
--compile: the module under torch.compile (PyTorch 2.x); the warm-up steps include the compilation.
"""
import argparse
import importlib.util
import json
import os
import sys
import time

import torch
import torch.nn.functional as F


def reset_peak_rss():
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def peak_rss_bytes():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return 0


def rss_bytes():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def loaded_blas():
    """The BLAS libraries mapped into this process (Debian's torch links libblas.so.3, an alternative)."""
    libs = set()
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                path = line.split()[-1]
                if "blas" in os.path.basename(path).lower():
                    libs.add(os.path.realpath(path))
    except OSError:
        pass
    return ", ".join(sorted(libs)) or "unknown"


def openblas_coretype():
    """The kernels of the OpenBLAS this torch calls (openblas_get_corename), None for another BLAS."""
    import ctypes
    for path in loaded_blas().split(", "):
        try:  # already mapped (torch loaded it): this only looks the function up
            name = ctypes.CDLL(path).openblas_get_corename
        except (OSError, AttributeError):
            continue
        name.restype = ctypes.c_char_p
        return name().decode()
    return None


def load_module(path):
    spec = importlib.util.spec_from_file_location("tensorscope_bench_model", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def encode_corpus(text):
    """Tensorscope's character vocabulary: 4 specials, then the code points of the text, sorted."""
    chars = sorted(set(text))
    index = {c: i + 4 for i, c in enumerate(chars)}
    return torch.tensor([index[c] for c in text], dtype=torch.int64), 4 + len(chars)


def measure(module, name, config, ids, vocab, args):
    B, N = config["train"]["batch"], config["task"]["seq_len"]
    t = config["train"]
    gpu = args.device == "cuda"
    device = torch.device("cuda", 0) if gpu else torch.device("cpu")  # device 0, as train_bench

    def sync():
        """CUDA launches return at once: wait for the queued work before reading a clock."""
        if gpu:
            torch.cuda.synchronize(device)

    torch.manual_seed(t["seed"])
    net = module.build(config, vocab=vocab).to(device)
    net.train()
    params_net = net
    if args.compile:
        # torch.compile (TorchInductor): the warm-up steps compile; the timed steps run compiled.
        net = torch.compile(net)
    params = [p for p in params_net.parameters() if p.requires_grad]
    decay = [p for p in params if p.dim() >= 2]
    no_decay = [p for p in params if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": t["weight_decay"]},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=t["lr"], betas=(t["beta1"], t["beta2"]), eps=t["eps"])
    train_end = ids.numel() - ids.numel() // 20
    offsets = torch.arange(N + 1)
    gen = torch.Generator().manual_seed(1)

    def step():
        starts = torch.randint(0, train_end - N - 1, (B,), generator=gen)
        window = ids[starts.unsqueeze(1) + offsets]  # [B, N+1]
        x, y = window[:, :-1].to(device), window[:, 1:].to(device)
        mask = torch.ones(B, N, device=device)
        logits = net(x)
        nll = F.cross_entropy(logits.reshape(-1, vocab), y.reshape(-1), reduction="none")
        m = mask.reshape(-1)
        loss = (nll * m).sum() / m.sum().clamp_min(1.0)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, t["grad_clip"])
        opt.step()
        return loss.item()

    for _ in range(args.warmup):
        step()
    sync()
    resident = rss_bytes()
    can_reset = reset_peak_rss()
    if gpu:
        resident_tensor = torch.cuda.memory_allocated(device)
        torch.cuda.reset_peak_memory_stats(device)
    t0 = time.perf_counter()
    loss = 0.0
    step_seconds = []
    for _ in range(args.steps):
        s0 = time.perf_counter()
        loss = step()
        sync()
        step_seconds.append(time.perf_counter() - s0)
    seconds = time.perf_counter() - t0
    step_seconds.sort()
    half = len(step_seconds) // 2
    median = step_seconds[half] if len(step_seconds) % 2 else 0.5 * (step_seconds[half - 1] + step_seconds[half])
    row = {"name": name, "vocab": vocab, "trainable_parameters": sum(p.numel() for p in params),
           "steps_timed": args.steps, "ms_per_step": median * 1e3, "tokens_per_second": B * N / median,
           "mean_ms_per_step": seconds / args.steps * 1e3, "mean_tokens_per_second": args.steps * B * N / seconds,
           "peak_rss_mb": peak_rss_bytes() / 1048576.0 if can_reset else None,
           "resident_rss_mb": resident / 1048576.0, "final_loss": loss}
    if gpu:
        row["peak_tensor_mb"] = torch.cuda.max_memory_allocated(device) / 1048576.0
        row["resident_tensor_mb"] = resident_tensor / 1048576.0
    print("  %s: %.0f tokens/s, %.1f ms/step" % (name, row["tokens_per_second"], row["ms_per_step"]),
          file=sys.stderr, flush=True)
    return row


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("emit_dir")
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--only", default="")
    ap.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    ap.add_argument("--compile", action="store_true", help="run the module under torch.compile")
    args = ap.parse_args()
    if args.device == "cuda" and not torch.cuda.is_available():
        sys.exit("train_bench_pytorch.py: --device cuda, but torch %s sees no usable CUDA device (CUDA build: %s)"
                 % (torch.__version__, torch.version.cuda or "no"))
    threads = args.threads or os.cpu_count() or 1
    torch.set_num_threads(threads)
    module = load_module(os.path.join(args.emit_dir, "model.py"))
    with open(os.path.join(args.emit_dir, "configs.json")) as f:
        runs = json.load(f)["runs"]
    with open(os.path.join(args.emit_dir, "corpus.txt"), encoding="utf-8") as f:
        ids, vocab = encode_corpus(f.read())
    only = [s for s in args.only.split(",") if s]
    cfg0 = runs[0]["config"]
    doc = {"benchmark": "training", "framework": "pytorch",
           "mode": "torch.compile" if args.compile else "eager",
           "machine": {"torch": torch.__version__, "device": args.device, "threads": torch.get_num_threads(),
                       "blas": loaded_blas(), "blas_coretype": openblas_coretype()},
           "config": {"layers": cfg0["model"]["layers"], "d_model": cfg0["model"]["d_model"],
                      "seq_len": cfg0["task"]["seq_len"], "batch": cfg0["train"]["batch"],
                      "warmup_steps": args.warmup, "timed_steps": args.steps},
           "runs": []}
    if args.device == "cuda":
        doc["machine"]["gpu"] = torch.cuda.get_device_name(0)
        doc["machine"]["gpu_total_gb"] = torch.cuda.get_device_properties(0).total_memory / 1073741824.0
    print("PyTorch training steps (%d threads, %s):" % (torch.get_num_threads(), args.device), file=sys.stderr)
    for r in runs:
        if only and r["name"] not in only:
            continue
        doc["runs"].append(measure(module, r["name"], r["config"], ids, vocab, args))
    print(json.dumps(doc, indent=2))


if __name__ == "__main__":
    main()
