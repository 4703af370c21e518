#!/usr/bin/env python3
"""Several projections of one input as separate GEMMs against one GEMM of the stacked weights, forward
and backward, on the BLAS LibTorch uses (Debian's python3-torch is the same LibTorch 1.13 and OpenBLAS
as Tensorscope's build). The question behind `projectStacked` (model_core/src/attention/kernels.h,
issue 41): which of a layer's projections of x pay for being one GEMM, once split's backward has
copied the parts' gradients into one tensor.

    /usr/bin/python3 bench/projection_stacking.py [--rounds 5] [--threads 2] > bench/results/projection_stacking-DATE.json

Shapes of the reference training step (B·N = 32·128 tokens, F = 128): `gated` q, k, v and the gate
(384 + 128 outputs), `mqa` (128, 32, 32), `gqa` G = 2 (128, 64, 64), `mla` (the query 4·(32 + 8) = 160
and the latent with its rotary key 32 + 8 = 40). The two forms alternate within each round; per case
the median milliseconds of each over the rounds, their ratio and its range.
"""
import argparse, json, statistics, time

import torch

CASES = {"gated": [384, 128], "mqa": [128, 32, 32], "gqa": [128, 64, 64], "mla": [160, 40]}


def timed(f, n=30):
    for _ in range(3):
        f()
    ts = []
    for _ in range(n):
        s = time.perf_counter()
        f()
        ts.append(time.perf_counter() - s)
    return statistics.median(ts) * 1e3


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    out = {"benchmark": "projection_stacking", "torch": torch.__version__, "threads": a.threads,
           "tokens": 32 * 128, "F": 128, "cases": {}}
    for name, sizes in CASES.items():
        x = torch.randn(32, 128, 128, requires_grad=True)
        ws = [torch.randn(s, 128, requires_grad=True) for s in sizes]
        gs = [torch.randn(32, 128, s) for s in sizes]

        def separate():
            torch.autograd.backward([torch.nn.functional.linear(x, w) for w in ws], gs)

        def stacked():
            parts = torch.nn.functional.linear(x, torch.cat(ws)).split_with_sizes(sizes, -1)
            torch.autograd.backward(list(parts), gs)

        sep, stk = [], []
        for _ in range(a.rounds):
            sep.append(timed(separate))
            stk.append(timed(stacked))
        ratios = [b / s for s, b in zip(sep, stk)]
        out["cases"][name] = {"outputs": sizes, "separate_ms": round(statistics.median(sep), 3),
                              "stacked_ms": round(statistics.median(stk), 3),
                              "stacked_over_separate": round(statistics.median(ratios), 3),
                              "range": [round(min(ratios), 3), round(max(ratios), 3)]}
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
