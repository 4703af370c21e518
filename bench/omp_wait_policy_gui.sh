#!/usr/bin/env bash
# The explorer itself (offscreen, a demo script trains 300 steps of the Fashion-MNIST example
# session's first run) with each OpenMP wait policy: libgomp's default (spin, then sleep), ACTIVE,
# PASSIVE and a short spin (GOMP_SPINCOUNT=10000), alone and beside one busy process, in
# alternating rounds. Seconds are the run's own training clock (metrics.jsonl elapsed_seconds).
# Companion of bench/omp_wait_policy.sh (the headless trainer); see docs/decisions.md.
# usage: bench/omp_wait_policy_gui.sh [BUILD_DIR] [ROUNDS]   -> JSON on stdout
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
ROUNDS=${2:-3}
BIN="$BUILD/app/tensorscope"
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"; kill $(jobs -p) 2>/dev/null || true' EXIT
printf 'session resources/sessions/fashion_mnist_dimwise_vs_mhsa.json\nrun 1\ntrain 300\nwait-end\n' > "$OUT/demo.txt"
run() {  # label busy env... -> seconds
  local busy=$2 busy_pid=""; shift 2
  rm -rf "$OUT/home"; mkdir -p "$OUT/home"
  if [ "$busy" = 1 ]; then (while :; do :; done) & busy_pid=$!; fi
  env HOME="$OUT/home" XDG_DATA_HOME="$OUT/home/data" QT_QPA_PLATFORM=offscreen TENSORSCOPE_NO_REEXEC=1 "$@" \
    timeout 600 "$BIN" --demo "$OUT/demo.txt" >/dev/null 2>&1
  [ -n "$busy_pid" ] && kill "$busy_pid"
  /usr/bin/python3 -c "import json,sys; r=[json.loads(l) for l in open(sys.argv[1])]; print([x for x in r if x['kind']=='train'][-1]['elapsed_seconds'])" \
    "$(find "$OUT/home/data" -name metrics.jsonl | head -1)"
}
echo "{\"machine\": \"$(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)\", \"steps\": 300, \"rounds\": ["
for r in $(seq 1 "$ROUNDS"); do
  line=""
  for busy in 0 1; do
    where=$([ $busy = 1 ] && echo beside_busy || echo idle)
    line+="\"default_${where}_s\": $(run d $busy), "
    line+="\"active_${where}_s\": $(run a $busy OMP_WAIT_POLICY=ACTIVE), "
    line+="\"passive_${where}_s\": $(run p $busy OMP_WAIT_POLICY=PASSIVE), "
    line+="\"spin10k_${where}_s\": $(run s $busy GOMP_SPINCOUNT=10000), "
  done
  sep=$([ "$r" -lt "$ROUNDS" ] && echo , || true)
  echo "  {${line%, }}$sep"
done
echo "]}"
