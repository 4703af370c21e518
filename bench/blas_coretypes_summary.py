#!/usr/bin/env python3
"""Summary of bench/blas_coretypes.sh's per-run documents: per setting, medians and spread over the
rounds found (a cut-short run summarises the rounds it finished).

usage: blas_coretypes_summary.py LOG_DIR ROUNDS SETTING...   -> JSON on stdout
"""
import json, os, statistics, sys
log, rounds, settings = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
def load(kind, s, r):
    path = os.path.join(log, "%s_%s_%d.json" % (kind, s, r))
    return json.load(open(path)) if os.path.exists(path) and os.path.getsize(path) else None
def summary(values):
    return {"median": round(statistics.median(values), 1), "min": round(min(values), 1), "max": round(max(values), 1),
            "rounds": [round(v, 1) for v in values]}
out = {"benchmark": "openblas_coretypes",
       "machine": {"cpu": next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), ""),
                   "cpus": os.cpu_count()},
       "rounds_planned": rounds, "order": "alternating: each round runs every setting once, in the order given",
       "settings": {}}
for s in settings:
    gemm = [d for d in (load("gemm", s, r) for r in range(1, rounds + 1)) if d]
    thsa = [d for d in (load("thsa", s, r) for r in range(1, rounds + 1)) if d]
    if not gemm or not thsa:
        continue
    run = lambda d: d["runs"][0]  # noqa: E731
    out["settings"][s] = {
        "rounds": len(thsa),
        "kernels": gemm[0]["machine"]["blas_kernels"],
        "blas_coretype": gemm[0]["machine"]["blas_coretype"],
        "pytorch_blas_coretype": thsa[0]["machine"]["pytorch"].get("blas_coretype"),
        "tensorscope_thsa_blas_coretype": thsa[0]["machine"]["tensorscope"].get("blas_coretype"),
        "gemm_2048_gflops": summary([d["gemm_2048"]["gflops"] for d in gemm]),
        "gemm_2048_max_difference_to_float64": max(d["gemm_2048"]["max_difference_to_float64_relative_to_max"] for d in gemm),
        "thsa_tensorscope_ms_per_step": summary([run(d)["tensorscope_ms_per_step"] for d in thsa]),
        "thsa_pytorch_ms_per_step": summary([run(d)["pytorch_ms_per_step"] for d in thsa]),
        "thsa_ratio_tensorscope_over_pytorch": summary([run(d)["ratio_tensorscope_over_pytorch"] for d in thsa]),
        "thsa_same_run_gemm_1024_gflops": summary([run(d)["gemm_gflops"] for d in thsa]),
        "cpu_idle_before": [run(d)["cpu_idle_before"][0] for d in thsa]}
print(json.dumps(out, indent=2))
