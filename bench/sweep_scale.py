#!/usr/bin/env python3
"""How long the sweep commands take on a sweep of maximum size (issue 33, item 13).

Plans a sweep of 2 designs (MHSA, and dense THSA matched to MHSA's attention parameters by solving
d_model, 512 candidates a trial) x LR_VALUES learning rates x 3 seeds (681 values: 4,086 trials,
within the 4,096 limit), writes a
finished result.json into every trial (no training: the commands' own cost is measured), then times
`sweep plan`, `sweep status` (twice), `sweep report --format json` and `sweep run` (nothing left to
run; --quick: plan and one status only). Each command's wall seconds and peak memory (ru_maxrss) go
to OUT (JSON).

usage: bench/sweep_scale.py TENSORSCOPE OUT.json [--lr-values 681] [--label after] [--timeout 900] [--quick]
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time


def timed(cmd, timeout):
    """Runs cmd; returns (exit status, wall seconds, peak RSS in MB, stderr tail)."""
    t0 = time.time()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = t0 + timeout
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        if time.time() > deadline:
            proc.kill()
            pid, status, usage = os.wait4(proc.pid, 0)
            return {"exit": "timeout", "seconds": round(time.time() - t0, 2), "peak_mb": round(usage.ru_maxrss / 1024)}
        time.sleep(0.05)
    err = proc.stderr.read().decode(errors="replace")[-300:]
    code = os.waitstatus_to_exitcode(status)
    out = {"exit": code, "seconds": round(time.time() - t0, 2), "peak_mb": round(usage.ru_maxrss / 1024)}
    if code != 0:
        out["stderr"] = err
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("tensorscope")
    ap.add_argument("out")
    ap.add_argument("--lr-values", type=int, default=681)
    ap.add_argument("--label", default="")
    ap.add_argument("--timeout", type=float, default=900)
    ap.add_argument("--quick", action="store_true", help="plan and one status only")
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix="sweep_scale_")
    try:
        spec = json.loads(subprocess.run([a.tensorscope, "spec", "preset", "mhsa"], capture_output=True, text=True,
                                         check=True).stdout)
        spec["sizes"].update({"F": 128, "H": 2, "D": 8, "R": 16, "seq_len": 24})
        spec["causal"] = True
        base = {"format": "tensorscope.run_config", "version": 1,
                "model": {"kind": "decoder", "layers": 2, "d_model": 128, "ffn_multiplier": 2, "attention": spec},
                "task": {"name": "copy", "seq_len": 24, "algorithmic_length": 5, "seed": 1},
                "train": {"steps": 40, "batch": 4, "warmup": 2, "eval_interval": 10, "eval_examples": 8,
                          "checkpoint_interval": 10, "inspect_interval": 40, "seed": 1}}
        sweep = {"format": "tensorscope.sweep", "version": 1, "name": "scale", "base": base,
                 "axes": [{"name": "design", "values": [
                     {"label": "mhsa", "set": {"model.attention.variant": "mhsa"}},
                     {"label": "thsa", "set": {"model.attention.variant": "thsa",
                                               "model.attention.core": {"preset": "thsa"}}}]},
                          {"path": "train.lr", "values": [round(1e-4 * (i + 1), 6) for i in range(a.lr_values)]}],
                 "seeds": [1, 2, 3],
                 "match_parameters": {"axis": "design", "reference": "mhsa", "solve": "d_model", "tolerance": 0.25},
                 "metric": "accuracy"}
        sweep_file = os.path.join(work, "sweep.json")
        with open(sweep_file, "w") as f:
            json.dump(sweep, f)
        d = os.path.join(work, "sw")
        results = {"trials": 2 * a.lr_values * 3, "label": a.label, "binary": a.tensorscope,
                   "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "cpus": os.cpu_count()}
        results["plan"] = timed([a.tensorscope, "sweep", "plan", sweep_file, "--out", d], a.timeout)
        if results["plan"]["exit"] == 0:
            result = {"format": "tensorscope.trial_result", "version": 1, "status": "finished", "message": "",
                      "steps": 40, "wall_seconds": 2.5, "tokens_per_second": 1000.0, "best_step": 40,
                      "final_eval": {"validation": {"loss": 1.5, "accuracy": 0.5}}, "where": "bench",
                      "final_metric": 0.5, "best_metric": 0.5}
            for name in os.listdir(os.path.join(d, "trials")):
                with open(os.path.join(d, "trials", name, "result.json"), "w") as f:
                    json.dump(result, f)
            results["status"] = timed([a.tensorscope, "sweep", "status", d], a.timeout)
            if not a.quick:
                results["status_again"] = timed([a.tensorscope, "sweep", "status", d], a.timeout)
                results["report_json"] = timed([a.tensorscope, "sweep", "report", d, "--format", "json"], a.timeout)
                results["run_nothing_left"] = timed([a.tensorscope, "sweep", "run", d], a.timeout)
        print(json.dumps(results, indent=2))
        os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
        with open(a.out, "w") as f:
            json.dump(results, f, indent=2)
            f.write("\n")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
