#!/usr/bin/env python3
"""Crash consistency of `tensorscope train` (docs/reliability.md), proved by breaking it.

A tiny run is trained once without interruption (the reference). Then the same run is killed
(SIGKILL) again and again: at the k-th file-system operation of the process through
TENSORSCOPE_KILL_AT_FILE_OP (inside checkpoint writes, metric appends, pointer commits), and at
random moments. After each kill the run is resumed (`--resume`), or, when the kill came before its
first checkpoint committed, `--resume` must refuse with the reason and `--config … --out` the same
directory must restart it. Every outcome must then be exact: the final weights and optimizer
byte-identical to the reference, every metric record of the reference present once and equal
(timings aside), metrics.csv in agreement, `latest` and inspection.safetensors at the final
checkpoint, and no litter (temporary files, staging directories,
checkpoints beyond the current and the previous one).

With --sweep-kills N it also kills `tensorscope sweep run` (two trials at a time) N times at random
moments, alternately the parent alone (its trials must stop with it and checkpoint) and the parent
with its trial processes (SIGKILL to the process group), runs `sweep run` again until it exits 0
(status 4 while trials still stop elsewhere), and checks that the sweep's report equals an
uninterrupted sweep's (every metric, step and state; timings aside).

usage: test_crash_consistency.py TENSORSCOPE WORKDIR [--kills N] [--random N] [--sweep-kills N] [--seed S] [--report FILE]
The suite runs a short campaign; scripts/crash_campaign.sh runs the long one (200+ kills).
"""
import argparse
import glob
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time


def run(cmd, env=None, timeout=300):
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)


def make_config(bin_path, work):
    spec = json.loads(run([bin_path, "spec", "preset", "skip_right"]).stdout)
    spec["sizes"]["seq_len"] = 24
    spec["causal"] = True
    cfg = {"format": "tensorscope.run_config", "version": 1,
           "model": {"kind": "decoder", "layers": 2, "d_model": spec["sizes"]["F"], "ffn_multiplier": 2,
                     "attention": spec},
           "task": {"name": "copy", "seq_len": 24, "algorithmic_length": 5, "seed": 1},
           "train": {"steps": 12, "batch": 4, "warmup": 1, "eval_interval": 4, "eval_examples": 8,
                     "checkpoint_interval": 3, "inspect_interval": 100, "seed": 1, "threads": 1}}
    path = os.path.join(work, "run.json")
    with open(path, "w") as f:
        json.dump(cfg, f)
    return path


def records(run_dir):
    out = []
    with open(os.path.join(run_dir, "metrics.jsonl")) as f:
        for line in f:
            j = json.loads(line)
            out.append(tuple((k, j.get(k)) for k in ("kind", "step", "split", "loss", "lr", "grad_norm", "accuracy")))
    return out


def checkpoint_files(run_dir):
    with open(os.path.join(run_dir, "checkpoint.json")) as f:
        current = json.load(f)["current"]
    d = os.path.join(run_dir, current)
    return {name: open(os.path.join(d, name), "rb").read()
            for name in ("model.safetensors", "optimizer.safetensors")}


def litter(run_dir):
    found = [p for p in glob.glob(os.path.join(run_dir, "**", ".*"), recursive=True)]
    ckpts = glob.glob(os.path.join(run_dir, "checkpoints", "*"))
    if len(ckpts) > 2:
        found += ckpts
    return found


def check_outcome(run_dir, ref_files, ref_records, ref_csv_lines):
    problems = []
    files = checkpoint_files(run_dir)
    for name, data in ref_files.items():
        if files[name] != data:
            problems.append(name + " differs from the uninterrupted run (divergent resume)")
    got = records(run_dir)
    if got != ref_records:
        missing = [r for r in ref_records if r not in got]
        extra = len(got) - len(ref_records)
        problems.append("metric records differ: %d missing, %+d records" % (len(missing), extra))
    with open(os.path.join(run_dir, "metrics.csv")) as f:
        if len(f.read().splitlines()) != ref_csv_lines:
            problems.append("metrics.csv does not agree with metrics.jsonl")
    if litter(run_dir):
        problems.append("litter after resume: " + ", ".join(litter(run_dir)[:3]))
    with open(os.path.join(run_dir, "run_status.json")) as f:
        if json.load(f).get("status") != "finished":
            problems.append("run_status.json does not say finished")
    # `latest` and the inspection file follow the final checkpoint (a resume repairs both).
    with open(os.path.join(run_dir, "checkpoint.json")) as f:
        current = json.load(f)["current"]
    if os.readlink(os.path.join(run_dir, "latest")) != current:
        problems.append("stale latest: names %s, the pointer %s" % (os.readlink(os.path.join(run_dir, "latest")), current))
    step = inspection_step(run_dir)
    if step != json.load(open(os.path.join(run_dir, current, "manifest.json")))["step"]:
        problems.append("stale inspection.safetensors: holds step %s" % step)
    return problems


def inspection_step(run_dir):
    """The step in inspection.safetensors' metadata (None without the file)."""
    path = os.path.join(run_dir, "inspection.safetensors")
    if not os.path.exists(path):
        return None
    with open(path, "rb") as f:
        n = int.from_bytes(f.read(8), "little")
        return int(json.loads(f.read(n))["__metadata__"]["step"])


def finish(bin_path, cfg, run_dir, stats):
    """Resume a killed run (or restart one that never committed); returns a problem or None."""
    r = run([bin_path, "train", "--resume", run_dir])
    if r.returncode == 0:
        stats["resumed"] += 1
        return None
    if "holds no complete checkpoint" not in r.stderr:
        return "resume failed without the expected refusal: " + r.stderr.strip()[-300:]
    stats["refused_then_restarted"] += 1
    r = run([bin_path, "train", "--config", cfg, "--out", run_dir])
    if r.returncode != 0:
        return "restart of a run without a complete checkpoint failed (stuck directory): " + r.stderr.strip()[-300:]
    return None


def sweep_report(bin_path, sweep_dir):
    """The report's numbers that must not depend on interruptions (timings and hosts aside)."""
    r = run([bin_path, "sweep", "report", sweep_dir, "--format", "json"])
    if r.returncode != 0:
        return None, "sweep report failed: " + r.stderr.strip()[-300:]
    rep = json.loads(r.stdout)
    designs = [(d["design"], d["trials"], d["finished"], d["mean"], d["std"], d["best_mean"], d["best_step"])
               for d in rep["designs"]]
    trials = []
    for t in rep["trials"]:
        res = t.get("result", {})
        trials.append((t["name"], t["state"], t["step"], res.get("status"), res.get("steps"), res.get("final_metric"),
                       res.get("best_metric"), res.get("best_step"), json.dumps(res.get("final_eval"), sort_keys=True)))
    return (designs, trials), None


def sweep_campaign(bin_path, work, cfg, kills, rng, env, stats, failures):
    """Kills `sweep run` (parent only, or parent and trials) and checks the finished sweep's report."""
    sweep = {"format": "tensorscope.sweep", "version": 1, "name": "crash campaign", "base_file": cfg,
             "axes": [{"path": "train.lr", "values": [0.001, 0.002]}], "seeds": [1], "metric": "loss",
             "set": {"train.checkpoint_interval": 20, "train.eval_interval": 20},
             "budget": {"steps": 200}}  # trials much longer than a restart: orphans would still be training
    sweep_file = os.path.join(work, "sweep.json")
    with open(sweep_file, "w") as f:
        json.dump(sweep, f)

    def plan(d):
        r = run([bin_path, "sweep", "plan", sweep_file, "--out", d], env=env)
        if r.returncode != 0:
            raise RuntimeError("sweep plan failed: " + r.stderr)

    ref = os.path.join(work, "sweep_reference")
    plan(ref)
    t0 = time.time()
    r = run([bin_path, "sweep", "run", ref, "--jobs", "2"], env=env)
    duration = time.time() - t0
    if r.returncode != 0:
        failures.append("uninterrupted sweep run failed: " + r.stderr.strip()[-300:])
        return
    reference, problem = sweep_report(bin_path, ref)
    if problem:
        failures.append("uninterrupted sweep: " + problem)
        return
    for i in range(kills):
        d = os.path.join(work, "sweep%d" % i)
        plan(d)
        group = i % 2 == 1
        proc = subprocess.Popen([bin_path, "sweep", "run", d, "--jobs", "2"], env=env, start_new_session=True,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0.05, duration * 0.9))
        try:
            with open("/proc/%d/task/%d/children" % (proc.pid, proc.pid)) as f:
                children = [int(c) for c in f.read().split()]
        except OSError:
            children = []
        if group:
            os.killpg(proc.pid, signal.SIGKILL)
        else:
            proc.send_signal(signal.SIGKILL)
        proc.wait()
        if proc.returncode != -signal.SIGKILL:
            shutil.rmtree(d, ignore_errors=True)
            continue  # it finished first: nothing to judge
        stats["sweep_kills"] += 1
        stats["sweep_kills_with_trials" if group else "sweep_kills_parent_only"] += 1
        tag = "sweep run killed %s (#%d)" % ("with its trials" if group else "alone", i)
        problem = None
        # Its trial processes must stop with it (they checkpoint on the SIGTERM it leaves them).
        def running(pid):
            try:
                with open("/proc/%d/stat" % pid) as f:
                    return f.read().split(")")[-1].split()[0] != "Z"
            except OSError:
                return False
        deadline = time.time() + 3  # a trial stops within a step of the SIGTERM
        alive = children
        while alive and time.time() < deadline:
            time.sleep(0.1)
            alive = [c for c in alive if running(c)]
        if alive:
            stats["sweep_orphans"] += 1
            problem = "its trial processes %s still train 3 s after sweep run was killed" % alive
            for c in alive:  # the test's own processes: not left behind
                os.kill(c, signal.SIGKILL)
        for _ in range(120 if not problem else 0):
            r = run([bin_path, "sweep", "run", d, "--jobs", "2"], env=env)
            if r.returncode == 0:
                break
            if r.returncode != 4:  # 4: trials of the killed run are still stopping; anything else is a fault
                problem = "sweep run after the kill exited %d: %s" % (r.returncode, r.stderr.strip()[-300:])
                break
            time.sleep(0.25)
        else:
            problem = problem or "trials still run elsewhere 30 s after the kill (orphans?)"
        if not problem:
            got, problem = sweep_report(bin_path, d)
            if not problem and got != reference:
                problem = "the report differs from the uninterrupted sweep's: %s" % (
                    [g for g, w in zip(got[1], reference[1]) if g != w][:2] or got[0])
        if problem:
            stats["sweep_failures"] += 1
            failures.append("%s: %s" % (tag, problem))
        else:
            stats["sweep_reports_equal"] += 1
        shutil.rmtree(d, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("tensorscope")
    ap.add_argument("workdir")
    ap.add_argument("--kills", type=int, default=24, help="kills at file operations (spread over the run)")
    ap.add_argument("--random", type=int, default=6, help="kills at random moments")
    ap.add_argument("--sweep-kills", type=int, default=0, help="kills of `sweep run` (alternately alone and with its trials)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--report", default="")
    a = ap.parse_args()
    bin_path = a.tensorscope
    shutil.rmtree(a.workdir, ignore_errors=True)
    os.makedirs(a.workdir)
    cfg = make_config(bin_path, a.workdir)
    env = dict(os.environ, TENSORSCOPE_THREADS="1")

    ref = os.path.join(a.workdir, "reference")
    t0 = time.time()
    r = run([bin_path, "train", "--config", cfg, "--out", ref], env=env)
    if r.returncode != 0:
        print("FAIL reference run:", r.stderr)
        return 1
    duration = time.time() - t0
    ref_files, ref_records = checkpoint_files(ref), records(ref)
    with open(os.path.join(ref, "metrics.csv")) as f:
        ref_csv_lines = len(f.read().splitlines())

    # How many file operations one run takes: the last k that still kills.
    lo, hi = 1, 1
    while True:
        d = os.path.join(a.workdir, "probe")
        shutil.rmtree(d, ignore_errors=True)
        p = run([bin_path, "train", "--config", cfg, "--out", d], env=dict(env, TENSORSCOPE_KILL_AT_FILE_OP=str(hi)))
        if p.returncode != -signal.SIGKILL:
            break
        lo, hi = hi, hi * 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        d = os.path.join(a.workdir, "probe")
        shutil.rmtree(d, ignore_errors=True)
        p = run([bin_path, "train", "--config", cfg, "--out", d], env=dict(env, TENSORSCOPE_KILL_AT_FILE_OP=str(mid)))
        lo, hi = (mid, hi) if p.returncode == -signal.SIGKILL else (lo, mid)
    total_ops = lo

    rng = random.Random(a.seed)
    points = sorted(set(1 + (i * total_ops) // max(1, a.kills) + rng.randrange(max(1, total_ops // max(1, a.kills)))
                        for i in range(a.kills)))
    points = [min(p, total_ops) for p in points]
    stats = {"kills": 0, "kills_at_file_operations": 0, "kills_at_random_moments": 0, "resumed": 0,
             "refused_then_restarted": 0, "divergent": 0, "lost_records": 0, "stuck": 0, "litter": 0, "stale": 0,
             "file_operations_per_run": total_ops, "sweep_kills": 0, "sweep_kills_parent_only": 0,
             "sweep_kills_with_trials": 0, "sweep_reports_equal": 0, "sweep_orphans": 0, "sweep_failures": 0}
    failures = []

    def judge(tag, run_dir):
        problem = finish(bin_path, cfg, run_dir, stats)
        if problem:
            stats["stuck"] += 1
            failures.append("%s: %s" % (tag, problem))
            return
        for p in check_outcome(run_dir, ref_files, ref_records, ref_csv_lines):
            key = "divergent" if "differs" in p else "lost_records" if "records" in p or "csv" in p else \
                  "litter" if "litter" in p else "stale" if "stale" in p else "stuck"
            stats[key] += 1
            failures.append("%s: %s" % (tag, p))

    for k in points:
        d = os.path.join(a.workdir, "op%d" % k)
        p = run([bin_path, "train", "--config", cfg, "--out", d], env=dict(env, TENSORSCOPE_KILL_AT_FILE_OP=str(k)))
        if p.returncode != -signal.SIGKILL:
            failures.append("op %d: the hook did not kill (exit %d)" % (k, p.returncode))
            continue
        stats["kills"] += 1
        stats["kills_at_file_operations"] += 1
        judge("killed at file operation %d (%s)" % (k, p.stderr.strip().split("killed before ")[-1]), d)
        shutil.rmtree(d, ignore_errors=True)

    for i in range(a.random):
        d = os.path.join(a.workdir, "random%d" % i)
        proc = subprocess.Popen([bin_path, "train", "--config", cfg, "--out", d], env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0.05, duration * 0.9))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        if proc.returncode != -signal.SIGKILL:
            continue  # it finished first: nothing to judge
        stats["kills"] += 1
        stats["kills_at_random_moments"] += 1
        judge("killed at a random moment (#%d)" % i, d)
        shutil.rmtree(d, ignore_errors=True)

    if a.sweep_kills:
        sweep_campaign(bin_path, a.workdir, cfg, a.sweep_kills, rng, env, stats, failures)

    print(json.dumps(stats, indent=2))
    if a.report:
        with open(a.report, "w") as f:
            json.dump(dict(stats, failures=failures), f, indent=2)
    for f in failures:
        print("FAIL", f)
    if stats["kills"] < (a.kills + a.random) // 2:
        print("FAIL too few kills landed")
        return 1
    if stats["sweep_kills"] < a.sweep_kills // 2:
        print("FAIL too few kills of sweep run landed")
        return 1
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
