#!/usr/bin/env python3
"""Collects what scripts/gpu-check.sh left in its output folder into one JSON document (stdout).

   gpu_check_report.py OUT_DIR

Reads stages.tsv (stage, exit status, seconds), gpu.txt (nvidia-smi), python.json (PyTorch facts),
version.txt (`tensorscope --version`), ctest-cuda.xml and ctest.xml (CTest's JUnit files: the CUDA
tests, then everything else) and the benchmarks' JSON documents (bench_*.json). Missing pieces are reported as missing, never invented."""
import json
import os
import sys
import xml.etree.ElementTree as ET


def read(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return None


def is_cuda_test(name):
    return "cuda" in name.lower()


def tests_from_junit(path):
    text = read(path)
    if text is None:
        return {"missing": os.path.basename(path)}
    root = ET.fromstring(text)
    counts = {"passed": 0, "failed": 0, "skipped": 0}
    cuda = {"passed": [], "failed": [], "skipped": []}
    failed = []
    for case in root.iter("testcase"):
        name = case.get("name", "")
        status = case.get("status", "run")
        if case.find("failure") is not None or status == "fail":
            kind = "failed"
            failed.append(name)
        elif case.find("skipped") is not None or status in ("notrun", "skipped"):
            kind = "skipped"
        else:
            kind = "passed"
        counts[kind] += 1
        if is_cuda_test(name):
            cuda[kind].append(name)
    return {"counts": counts, "failed": failed,
            "cuda": {"counts": {k: len(v) for k, v in cuda.items()}, **cuda}}


def main():
    out = sys.argv[1]
    report = {"report": "tensorscope_gpu_check"}
    stages = []
    for line in (read(os.path.join(out, "stages.tsv")) or "").splitlines():
        name, rc, seconds = line.split("\t")
        stages.append({"stage": name, "exit": int(rc), "seconds": float(seconds)})
    report["stages"] = stages
    report["gpu"] = (read(os.path.join(out, "gpu.txt")) or "").strip().splitlines()
    py = read(os.path.join(out, "python.json"))
    report["pytorch"] = json.loads(py) if py else None
    version = read(os.path.join(out, "version.txt"))
    report["tensorscope_version"] = version.strip().splitlines() if version else None
    report["tests"] = tests_from_junit(os.path.join(out, "ctest.xml"))
    report["cuda_tests"] = tests_from_junit(os.path.join(out, "ctest-cuda.xml"))
    benches = {}
    for f in sorted(os.listdir(out)):
        if f.startswith("bench_") and f.endswith(".json"):
            text = read(os.path.join(out, f)) or ""
            try:
                benches[f[:-5]] = json.loads(text)
            except json.JSONDecodeError as e:
                benches[f[:-5]] = {"unreadable": str(e), "head": text[:400]}
    report["benchmarks"] = benches
    report["ok"] = bool(stages) and all(s["exit"] == 0 for s in stages)
    json.dump(report, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
