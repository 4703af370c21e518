#!/usr/bin/env bash
# libFuzzer under ASan + UBSan for every reader (issue 19; harnesses in tests/fuzz).
# usage: scripts/fuzz.sh [SECONDS] [HARNESS...]   (default 60 s each, every harness)
# Each harness starts from its committed seeds (tests/fuzz/corpus/NAME) plus what earlier runs on this
# machine found (BUILD/corpus/NAME), runs SECONDS with a 10 s per-input time bound and a 2 GiB memory
# bound, and fails on any crash, sanitizer report, leak, broken invariant, timeout or out-of-memory.
# A finding is kept as BUILD/findings/NAME/crash-* (or timeout-*, oom-*) to reproduce with
#   BUILD/fuzz_NAME BUILD/findings/NAME/crash-…
# Results: BUILD/fuzz-summary.json (executions and coverage per harness). TENSORSCOPE_FUZZ_JOBS
# harnesses run at once (default: one per core).
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_EACH=${1:-60}
shift || true
BUILD=${TENSORSCOPE_FUZZ_BUILD:-build-fuzz}
command -v clang++ >/dev/null || { echo "fuzz: clang++ is missing; run scripts/setup.sh as root" >&2; exit 1; }
mkdir -p "$BUILD"
cmake -S tests/fuzz -B "$BUILD" -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=None > "$BUILD/configure.log" 2>&1 \
  || { cat "$BUILD/configure.log" >&2; exit 1; }
cmake --build "$BUILD" -j "$(nproc)"
read -r -a ALL < "$BUILD/harnesses.txt"
HARNESSES=("${@:-${ALL[@]}}")
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:allocator_may_return_null=0
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
summary="$BUILD/fuzz-summary.json"
JOBS=${TENSORSCOPE_FUZZ_JOBS:-$(nproc)}
# One harness: its run, its summary line in $BUILD/result-NAME.json, one line printed.
fuzz_one() {
  local h=$1 corpus="$BUILD/corpus/$1" findings="$BUILD/findings/$1" log="$BUILD/fuzz-$1.log"
  local start rc=0 execs cov status=clean
  mkdir -p "$corpus" "$findings"
  start=$(date +%s)
  "$BUILD/fuzz_$h" "$corpus" "tests/fuzz/corpus/$h" -max_total_time="$SECONDS_EACH" -timeout=10 -rss_limit_mb=2048 \
    -max_len=65536 -print_final_stats=1 -artifact_prefix="$findings/" > "$log" 2>&1 || rc=$?
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo 0)
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | grep -o '[0-9]*' || echo 0)
  if [ "$rc" -ne 0 ]; then status=finding; fi
  printf '{"harness": "%s", "seconds": %d, "executions": %s, "edges_covered": %s, "corpus_files": %d, "status": "%s"}\n' \
    "$h" "$(( $(date +%s) - start ))" "${execs:-0}" "${cov:-0}" "$(find "$corpus" -type f | wc -l)" "$status" \
    > "$BUILD/result-$h.json"
  printf 'fuzz %-14s %-8s %10s executions, %5s edges, %4ds\n' "$h" "$status" "${execs:-0}" "${cov:-0}" "$(( $(date +%s) - start ))"
  if [ "$status" != clean ]; then tail -40 "$log" >&2; fi
}
# The harnesses are single-threaded: JOBS of them run at once (one per core by default), each for
# its full SECONDS, so the stage takes about SECONDS x harnesses / JOBS.
running=0
for h in "${HARNESSES[@]}"; do
  rm -f "$BUILD/result-$h.json"
  if [ "$running" -ge "$JOBS" ]; then wait -n || true; running=$((running - 1)); fi
  fuzz_one "$h" &
  running=$((running + 1))
done
wait
failed=()
echo "[" > "$summary"
first=1
for h in "${HARNESSES[@]}"; do
  line=$(cat "$BUILD/result-$h.json" 2>/dev/null || printf '{"harness": "%s", "status": "did not report"}' "$h")
  printf '%s %s\n' "$([ $first -eq 1 ] || echo ,)" "$line" >> "$summary"
  first=0
  case $line in *'"status": "clean"'*) ;; *) failed+=("$h") ;; esac
done
echo "]" >> "$summary"
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz: findings in ${failed[*]} (reproducers in $BUILD/findings/)" >&2
  exit 1
fi
echo "fuzz: ${#HARNESSES[@]} harnesses clean, ${SECONDS_EACH} s each, $JOBS at a time"
