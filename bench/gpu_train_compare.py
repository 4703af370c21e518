#!/usr/bin/env python3
"""The training step on a GPU, five ways side by side in one run (issue 39): Tensorscope with CUDA
graphs (its default on CUDA), Tensorscope eager (graphs off), Tensorscope as it was before issue 39
(graphs off and the ATen attention formulation: TENSORSCOPE_CUDA_ATTENTION=aten), and the module of
`tensorscope export --format pytorch` in PyTorch eager and under torch.compile, with the same model,
data, optimizer and sizes (the reference model of bench/train_bench.cpp).

usage: gpu_train_compare.py BUILD_DIR [--python PY] [--only A,B] [--steps S] [--warmup W] [--rounds K]
                            [--quick] [--device cuda|cpu] [--max-seconds T]

Each configuration runs K rounds (default 2), the five ways alternating within a round, each in a
process of its own; reported: the median over rounds of each way's median step (ms), the ratios, the
peak GPU tensor memory, the final losses, and whether the targets of issue 39 are met. Prints one
JSON document; progress on stderr. Exit status 1 when a way failed (its error is in the document).
--max-seconds T: starts no way after T seconds; the ways not run are reported as such (an error each,
so the exit status is 1) and the document is printed with what was measured (on a lent GPU, whose
time is short, a stopped run still reports). A way that runs past the budget is stopped with it.
--device cpu: the same on the CPU (a dry run of this script; the CUDA switches change nothing there,
and torch.compile needs PyTorch 2.x).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

WAYS = [  # name, side, environment / arguments
    ("tensorscope_graphs", "ts", {}),
    ("tensorscope_eager", "ts", {"TENSORSCOPE_CUDA_GRAPHS": "0"}),
    ("tensorscope_eager_aten", "ts", {"TENSORSCOPE_CUDA_GRAPHS": "0", "TENSORSCOPE_CUDA_ATTENTION": "aten"}),
    ("pytorch_eager", "pt", []),
    ("pytorch_compile", "pt", ["--compile"]),
]


def run_json(cmd, env=None, timeout=400):
    merged = dict(os.environ)
    merged.update(env or {})
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=merged, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": "no result within %.1f s" % timeout}
    sys.stderr.write(p.stderr[-2000:])
    if p.returncode != 0:
        last = p.stderr.strip().splitlines()
        return {"error": "exit %d: %s" % (p.returncode, last[-1] if last else "")}
    return json.loads(p.stdout)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("build")
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--only", default="mhsa,thsa")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    ap.add_argument("--max-seconds", type=float, default=0, help="start no way after this many seconds (0: no limit)")
    a = ap.parse_args()
    start = time.monotonic()

    def seconds_left():
        return a.max_seconds - (time.monotonic() - start) if a.max_seconds > 0 else 400.0
    bench = os.path.join(a.build, "bench", "train_bench")
    here = os.path.dirname(os.path.abspath(__file__))
    quick = ["--quick"] if a.quick else []
    names = [n for n in a.only.split(",") if n]
    with tempfile.TemporaryDirectory() as work:
        emit = os.path.join(work, "emit")
        subprocess.run([bench, "--emit", emit, "--device", a.device, "--only", a.only] + quick, check=True)
        results = {n: {w[0]: [] for w in WAYS} for n in names}
        for r in range(a.rounds):
            for n in names:
                for way, side, extra in WAYS:
                    left = min(400.0, seconds_left())
                    if left <= 0:
                        results[n][way].append({"error": "not run: the --max-seconds %g budget was spent" % a.max_seconds})
                        continue
                    sys.stderr.write("round %d/%d %s %s\n" % (r + 1, a.rounds, n, way))
                    if side == "ts":
                        doc = run_json([bench, "--device", a.device, "--only", n, "--steps", str(a.steps),
                                        "--warmup", str(a.warmup)] + quick, env=extra, timeout=left)
                    else:
                        doc = run_json([a.python, os.path.join(here, "train_bench_pytorch.py"), emit, "--device", a.device,
                                        "--only", n, "--steps", str(a.steps), "--warmup", str(a.warmup)] + extra,
                                       timeout=left)
                    results[n][way].append(doc)
    out = {"benchmark": "gpu_training_ways", "rounds": a.rounds, "steps": a.steps, "warmup": a.warmup,
           "max_seconds": a.max_seconds, "seconds": round(time.monotonic() - start, 1), "runs": []}
    for n in names:
        row = {"name": n}
        for way, side, _ in WAYS:
            docs = [d for d in results[n][way] if "runs" in d and d["runs"]]
            errors = [d["error"] for d in results[n][way] if "error" in d]
            if not docs:
                row[way] = {"error": errors[0] if errors else "no result"}
                continue
            runs = [d["runs"][0] for d in docs]
            row[way] = {"ms_per_step": statistics.median(x["ms_per_step"] for x in runs),
                        "ms_per_round": [round(x["ms_per_step"], 3) for x in runs],
                        "peak_tensor_mb": runs[0].get("peak_tensor_mb"),
                        "final_loss": runs[0].get("final_loss"),
                        "step_mode": runs[0].get("step_mode")}
            out.setdefault("tensorscope_machine" if side == "ts" else "pytorch_machine", docs[0]["machine"])
        ms = {w: row[w]["ms_per_step"] for w, _, _ in WAYS if "ms_per_step" in row[w]}
        best = ms.get("tensorscope_graphs")
        if best:
            row["speedup_over"] = {w: round(v / best, 3) for w, v in ms.items() if w != "tensorscope_graphs"}
        out["runs"].append(row)
    targets = {}
    for row in out["runs"]:
        s = row.get("speedup_over", {})
        if row["name"] in ("mhsa", "thsa"):
            if "pytorch_eager" in s:
                targets[row["name"] + "_3x_pytorch_eager"] = s["pytorch_eager"] >= 3.0
            if "pytorch_compile" in s:
                targets[row["name"] + "_faster_than_torch_compile"] = s["pytorch_compile"] > 1.0
        if row["name"] == "mhsa" and "tensorscope_eager_aten" in s:
            targets["mhsa_3x_eager_libtorch_before"] = s["tensorscope_eager_aten"] >= 3.0
    out["targets"] = targets
    print(json.dumps(out, indent=2))
    return 1 if any("error" in row.get(w, {}) for row in out["runs"] for w, _, _ in WAYS) else 0


if __name__ == "__main__":
    sys.exit(main())
