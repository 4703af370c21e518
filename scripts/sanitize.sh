#!/usr/bin/env bash
# The headless build under AddressSanitizer + UndefinedBehaviorSanitizer (issue 19), with every one
# of its tests: the spec layer, the fused-kernel building blocks, model_core (LibTorch side:
# runtime, io, analysis, attention, tasks, training, diagram evaluator), the command line driven by
# its shell and Python tests, and the benchmark smoke test. Our code is instrumented; Debian's
# LibTorch, OpenBLAS and libgomp are not (errors inside them go unseen, but every call into them
# from our code is checked, and LeakSanitizer sees their allocations). One test is skipped by
# design: glibc's mallopt tuning, which ASan's allocator replaces. The GUI (Qt, QCustomPlot,
# Graphviz) is left out: its dependencies are not instrumented either, and the Graphviz layout is
# checked under ASan by the graphviz_asan_check test of the main build.
# Cost on the 2-core CI machine: ~15 min to build cold, ~3 min with ccache; ~8 min of tests.
# usage: scripts/sanitize.sh [BUILD_DIR]   (default build-asan)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build-asan}
start=$(date +%s)
mkdir -p "$BUILD"
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTENSORSCOPE_BUILD_GUI=OFF \
  -DTENSORSCOPE_SANITIZE=ON > "$BUILD/configure.log" || { cat "$BUILD/configure.log" >&2; exit 1; }
cmake --build "$BUILD" -j "$(nproc)"
built=$(date +%s)
# abort_on_error: a finding fails its test; detect_leaks: LeakSanitizer at every exit.
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:strict_string_checks=1
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
# The Python checks (export = infer, parity with official code: the rest of their time is PyTorch)
# and the Slurm fixture (real daemons) run in the Release test stage only: they take minutes under
# ASan, and the Tensorscope code they drive is run here too (`export --format pytorch` by
# cli.failure_modes, the Slurm client by sweeps_tests against a scripted sbatch/squeue).
# The benchmarks' side-by-side smoke run is mostly PyTorch too; its train_bench half runs here as
# bench.train_smoke.
ctest --test-dir "$BUILD" --output-on-failure -j "$(nproc)" --timeout 900 -E "${TS_ASAN_EXCLUDE:-^(python|slurm)\.|^bench\.train_side_by_side_smoke\$}"
echo "sanitizers: the headless build's tests clean under ASan + UBSan" \
  "(build $(( built - start )) s, tests $(( $(date +%s) - built )) s)"
