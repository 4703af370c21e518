#!/usr/bin/env python3
"""What `tensorscope train` may do to a folder (docs/reliability.md, "Run folders"), issue 33.

- A new run starts only in an empty or new folder, or in one that holds nothing but Tensorscope's
  own run files (a start stopped before its first checkpoint: it starts again in place). A folder
  with anything else is refused whole: nothing is deleted, replaced or created there.
- Clean-up deletes only names Tensorscope makes: a user's files in a run folder survive every
  start, resume and commit; a `checkpoints` that is a symbolic link is refused, never deleted through.
- One writer per run folder: a second `train` (new or --resume) of a folder being trained is refused
  with the holder named, and the first run's metrics stay whole.
- Every resume repairs `latest` and inspection.safetensors when a kill left them at an older step.
- A folder name longer than the file system allows gets a sentence, not std::filesystem's text.

usage: test_run_folders.py TENSORSCOPE WORKDIR
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_failure_modes import config as failure_modes_config  # noqa: E402  (the same tiny decoder)

failures = []
passed = []


def check(name, ok, detail=""):
    print(("ok   " if ok else "FAIL ") + name)
    if ok:
        passed.append(name)
    else:
        failures.append(name)
        if detail:
            print("     " + detail.strip().replace("\n", "\n     ")[:2000])


def run(cmd, timeout=300):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                          env=dict(os.environ, TENSORSCOPE_THREADS="1"))


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def read(path):
    with open(path) as f:
        return f.read()


def config(bin_path, work, name, steps=12, **train):
    """The failure-mode tests' tiny skip_right decoder: checkpoints every 3 steps, inspections every 4."""
    return failure_modes_config(bin_path, work, name, steps, **dict({"checkpoint_interval": 3, "inspect_interval": 4},
                                                                    **train))


def tree(root):
    """Every path under root with its contents (files) or link target, for before/after checks."""
    out = {}
    for d, dirs, files in os.walk(root):
        for n in dirs + files:
            p = os.path.join(d, n)
            rel = os.path.relpath(p, root)
            out[rel] = ("link", os.readlink(p)) if os.path.islink(p) else \
                       ("file", open(p, "rb").read()) if os.path.isfile(p) else ("dir",)
    return out


def inspection_step(run_dir):
    with open(os.path.join(run_dir, "inspection.safetensors"), "rb") as f:
        n = int.from_bytes(f.read(8), "little")
        return int(json.loads(f.read(n))["__metadata__"]["step"])


def current_checkpoint(run_dir):
    with open(os.path.join(run_dir, "checkpoint.json")) as f:
        j = json.load(f)
    return j["current"], j.get("previous")


def foreign_folders(bin_path, work, cfg):
    # The reported case: a project folder with the user's own checkpoints, a draft and a config.
    proj = os.path.join(work, "proj")
    write(os.path.join(proj, "checkpoints", "best", "model.pt"), "w")
    write(os.path.join(proj, ".draft.tmp.txt"), "n")
    write(os.path.join(proj, "config.json"), '{"mine": 1}')
    before = tree(proj)
    r = run([bin_path, "train", "--config", cfg, "--out", proj, "--steps", "2"])
    check("a folder holding someone else's files is refused", r.returncode == 1, r.stdout + r.stderr)
    check("... saying why and what it holds", "neither empty nor a Tensorscope run" in r.stderr and
          "checkpoints/best" in r.stderr and "config.json (not a Tensorscope run config)" in r.stderr, r.stderr)
    check("... and nothing in it is deleted, replaced or created", tree(proj) == before,
          str(sorted(set(tree(proj)) ^ set(before))))

    # checkpoints/ as a link to a shared scratch folder: refused, the scratch folder untouched.
    scratch, linked = os.path.join(work, "scratch"), os.path.join(work, "linked")
    write(os.path.join(scratch, "README"), "x")
    write(os.path.join(scratch, "step-000000000001.0000abcd", "model.bin"), "another run's")
    os.makedirs(linked)
    os.symlink("../scratch", os.path.join(linked, "checkpoints"))
    before = tree(scratch)
    r = run([bin_path, "train", "--config", cfg, "--out", linked, "--steps", "2"])
    check("a symbolically linked checkpoints/ is refused for a new run", r.returncode == 1 and
          "checkpoints (a symbolic link)" in r.stderr, r.stderr)
    check("... and the link's target is untouched", tree(scratch) == before)

    # A run of ours whose checkpoints/ was later replaced by a link: resume refuses, deletes nothing.
    own = os.path.join(work, "own")
    r = run([bin_path, "train", "--config", cfg, "--out", own, "--steps", "6"])
    check("a run trains to step 6", r.returncode == 0, r.stderr)
    moved = os.path.join(work, "moved-checkpoints")
    shutil.move(os.path.join(own, "checkpoints"), moved)
    write(os.path.join(moved, "README"), "mine")
    os.symlink(moved, os.path.join(own, "checkpoints"))
    before = tree(moved)
    r = run([bin_path, "train", "--resume", own])
    check("resume through a linked checkpoints/ is refused with the remedy", r.returncode == 1 and
          "is a symbolic link" in r.stderr and "whole run folder" in r.stderr, r.stderr)
    check("... and deletes nothing behind the link", tree(moved) == before)


def own_files_only(bin_path, work, cfg):
    # A run folder with the user's notes beside the run: every start, resume and commit keeps them.
    run_dir = os.path.join(work, "notes-run")
    r = run([bin_path, "train", "--config", cfg, "--out", run_dir, "--steps", "3"])
    check("a run trains to step 3", r.returncode == 0, r.stderr)
    mine = {".draft.tmp.txt": "draft", ".tmp/keep": "keep", "notes.txt": "notes",
            "checkpoints/best/model.pt": "best", "checkpoints/.tmp.readme": "r"}
    for rel, text in mine.items():
        write(os.path.join(run_dir, rel), text)
    r = run([bin_path, "train", "--resume", run_dir])
    check("the run resumes to its end with the user's files beside it", r.returncode == 0, r.stderr)
    kept = {rel: os.path.exists(os.path.join(run_dir, rel)) and read(os.path.join(run_dir, rel)) == text
            for rel, text in mine.items()}
    check("... and every file of the user's is still there, unchanged", all(kept.values()), str(kept))
    check("... and the message never says it removed anything", "removed" not in r.stdout + r.stderr,
          r.stdout + r.stderr)

    # A start stopped before its first commit left only Tensorscope's files: it starts again there.
    again = os.path.join(work, "again")
    write(os.path.join(again, "config.json"), read(cfg))
    write(os.path.join(again, "metrics.jsonl"), '{"kind": "train", "step": 1}\n')
    os.makedirs(os.path.join(again, "checkpoints", ".stage-4242"))
    r = run([bin_path, "train", "--config", cfg, "--out", again, "--steps", "3"])
    check("a start stopped before its first checkpoint starts again in place", r.returncode == 0, r.stderr)
    check("... and says so", "starting again in" in r.stdout + r.stderr, r.stdout + r.stderr)
    records = [json.loads(l) for l in open(os.path.join(again, "metrics.jsonl"))]
    check("... with a fresh metrics log (the interrupted start's records gone)",
          [r["step"] for r in records if r["kind"] == "train"] == [1, 2, 3] and all("loss" in r for r in records),
          str(records[:3]))


def one_writer(bin_path, work, cfg_long):
    run_dir = os.path.join(work, "busy")
    first = subprocess.Popen([bin_path, "train", "--config", cfg_long, "--out", run_dir, "--json"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env=dict(os.environ, TENSORSCOPE_THREADS="1"))
    deadline = time.time() + 120
    while time.time() < deadline and not os.path.exists(os.path.join(run_dir, "checkpoint.json")):
        time.sleep(0.05)
    check("the first training commits its first checkpoint", os.path.exists(os.path.join(run_dir, "checkpoint.json")))
    second = run([bin_path, "train", "--resume", run_dir])
    check("a second writer (--resume) is refused", second.returncode == 1, second.stdout + second.stderr)
    check("... naming the holder (its process id)", "is being trained by" in second.stderr and
          "process %d" % first.pid in second.stderr, second.stderr)
    third = run([bin_path, "train", "--config", cfg_long, "--out", run_dir])
    check("a second writer (a new start) is refused", third.returncode == 1 and
          ("is being trained by" in third.stderr or "already holds a run" in third.stderr), third.stderr)
    first.send_signal(signal.SIGINT)  # Ctrl-C: checkpoint and stop
    out, err = first.communicate(timeout=120)
    check("the first training stops cleanly", first.returncode == 0, err)
    steps = [json.loads(l)["step"] for l in open(os.path.join(run_dir, "metrics.jsonl"))
             if json.loads(l).get("kind") == "train"]
    check("... its metrics are one writer's (steps 1, 2, 3, … once each)", steps == list(range(1, len(steps) + 1)),
          str(steps[:40]))
    r = run([bin_path, "train", "--resume", run_dir, "--steps", str(len(steps) + 2)])
    check("once it has stopped, the folder trains again", r.returncode == 0, r.stderr)
    # A killed holder never leaves the folder locked.
    victim = subprocess.Popen([bin_path, "train", "--resume", run_dir, "--json"], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, env=dict(os.environ, TENSORSCOPE_THREADS="1"))
    time.sleep(1.0)
    victim.kill()
    victim.wait()
    r = run([bin_path, "train", "--resume", run_dir, "--steps", str(len(steps) + 4)])
    check("after kill -9 of the holder the folder trains again", r.returncode == 0, r.stderr)


def repairs(bin_path, work, cfg):
    run_dir, short = os.path.join(work, "stale"), os.path.join(work, "short")
    r = run([bin_path, "train", "--config", cfg, "--out", run_dir])
    check("a 12-step run", r.returncode == 0, r.stderr)
    r = run([bin_path, "train", "--config", cfg, "--out", short, "--steps", "8"])
    check("an 8-step run of the same config", r.returncode == 0, r.stderr)
    current, previous = current_checkpoint(run_dir)
    check("the finished run's latest and inspection are at step 12",
          os.readlink(os.path.join(run_dir, "latest")) == current and inspection_step(run_dir) == 12)
    # What a kill between the pointer's commit, the link's rename and the inspection's write leaves.
    os.remove(os.path.join(run_dir, "latest"))
    os.symlink(previous, os.path.join(run_dir, "latest"))
    shutil.copy(os.path.join(short, "inspection.safetensors"), os.path.join(run_dir, "inspection.safetensors"))
    r = run([bin_path, "train", "--resume", run_dir])
    check("resume of the finished run exits 0", r.returncode == 0, r.stderr)
    check("... and latest names the final checkpoint again", os.readlink(os.path.join(run_dir, "latest")) == current,
          os.readlink(os.path.join(run_dir, "latest")))
    check("... and the inspection is the final step's", inspection_step(run_dir) == 12, str(inspection_step(run_dir)))


def missing_folder(bin_path, work):
    missing = os.path.join(work, "no-such-run")
    r = run([bin_path, "train", "--resume", missing])
    check("resuming a folder that does not exist is refused", r.returncode == 1 and "resume" in r.stderr, r.stderr)
    check("... and leaves no empty folder behind", not os.path.exists(missing))


def long_names(bin_path, work, cfg):
    r = run([bin_path, "train", "--config", cfg, "--out", os.path.join(work, "x" * 300)])
    check("a folder name over NAME_MAX gets a sentence", r.returncode == 1 and "at most 255 bytes" in r.stderr and
          "filesystem error" not in r.stderr, r.stderr)
    check("... of bounded length", len(r.stderr) < 600, str(len(r.stderr)))


def main():
    bin_path, work = sys.argv[1], sys.argv[2]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    cfg = config(bin_path, work, "run.json")
    cfg_long = config(bin_path, work, "long.json", steps=100000, checkpoint_interval=5, eval_interval=1000,
                      inspect_interval=1000)
    foreign_folders(bin_path, work, cfg)
    own_files_only(bin_path, work, cfg)
    one_writer(bin_path, work, cfg_long)
    repairs(bin_path, work, cfg)
    long_names(bin_path, work, cfg)
    missing_folder(bin_path, work)
    print("run folders: %d checks passed, %d failed" % (len(passed), len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
