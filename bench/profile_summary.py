#!/usr/bin/env python3
"""Self time per operator in train_bench --profile traces (LibTorch's chrome://tracing JSON).

usage: profile_summary.py TRACE.json [TRACE2.json] [--top N] [--steps S]

Self time = an event's duration less that of the events nested inside it on the same thread, so
the rows add up to the traced time once. With two traces the rows are side by side with the
difference (the second less the first), sorted by it: where one design's step goes beyond another's.
Times are per step when --steps is given (train_bench's --steps), else for the whole trace.
"""
import argparse
import collections
import json


def self_times(path):
    events = json.load(open(path))
    if isinstance(events, dict):
        events = events.get("traceEvents", [])
    per_thread = collections.defaultdict(list)
    for e in events:
        if e.get("ph") == "X":
            name = e["name"]
            for prefix in ("torch::autograd::CppNode<", "tensorscope::model_core::", "autograd::engine::evaluate_function: "):
                name = name.replace(prefix, "")
            per_thread[e.get("tid")].append((float(e["ts"]), float(e["dur"]), name))
    totals = collections.Counter()
    counts = collections.Counter()
    for evs in per_thread.values():
        evs.sort(key=lambda t: (t[0], -t[1]))
        stack = []  # [end, name, child time]
        def close(item):
            end, name, child, dur = item
            totals[name] += dur - child
        for ts, dur, name in evs:
            while stack and stack[-1][0] <= ts:
                close(stack.pop())
            if stack:
                stack[-1][2] += dur
            stack.append([ts + dur, name, 0.0, dur])
            counts[name] += 1
        while stack:
            close(stack.pop())
    return totals, counts


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("traces", nargs="+")
    ap.add_argument("--top", type=int, default=30)
    ap.add_argument("--steps", type=int, default=1)
    a = ap.parse_args()
    tables = [self_times(p) for p in a.traces[:2]]
    div = 1000.0 * a.steps  # µs → ms per step
    if len(tables) == 1:
        totals, counts = tables[0]
        print(f"{'operator':60s} {'ms/step':>9s} {'calls/step':>10s}")
        for name, t in totals.most_common(a.top):
            print(f"{name[:60]:60s} {t / div:9.2f} {counts[name] / a.steps:10.1f}")
        print(f"{'total':60s} {sum(totals.values()) / div:9.2f}")
        return
    (t1, c1), (t2, c2) = tables
    names = set(t1) | set(t2)
    rows = sorted(names, key=lambda n: -abs(t2[n] - t1[n]))[: a.top]
    print(f"{'operator':60s} {'first':>8s} {'second':>8s} {'diff':>8s}  (ms/step)")
    for n in rows:
        print(f"{n[:60]:60s} {t1[n] / div:8.2f} {t2[n] / div:8.2f} {(t2[n] - t1[n]) / div:+8.2f}")
    s1, s2 = sum(t1.values()) / div, sum(t2.values()) / div
    print(f"{'total':60s} {s1:8.2f} {s2:8.2f} {s2 - s1:+8.2f}")


if __name__ == "__main__":
    main()
