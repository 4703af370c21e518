#!/usr/bin/env python3
"""Ctrl-C and kill on a training run (app/src/cli/stop_signals.h): no signal handler runs on a thread that
computes, and every interrupted run stops cleanly at a checkpoint.

Why: oneDNN's JIT GEMM, which the projections run on, points the stack pointer at a heap buffer while it
runs, so a handler run on a thread inside it writes its frame onto the heap (oneDNN issue #4845). With
the plain handler `train` had, an interrupted run crashed at its stop with glibc heap corruption in 8 of
60 tries (docs/decisions.md). Checked here:
  - while `train` runs on two threads, every thread of the process blocks SIGINT and SIGTERM and the
    process catches neither (they are taken with sigwait on one thread);
  - a series of runs interrupted at random moments, half by SIGINT and half by SIGTERM, each ending with
    status 0, "stopped" in run_status.json, and the last one resuming;
  - the explorer, training in its window (offscreen), catches no signal but glibc's own SIGSETXID (which
    glibc sends only while a process changes its user or group id): its training threads cannot meet
    the bug. Not with --no-gui (a headless build).

usage: /usr/bin/python3 test_interrupts.py TENSORSCOPE_BINARY WORK_DIR [--runs N] [--no-gui]
"""
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_failure_modes import config as failure_modes_config  # noqa: E402  (the same tiny decoder)

passed = failed = 0


def check(name, ok, detail=""):
    global passed, failed
    print(("ok   " if ok else "FAIL ") + name + ("" if ok else ": " + str(detail)[-2000:]), flush=True)
    passed, failed = passed + ok, failed + (not ok)


def status_masks(pid):
    """{tid: (name, blocked, caught)}, the masks as bits, from /proc/PID/task/*/status."""
    out = {}
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/status" % (pid, tid)) as f:
                fields = dict(line.split(":", 1) for line in f if ":" in line)
        except OSError:  # the thread ended meanwhile
            continue
        out[tid] = (fields["Name"].strip(), int(fields["SigBlk"], 16), int(fields["SigCgt"], 16))
    return out


def bit(signo):
    return 1 << (signo - 1)


def start(bin_path, cfg, run_dir):
    return subprocess.Popen([bin_path, "train", "--config", cfg, "--out", run_dir, "--json"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def wait_for_checkpoint(run_dir, p, seconds=120):
    deadline = time.time() + seconds
    while time.time() < deadline and p.poll() is None and not os.path.exists(os.path.join(run_dir, "checkpoint.json")):
        time.sleep(0.02)
    return os.path.exists(os.path.join(run_dir, "checkpoint.json"))


def run_status(run_dir):
    with open(os.path.join(run_dir, "run_status.json")) as f:
        return json.load(f)


def main():
    bin_path, work = sys.argv[1], sys.argv[2]
    runs = int(sys.argv[sys.argv.index("--runs") + 1]) if "--runs" in sys.argv else 8
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    cfg2 = failure_modes_config(bin_path, work, "two_threads.json", 100000, checkpoint_interval=5, eval_interval=1000,
                                inspect_interval=1000, threads=2)
    cfg1 = failure_modes_config(bin_path, work, "one_thread.json", 100000, checkpoint_interval=5, eval_interval=1000,
                                inspect_interval=1000)

    # Every thread blocks both signals; no handler is installed for either.
    run_dir = os.path.join(work, "masks")
    p = start(bin_path, cfg2, run_dir)
    check("a two-thread run commits its first checkpoint", wait_for_checkpoint(run_dir, p))
    time.sleep(0.5)  # into its steps: OpenMP's workers exist now
    masks = status_masks(p.pid)
    want = bit(signal.SIGINT) | bit(signal.SIGTERM)
    shown = {t: (n, hex(b), hex(c)) for t, (n, b, c) in masks.items()}
    waiters = [t for t, (n, _, _) in masks.items() if n == "ts-signals"]
    check("the run has more than the main thread and the signal thread (%d threads)" % len(masks), len(masks) >= 3,
          shown)
    check("one thread takes the signals (ts-signals)", len(waiters) == 1, shown)
    # The waiting thread's mask reads 0 while it sits in sigwait (the kernel opens the set it waits for).
    check("every other thread blocks SIGINT and SIGTERM",
          all(b & want == want for t, (_, b, _) in masks.items() if t not in waiters), shown)
    check("no handler is installed for either", all(c & want == 0 for _, _, c in masks.values()), shown)
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=120)
    check("Ctrl-C stops it with status 0", p.returncode == 0, err)
    check("... and run_status.json says stopped", run_status(run_dir).get("status") == "stopped", run_status(run_dir))

    # Interrupted at random moments, alternately by SIGINT and SIGTERM, on one thread (the case that
    # crashed) and on two.
    rng = random.Random(7)
    bad = []
    last = None
    for i in range(runs):
        run_dir = os.path.join(work, "r%d" % i)
        sig = signal.SIGINT if i % 2 == 0 else signal.SIGTERM
        p = start(bin_path, cfg1 if i % 4 < 2 else cfg2, run_dir)
        if not wait_for_checkpoint(run_dir, p):
            p.kill()
            bad.append((i, "no first checkpoint", p.communicate()[1]))
            continue
        time.sleep(rng.uniform(0.05, 0.8))
        p.send_signal(sig)
        out, err = p.communicate(timeout=120)
        status = run_status(run_dir).get("status") if os.path.exists(os.path.join(run_dir, "run_status.json")) else None
        if p.returncode != 0 or status != "stopped":
            bad.append((i, signal.Signals(sig).name, p.returncode, status, err.strip()[-500:]))
        last = run_dir
    check("%d runs interrupted at random moments each stopped cleanly (status 0, 'stopped')" % runs, not bad, bad)
    if last:
        steps = sum(1 for line in open(os.path.join(last, "metrics.jsonl")) if json.loads(line).get("kind") == "train")
        r = subprocess.run([bin_path, "train", "--resume", last, "--steps", str(steps + 2)], capture_output=True,
                           text=True, timeout=300)
        check("the last one resumes from its checkpoint", r.returncode == 0, r.stderr)

    if "--no-gui" not in sys.argv:
        explorer_catches_nothing(bin_path, work)
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


def explorer_catches_nothing(bin_path, work):
    demo = os.path.join(work, "demo.txt")
    with open(demo, "w") as f:
        f.write("preset mla\ntrain\nwait-step 20\nstop\nquit\n")
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", TENSORSCOPE_THREADS="2")
    p = subprocess.Popen([bin_path, "--demo", demo, "--size", "1200x800"], env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True)
    caught, samples = 0, 0
    while p.poll() is None:
        try:
            for _, _, c in status_masks(p.pid).values():
                caught |= c
            samples += 1
        except OSError:  # the process ended meanwhile
            pass
        time.sleep(0.1)
    out = p.stdout.read()
    glibc_own = bit(32) | bit(33)  # SIGCANCEL and SIGSETXID, installed by glibc's first pthread_create
    check("the explorer trained in its window and quit (%d samples of its threads)" % samples,
          p.returncode == 0 and samples > 0, out[-1500:])
    check("... catching no signal but glibc's own (SigCgt %s)" % hex(caught), caught & ~glibc_own == 0, hex(caught))


if __name__ == "__main__":
    sys.exit(main())
