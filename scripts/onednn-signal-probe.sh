#!/usr/bin/env bash
# Does this machine's oneDNN corrupt the heap when a signal handler interrupts its sgemm (oneDNN issue
# #4845)? Builds scripts/onednn-signal-probe.cpp and runs it on the three operand orders of the model's
# linear maps (forward NT, ∂x NN, ∂W TN), three tries each, on one OpenMP thread. Why it matters to
# Tensorscope: app/src/cli/stop_signals.h and docs/decisions.md. Prints a line per try.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=$(mktemp -d)/onednn-signal-probe
trap 'rm -rf "$(dirname "$bin")"' EXIT
g++ -O2 -std=c++17 -o "$bin" "$here/onednn-signal-probe.cpp" -ldl -lpthread
crashed=0
for shape in "128 64 64 NT" "128 64 256 NN" "64 64 128 TN"; do
  for try in 1 2 3; do
    out=$(OMP_NUM_THREADS=1 "$bin" $shape 3000 2>&1)
    rc=$?
    [ $rc -eq 77 ] && { echo "$out"; exit 0; }
    if [ $rc -eq 0 ]; then echo "$shape try $try: $out"
    else echo "$shape try $try: crashed (exit $rc: $(echo "$out" | tail -1))"; crashed=$((crashed + 1)); fi
  done
done
echo "onednn-signal-probe: $crashed of 9 tries crashed"
