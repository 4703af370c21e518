"""Interrupts N training runs at random moments and counts the ones that crash (docs/decisions.md, the
projections on oneDNN's sgemm: oneDNN's JIT GEMM corrupts the heap when a signal handler interrupts
it, so the command line takes its signals on a thread that computes nothing).

usage: /usr/bin/python3 scripts/interrupt-campaign.py TENSORSCOPE_BINARY N [VAR=VALUE ...]

Each run trains the failure-mode tests' tiny decoder (one thread unless TENSORSCOPE_THREADS=T is
given), gets SIGINT 0.3-1 s after its first checkpoint and must stop cleanly. INTERRUPT_BURST=K in the
environment sends K more signals 2 ms apart after the first (SIGTERM and SIGINT in turn: they reach
the step in progress; a run that has already stopped may be ended by one, which is not a crash).
A crash is an abort (glibc's heap checks) or a segmentation fault. Work folder: /tmp/interrupt-campaign.
"""
import os, signal, subprocess, sys, time, random, shutil
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "cli"))
from test_failure_modes import config as fm_config
bin_path, n = sys.argv[1], int(sys.argv[2])
extra = dict(a.split("=", 1) for a in sys.argv[3:] if "=" in a)
work = "/tmp/interrupt-campaign"
shutil.rmtree(work, ignore_errors=True); os.makedirs(work)
cfg = fm_config(bin_path, work, "long.json", 100000, checkpoint_interval=5, eval_interval=1000, inspect_interval=1000)
crashes = 0
for i in range(n):
    run_dir = os.path.join(work, "r%d" % i)
    env = dict(os.environ, **dict({"TENSORSCOPE_THREADS": "1"}, **extra))
    p = subprocess.Popen([bin_path, "train", "--config", cfg, "--out", run_dir, "--json"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    while p.poll() is None and not os.path.exists(os.path.join(run_dir, "checkpoint.json")):
        time.sleep(0.02)
    time.sleep(random.uniform(0.3, 1.0))
    p.send_signal(signal.SIGINT)
    if os.environ.get("INTERRUPT_BURST"):  # more signals while the step in progress finishes
        for k in range(int(os.environ["INTERRUPT_BURST"])):
            time.sleep(0.002)
            try:
                p.send_signal(signal.SIGINT if k % 2 else signal.SIGTERM)
            except ProcessLookupError:
                break
    out, err = p.communicate(timeout=120)
    if p.returncode in (-6, -11, 134, 139):  # abort (glibc's heap checks) or a segmentation fault
        crashes += 1
        print("run %d rc %d: %s" % (i, p.returncode, err.strip()[-300:]), flush=True)
    elif p.returncode not in (0, -2, -15):  # -2/-15: a burst signal after the stop ended it by default
        print("run %d other rc %d: %s" % (i, p.returncode, err.strip()[-300:]), flush=True)
    shutil.rmtree(run_dir, ignore_errors=True)
print("crashes %d of %d" % (crashes, n))
