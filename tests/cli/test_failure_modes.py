#!/usr/bin/env python3
"""Failed writes, numerical faults and memory refusals of the command line (docs/reliability.md).

Disk full: every writer runs with RLIMIT_FSIZE (SIGXFSZ ignored, so a write past the limit fails
with EFBIG exactly where a full disk fails with ENOSPC) over a previous good file, and must exit
non-zero, say why, and leave the previous file byte for byte. Training and resume on a full disk
must fail cleanly and leave a run that resumes exactly once there is room again.
Numerical faults: a finite blow-up stops the run with the reason; eval prints valid JSON (null
and a "non_finite" list) for a model that yields NaN; spec values beyond float32 are refused.
Memory: layer-level commands refuse sizes that cannot fit, with the reason and no stack trace.
Hostile inputs (issue 19): deep nesting, devices, repeated keys and directories get one message.

usage: test_failure_modes.py TENSORSCOPE WORKDIR [--no-gui]
"""
import json
import os
import resource
import shutil
import signal
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))

failures = []


def check(name, ok, detail=""):
    print(("ok   " if ok else "FAIL ") + name)
    if not ok:
        failures.append(name)
        if detail:
            print("     " + detail.strip().replace("\n", "\n     ")[:2000])


def limited(limit):
    def apply():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return apply


def run(cmd, limit=None, env=None, timeout=600):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env,
                          preexec_fn=limited(limit) if limit is not None else None)


def read(path):
    with open(path, "rb") as f:
        return f.read()


def litter(directory):
    return [n for n in os.listdir(directory) if n.startswith(".") and ".tmp" in n]


def config(bin_path, work, name, steps=8, **train):
    spec = json.loads(run([bin_path, "spec", "preset", "skip_right"]).stdout)
    spec["sizes"]["seq_len"] = 24
    spec["causal"] = True
    t = {"steps": steps, "batch": 4, "warmup": 1, "eval_interval": 4, "eval_examples": 8,
         "checkpoint_interval": 2, "inspect_interval": 100, "seed": 1, "threads": 1}
    t.update(train)
    cfg = {"format": "tensorscope.run_config", "version": 1,
           "model": {"kind": "decoder", "layers": 2, "d_model": spec["sizes"]["F"], "ffn_multiplier": 2,
                     "attention": spec},
           "task": {"name": "copy", "seq_len": 24, "algorithmic_length": 5, "seed": 1},
           "train": t}
    path = os.path.join(work, name)
    with open(path, "w") as f:
        json.dump(cfg, f)
    return path


def current_files(run_dir):
    with open(os.path.join(run_dir, "checkpoint.json")) as f:
        d = os.path.join(run_dir, json.load(f)["current"])
    return read(os.path.join(d, "model.safetensors")), read(os.path.join(d, "optimizer.safetensors"))


def disk_full_training(bin_path, work):
    cfg = config(bin_path, work, "run.json")
    ref = os.path.join(work, "reference")
    r = run([bin_path, "train", "--config", cfg, "--out", ref, "--json"])
    check("reference run", r.returncode == 0, r.stderr)
    # A new run on a full disk: it fails at once, says why, and leaves nothing that blocks a restart.
    new = os.path.join(work, "full-new")
    r = run([bin_path, "train", "--config", cfg, "--out", new, "--json"], limit=4096)
    check("train on a full disk exits non-zero", r.returncode != 0, r.stdout + r.stderr)
    check("train on a full disk says why", "File too large" in r.stderr, r.stderr)
    r = run([bin_path, "train", "--config", cfg, "--out", new, "--json"])
    check("the same directory trains once there is room", r.returncode == 0, r.stderr)
    check("... to the reference weights", current_files(new) == current_files(ref))
    # Resume on a full disk: fails cleanly, keeps its checkpoint, then resumes exactly.
    part = os.path.join(work, "full-resume")
    r = run([bin_path, "train", "--config", cfg, "--out", part, "--steps", "4", "--json"])
    check("a run stopped at step 4", r.returncode == 0, r.stderr)
    before = current_files(part)
    r = run([bin_path, "train", "--resume", part, "--json"], limit=4096)
    check("resume on a full disk exits non-zero", r.returncode != 0, r.stdout + r.stderr)
    check("resume on a full disk says why", "File too large" in r.stderr, r.stderr)
    check("resume on a full disk keeps the checkpoint", current_files(part) == before)
    r = run([bin_path, "train", "--resume", part, "--json"])
    check("resume once there is room", r.returncode == 0, r.stderr)
    check("... continues exactly (reference weights and optimizer)", current_files(part) == current_files(ref))
    check("... and leaves no litter", not litter(part), str(litter(part)))
    return ref


def disk_full_exports(bin_path, work, ref, gui):
    """Every writer over a previous good file, on a full disk."""
    out = os.path.join(work, "exports")
    os.makedirs(out, exist_ok=True)
    spec = os.path.join(work, "spec.json")
    with open(spec, "w") as f:
        f.write(run([bin_path, "spec", "preset", "thsa"]).stdout)
    x = os.path.join(work, "x.safetensors")
    import torch
    import safetensors_py
    safetensors_py.save(x, {"x": torch.randn(2, 16, 64)})
    tokens = os.path.join(work, "tokens.safetensors")
    safetensors_py.save(tokens, {"tokens": torch.zeros(1, 24, dtype=torch.int64)})
    writers = [
        ("attention --save-weights", os.path.join(out, "w.safetensors"),
         lambda p: [bin_path, "attention", "--spec", spec, "--save-weights", p]),
        ("attention --output", os.path.join(out, "y.safetensors"),
         lambda p: [bin_path, "attention", "--spec", spec, "--input", x, "--output", p, "--maps"]),
        ("infer --output", os.path.join(out, "logits.safetensors"),
         lambda p: [bin_path, "infer", "--run", ref, "--input", tokens, "--output", p]),
        ("export --format pytorch", os.path.join(out, "pt", "model.safetensors"),
         lambda p: [bin_path, "export", "--run", ref, "--format", "pytorch", "--out", os.path.dirname(p)]),
    ]
    if gui:
        for fmt, ext in (("dot", "dot"), ("tikz", "tex"), ("svg", "svg"), ("pdf", "pdf"), ("png", "png")):
            writers.append(("diagram --format " + fmt, os.path.join(out, "diagram." + ext),
                            lambda p, fmt=fmt: [bin_path, "diagram", "--preset", "thsa", "--format", fmt, "--out", p]))
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen")
    for name, path, cmd in writers:
        r = run(cmd(path), env=env)
        check(name + " writes", r.returncode == 0 and os.path.getsize(path) > 0, r.stdout + r.stderr)
        good = read(path)
        r = run(cmd(path), limit=min(64, len(good) // 2), env=env)
        check(name + " on a full disk exits non-zero", r.returncode != 0, r.stdout + r.stderr)
        check(name + " on a full disk says why", "File too large" in r.stderr or "cannot" in r.stderr, r.stderr)
        check(name + " on a full disk leaves the previous file", read(path) == good)
        check(name + " on a full disk leaves no litter", not litter(os.path.dirname(path)),
              str(litter(os.path.dirname(path))))


def numerical_faults(bin_path, work, ref):
    # A finite blow-up: lr 9.99 without clipping.
    cfg = config(bin_path, work, "explode.json", steps=300, lr=9.99, grad_clip=0, divergence_steps=5,
                 eval_interval=1000)
    r = run([bin_path, "train", "--config", cfg, "--out", os.path.join(work, "explode"), "--json"])
    check("a finite blow-up stops the run (exit 1)", r.returncode == 1, r.stdout[-500:] + r.stderr)
    check("... with the reason", "has stayed above 10x its running minimum" in r.stderr, r.stderr)
    with open(os.path.join(work, "explode", "run_status.json")) as f:
        check("... and run_status says diverged", json.load(f)["status"] == "diverged")
    # eval of a model that yields NaN (a run written before checkpoint directories, with a NaN
    # weight): valid JSON with null and the flag, exit 1.
    import safetensors_py
    legacy = os.path.join(work, "legacy")
    os.makedirs(legacy, exist_ok=True)
    with open(os.path.join(ref, "checkpoint.json")) as f:
        current = os.path.join(ref, json.load(f)["current"])
    shutil.copy(os.path.join(ref, "config.json"), legacy)
    shutil.copy(os.path.join(current, "trainer_state.json"), legacy)
    tensors, meta = safetensors_py.load(os.path.join(current, "model.safetensors"))
    tensors["ln_f.weight"][:] = float("nan")
    safetensors_py.save(os.path.join(legacy, "model.safetensors"), tensors, meta)
    r = run([bin_path, "eval", "--run", legacy])
    lines = [json.loads(line) for line in r.stdout.splitlines() if line.strip()]
    check("eval of a NaN model prints JSON", len(lines) >= 1, r.stdout + r.stderr)
    check("... with null and the non_finite flag",
          all(j["loss"] is None and "loss" in j.get("non_finite", []) for j in lines), r.stdout)
    check("... and exits 1", r.returncode == 1, r.stderr)
    r = run([bin_path, "export", "--run", legacy, "--format", "pytorch", "--out", os.path.join(work, "nan-export")])
    check("export refuses non-finite weights", r.returncode != 0 and "non-finite" in r.stderr, r.stderr)
    # Values beyond float32.
    spec = json.loads(run([bin_path, "spec", "preset", "thsa"]).stdout)
    spec["core"]["values"][0][0] = 1e39
    path = os.path.join(work, "f32.json")
    with open(path, "w") as f:
        json.dump(spec, f)
    r = run([bin_path, "spec", "validate", path])
    check("spec validate refuses a value beyond float32", r.returncode == 1 and "float32" in r.stderr, r.stderr)


def memory_refusals(bin_path, work, gui):
    spec = json.loads(run([bin_path, "spec", "preset", "multilinear"]).stdout)
    spec["sizes"]["seq_len"] = 65536
    path = os.path.join(work, "ml65536.json")
    with open(path, "w") as f:
        json.dump(spec, f)
    r = run([bin_path, "attention", "--spec", path, "--save-weights", os.path.join(work, "w.safetensors")])
    check("attention refuses a layer whose weights cannot fit",
          r.returncode == 1 and "needs an estimated" in r.stderr and "sequence length N" in r.stderr, r.stderr)
    check("... in a few lines (no stack trace)", len(r.stderr.splitlines()) <= 3, r.stderr)
    spec["sizes"]["seq_len"] = 4096
    with open(path, "w") as f:
        json.dump(spec, f)
    r = run([bin_path, "diagram", "--spec", path, "--check"])
    check("diagram --check refuses an evaluation that cannot fit",
          r.returncode == 1 and "needs an estimated" in r.stdout + r.stderr, r.stdout + r.stderr)
    # The same with a small machine rehearsed through TENSORSCOPE_MEMORY_LIMIT.
    small = os.path.join(work, "thsa.json")
    with open(small, "w") as f:
        f.write(run([bin_path, "spec", "preset", "thsa"]).stdout)
    import torch
    import safetensors_py
    x = os.path.join(work, "x-big.safetensors")
    safetensors_py.save(x, {"x": torch.zeros(64, 512, 64)})
    env = dict(os.environ, TENSORSCOPE_MEMORY_LIMIT="64M")
    r = run([bin_path, "attention", "--spec", small, "--input", x, "--output", os.path.join(work, "y.safetensors")],
            env=env)
    check("attention refuses an input that cannot fit (64M machine)",
          r.returncode == 1 and "64 x 512 tokens" in r.stderr and "smaller batch" in r.stderr, r.stderr)


def hostile_inputs(bin_path, work):
    """Issue 19: readers refuse what they must, with one clear message and no crash."""
    deep = "[" * 100000 + "]" * 100000
    path = os.path.join(work, "deep.json")
    with open(path, "w") as f:
        f.write('{"format": "tensorscope.run_config", "version": 1, "train": {"lr": %s}}' % deep)
    r = run([bin_path, "train", "--config", path, "--out", os.path.join(work, "deep-run")])
    check("train --config with a value nested 100,000 deep: exit 1, no crash",
          r.returncode == 1 and "nested deeper than 64" in r.stderr, "rc %d: %s" % (r.returncode, r.stderr[:300]))
    r = run([bin_path, "spec", "validate", "/dev/zero"], timeout=30)
    check("spec validate /dev/zero is refused by name", r.returncode == 1 and "not a regular file" in r.stderr,
          r.stderr[:300])
    spec = run([bin_path, "spec", "preset", "mhsa"]).stdout
    dup = os.path.join(work, "dup.json")
    with open(dup, "w") as f:
        f.write(spec.replace("{", '{"causal": true, ', 1))
    r = run([bin_path, "spec", "validate", dup])
    check("a repeated key is refused", r.returncode == 1 and "appears twice" in r.stderr, r.stderr[:300])
    cfg = json.load(open(config(bin_path, work, "corpus-dir.json")))
    cfg["task"] = {"name": "char_lm", "seq_len": 24, "corpus": "/tmp"}
    with open(os.path.join(work, "corpus-dir.json"), "w") as f:
        json.dump(cfg, f)
    r = run([bin_path, "train", "--config", os.path.join(work, "corpus-dir.json"), "--out", os.path.join(work, "cd")])
    check("a directory given as corpus is named as one", r.returncode == 1 and "/tmp is a directory" in r.stderr,
          r.stderr[:300])


def main():
    bin_path, work = sys.argv[1], sys.argv[2]
    gui = "--no-gui" not in sys.argv
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    ref = disk_full_training(bin_path, work)
    disk_full_exports(bin_path, work, ref, gui)
    numerical_faults(bin_path, work, ref)
    memory_refusals(bin_path, work, gui)
    hostile_inputs(bin_path, work)
    print("%d failure(s)" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
