#!/usr/bin/env bash
# Issue 40: the OpenBLAS core types against each other, in alternating rounds: float32 GEMM 2048³
# (attention_bench --only gemm: LibTorch mm, 2 threads) and the dense-THSA training step of
# run_train_bench.sh --only thsa (Tensorscope and the PyTorch module, both on the setting's kernels).
#
#   bench/blas_coretypes.sh [BUILD_DIR] [ROUNDS] [SETTING...]   -> one JSON document on stdout
#
# A SETTING is
#   own         OPENBLAS_CORETYPE unset, TENSORSCOPE_NO_REEXEC=1: OpenBLAS's own choice
#   tensorscope OPENBLAS_CORETYPE unset: Tensorscope's choice (a restart when it is better)
#   env         the environment as it is (this machine's system sets OPENBLAS_CORETYPE=Haswell)
#   NAME        OPENBLAS_CORETYPE=NAME by hand (SkylakeX, Cooperlake, Haswell, ...)
# Every setting but `env` runs without OPENBLAS_L2_SIZE, as OpenBLAS does by itself. Default
# settings: own tensorscope env SkylakeX Cooperlake. Raw per-run documents go to stderr's log
# directory (printed). Run on an otherwise idle machine.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
ROUNDS=${2:-3}
shift $(( $# >= 2 ? 2 : $# ))
SETTINGS=("$@")
[ ${#SETTINGS[@]} -gt 0 ] || SETTINGS=(own tensorscope env SkylakeX Cooperlake)
for b in attention_bench train_bench; do
  [ -x "$BUILD/bench/$b" ] || { echo "$BUILD/bench/$b not found: build it (cmake --build $BUILD --target $b)" >&2; exit 1; }
done
LOG=$(mktemp -d "${TMPDIR:-/tmp}/blas_coretypes.XXXXXX")
echo "per-run JSON in $LOG" >&2

in_setting() {  # SETTING command...
  local s=$1
  shift
  case "$s" in
    own) env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE -u TENSORSCOPE_BLAS_CHOICE TENSORSCOPE_NO_REEXEC=1 "$@" ;;
    tensorscope) env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE -u TENSORSCOPE_BLAS_CHOICE -u TENSORSCOPE_NO_REEXEC "$@" ;;
    env) "$@" ;;
    *) env -u OPENBLAS_L2_SIZE -u TENSORSCOPE_BLAS_CHOICE OPENBLAS_CORETYPE="$s" "$@" ;;
  esac
}

for r in $(seq 1 "$ROUNDS"); do
  for s in "${SETTINGS[@]}"; do
    echo "round $r/$ROUNDS, $s: load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
    in_setting "$s" "$BUILD/bench/attention_bench" --only gemm --threads 2 > "$LOG/gemm_${s}_$r.json" 2>>"$LOG/stderr"
    in_setting "$s" bench/run_train_bench.sh "$BUILD" --only thsa --threads 2 > "$LOG/thsa_${s}_$r.json" 2>>"$LOG/stderr"
  done
done

bench/blas_coretypes_summary.py "$LOG" "$ROUNDS" "${SETTINGS[@]}"
