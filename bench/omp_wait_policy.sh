#!/usr/bin/env bash
# Why the explorer runs with OMP_WAIT_POLICY=PASSIVE (app/src/main.cpp, docs/decisions.md): the same
# training run with spinning (ACTIVE) and sleeping (PASSIVE) OpenMP waits, alone and beside one busy
# process (as the GUI thread is beside a training run), in alternating rounds.
# usage: bench/omp_wait_policy.sh [BUILD_DIR] [ROUNDS] [STEPS]   -> JSON on stdout
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
ROUNDS=${2:-3}
STEPS=${3:-60}
BIN="$BUILD/app/tensorscope"
CONFIG=resources/examples/fashion_mnist_mhsa.json
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"; kill $(jobs -p) 2>/dev/null || true' EXIT
run() {  # policy busy -> seconds of training (the run's own clock)
  local dir="$OUT/run" busy_pid=""
  rm -rf "$dir"
  if [ "$2" = 1 ]; then (while :; do :; done) & busy_pid=$!; fi
  OMP_WAIT_POLICY=$1 "$BIN" train --config "$CONFIG" --out "$dir" --steps "$STEPS" --json >/dev/null 2>&1
  [ -n "$busy_pid" ] && kill "$busy_pid"
  /usr/bin/python3 -c "import json,sys; r=[json.loads(l) for l in open(sys.argv[1])]; print([x for x in r if x['kind']=='train'][-1]['elapsed_seconds'])" "$dir/metrics.jsonl"
}
echo "{\"machine\": \"$(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)\", \"config\": \"$CONFIG\", \"steps\": $STEPS, \"rounds\": ["
for r in $(seq 1 "$ROUNDS"); do
  a=$(run ACTIVE 0); p=$(run PASSIVE 0); ab=$(run ACTIVE 1); pb=$(run PASSIVE 1)
  sep=$([ "$r" -lt "$ROUNDS" ] && echo , || true)
  echo "  {\"active_idle_s\": $a, \"passive_idle_s\": $p, \"active_beside_busy_s\": $ab, \"passive_beside_busy_s\": $pb}$sep"
done
echo "]}"
