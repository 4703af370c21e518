"""Issue 41: bench/run_train_bench.sh runs the given designs on both sides, Tensorscope's train_bench
and the PyTorch twin (train_bench_pytorch.py on the export's model.py), in quick mode.

For each name it requires one row of the side-by-side document with: the name; the same number of
trainable parameters on both sides (the export builds the same architecture; a design the export
built differently, or a model option such as rotary positions lost on the way, would show here);
finite, positive throughputs and finite losses near the untrained level ln(vocab) on both sides (one
quick step of a char LM cannot go far from it); and the run's `positions` as train_bench reports it
(mhsa_rotary: "rotary"). Timings are not judged.

usage: test_run_train_bench.py RUN_TRAIN_BENCH_SH BUILD_DIR NAME[,NAME...]
Exits 77 (CTest: skipped) when this Python has no PyTorch.
"""
import json
import math
import subprocess
import sys


def main():
    script, build, names = sys.argv[1], sys.argv[2], [n for n in sys.argv[3].split(",") if n]
    try:
        import torch  # noqa: F401  (the PyTorch side needs it)
    except ImportError:
        print("skipped: %s has no PyTorch" % sys.executable)
        return 77
    cmd = ["sh", script, build, "--quick", "--only", ",".join(names), "--steps", "1", "--heavy-steps", "1",
           "--rounds", "1", "--warmup", "0", "--threads", "1", "--python", sys.executable]
    done = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if done.returncode != 0:
        print("run_train_bench.sh failed (exit %d):\n%s" % (done.returncode, done.stderr[-4000:]))
        return 1
    doc = json.loads(done.stdout)
    rows = {r["name"]: r for r in doc["runs"]}
    failures = []
    for name in names:
        r = rows.get(name)
        if r is None:
            failures.append("%s: no row (rows: %s)" % (name, ", ".join(rows)))
            continue
        problems = []
        if r["trainable_parameters"] != r["pytorch_trainable_parameters"]:
            problems.append("trainable parameters %d (Tensorscope) != %d (PyTorch)"
                            % (r["trainable_parameters"], r["pytorch_trainable_parameters"]))
        for side in ("tensorscope", "pytorch"):
            tps = r["%s_tokens_per_second" % side]
            if not (math.isfinite(tps) and tps > 0):
                problems.append("%s tokens/s %r" % (side, tps))
            loss = r["%s_final_loss" % side]
            untrained = math.log(r["vocab"])
            if not (math.isfinite(loss) and abs(loss - untrained) < 0.5 * untrained):
                problems.append("%s loss %r far from ln(vocab) = %.3f" % (side, loss, untrained))
        want = "rotary" if name.endswith("_rotary") else "learned"
        if r["positions"] != want:
            problems.append("positions %r, expected %r" % (r["positions"], want))
        print("%s %s: %d parameters, losses %.4f / %.4f" % ("FAIL" if problems else "ok", name,
              r["trainable_parameters"], r["tensorscope_final_loss"], r["pytorch_final_loss"]))
        failures += ["%s: %s" % (name, p) for p in problems]
    for f in failures:
        print("  " + f)
    failed = len({f.split(":")[0] for f in failures})
    print("%d passed, %d failed" % (len(names) - failed, failed))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
