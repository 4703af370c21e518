#!/usr/bin/env python3
"""Two builds of Tensorscope side by side in one run: the reference training step of each design
with build A's train_bench and build B's, alternating A, B, A, B ... so that both see the same
drift of the machine. Prints one JSON document: each round's ms per step for both, and per design
the median B/A ratio over the rounds with its range (below 1: B is faster).

    bench/ab_train_bench.py BUILD_A BUILD_B [--only mhsa,gqa] [--rounds 5] [--steps 6]

Typical use: BUILD_A a worktree of the commit before a change (`git worktree add ../ab COMMIT`,
configured like BUILD_B; with the project's ccache settings only the changed files compile),
BUILD_B the build of the change. Measure on an otherwise idle machine.
"""
import argparse, json, os, statistics, subprocess, sys


def run(build, only, steps):
    out = subprocess.run([os.path.join(build, "bench", "train_bench"), "--steps", str(steps), "--warmup", "1",
                          "--only", only], check=True, capture_output=True, text=True).stdout
    return {r["name"]: r["ms_per_step"] for r in json.loads(out)["runs"]}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("build_a")
    p.add_argument("build_b")
    p.add_argument("--only", default="mhsa")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--steps", type=int, default=6)
    a = p.parse_args()
    rounds = []
    for r in range(a.rounds):
        ms_a = run(a.build_a, a.only, a.steps)
        ms_b = run(a.build_b, a.only, a.steps)
        rounds.append({"a": ms_a, "b": ms_b})
        print("round %d/%d: %s" % (r + 1, a.rounds, ", ".join("%s %.1f -> %.1f ms" % (n, ms_a[n], ms_b[n])
                                                            for n in ms_a)), file=sys.stderr)
    summary = {}
    for name in rounds[0]["a"]:
        ratios = [x["b"][name] / x["a"][name] for x in rounds]
        summary[name] = {"a_median_ms": round(statistics.median(x["a"][name] for x in rounds), 1),
                         "b_median_ms": round(statistics.median(x["b"][name] for x in rounds), 1),
                         "b_over_a": round(statistics.median(ratios), 3),
                         "b_over_a_range": [round(min(ratios), 3), round(max(ratios), 3)]}
    print(json.dumps({"benchmark": "training_ab", "build_a": os.path.abspath(a.build_a),
                      "build_b": os.path.abspath(a.build_b), "steps": a.steps, "rounds": rounds,
                      "summary": summary}, indent=2))


if __name__ == "__main__":
    main()
