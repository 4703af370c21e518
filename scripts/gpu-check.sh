#!/usr/bin/env bash
# The GPU check (issue 16): on a machine with PyTorch 2.x and an NVIDIA GPU, configures the headless
# build (no Qt, QCustomPlot or Graphviz) against that PyTorch's LibTorch, builds it, runs every test
# (the device-parametrised ones on CUDA) and the benchmarks on the GPU, and writes one JSON report.
#
#   scripts/gpu-check.sh [--deps DIR] [--build DIR] [--out DIR] [--jobs N] [--python PY]
#                        [--stages configure,build,test,bench] [--bench-quick] [--tests cuda|all]
#                        [--attention-args "ARGS"] [--train-args "ARGS"] [--compare-args "ARGS"]
#                        [--deadline SECONDS]
#
# --deps DIR    googletest/, nlohmann/ and zlib/ for a machine without network that lacks them
#               (scripts/gpu-deps.sh DIR makes the folder on a Debian 12 machine)
# --build DIR   build folder (default build-gpu); kept, so a second run only rebuilds what changed
# --out DIR     where the report (gpu-check.json) and the logs go (default DIR/gpu-check of the build)
# --stages      which stages to run, in order (default all four)
# --bench-quick tiny benchmark sizes (a smoke run of the script itself)
# --tests cuda  only the CUDA tests (names matching [Cc]uda; default all: then every other test too)
# --deadline S  the seconds from the script's start by which the training comparison must end (a
#               lent GPU's time is short): gpu_train_compare.py gets what is left, less 20 s for the
#               report (--max-seconds), starts no way after it and still prints what it measured.
#               The other stages are not bounded (pass --train-args none under a deadline);
#               0 (default): no limit
# --attention-args, --train-args, --compare-args  more arguments for bench/attention_bench,
#               bench/run_train_bench.sh and bench/gpu_train_compare.py (e.g. "--min-seconds 0.3",
#               "--rounds 2 --steps 6"; --train-args none skips run_train_bench.sh)
#
# The benchmarks (issue 39): attention_bench with the fused CUDA attention (every layer, and the
# head-mixing cores against N up to --max-n, default 8192 here), the same layers with the ATen
# formulation (TENSORSCOPE_CUDA_ATTENTION=aten, the path before issue 39), and gpu_train_compare.py:
# the reference training step with CUDA graphs, eager, eager with ATen attention, and the exported
# PyTorch module eager and under torch.compile.
#
# The report holds the machine (GPU, driver, PyTorch, CUDA), each stage's status and seconds, the
# test counts (passed, failed, skipped; the CUDA tests by name), and the benchmarks' JSON documents.
# Exit status: 0 when every stage that ran succeeded.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
root=$(pwd)

deps="" build=build-gpu out="" jobs=$(nproc) python=python3 stages=configure,build,test,bench bench_quick=""
attention_args="" train_args="" compare_args="" tests=all deadline=0
usage="usage: $0 [--deps DIR] [--build DIR] [--out DIR] [--jobs N] [--python PY] [--stages LIST] [--bench-quick] [--tests cuda|all] [--attention-args ARGS] [--train-args ARGS] [--compare-args ARGS] [--deadline SECONDS]"
started=$(date +%s)
while [ $# -gt 0 ]; do
  case "$1" in
    --deps) deps=$(cd "$2" && pwd) || exit 2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    --python) python=$2; shift 2 ;;
    --stages) stages=$2; shift 2 ;;
    --bench-quick) bench_quick=1; shift ;;
    --attention-args) attention_args=$2; shift 2 ;;
    --train-args) train_args=$2; shift 2 ;;
    --compare-args) compare_args=$2; shift 2 ;;
    --tests) tests=$2; shift 2 ;;
    --deadline) deadline=$2; shift 2 ;;
    -h|--help) echo "$usage"; exit 0 ;;
    *) echo "$usage" >&2; exit 2 ;;
  esac
done
case "$deadline" in ''|*[!0-9]*) echo "$0: --deadline takes whole seconds, not '$deadline'" >&2; exit 2 ;; esac
[ -n "$out" ] || out="$build/gpu-check"
mkdir -p "$out"
out=$(cd "$out" && pwd)
status_file="$out/stages.tsv"
: >"$status_file"

log() { echo "gpu-check: $*" >&2; }
has_stage() { case ",$stages," in *",$1,"*) return 0 ;; *) return 1 ;; esac; }
# run_stage NAME COMMAND...: runs it with its output in $out/NAME.log, records status and seconds.
# With JSON_STDOUT=1 the command's standard output goes to $out/NAME.json instead (benchmarks).
run_stage() {
  local name=$1; shift
  local t0 t1 rc
  log "$name: $*"
  t0=$(date +%s.%N)
  if [ "${JSON_STDOUT:-0}" = 1 ]; then "$@" >"$out/$name.json" 2>"$out/$name.log"; else "$@" >"$out/$name.log" 2>&1; fi
  rc=$?
  t1=$(date +%s.%N)
  printf '%s\t%s\t%s\n' "$name" "$rc" "$(awk "BEGIN{printf \"%.1f\", $t1 - $t0}")" >>"$status_file"
  if [ $rc -ne 0 ]; then log "$name FAILED (exit $rc); the end of $out/$name.log:"; tail -n 40 "$out/$name.log" >&2; fi
  return $rc
}

# --- the machine -----------------------------------------------------------------------------------
if command -v nvidia-smi >/dev/null; then
  nvidia-smi --query-gpu=name,memory.total,driver_version,compute_cap --format=csv,noheader 2>&1 | sed -n 1,4p
else
  echo "none (no nvidia-smi on this machine)"
fi >"$out/gpu.txt"
"$python" - >"$out/python.json" 2>"$out/python.err" <<'PY'
import json, torch
d = {"torch": torch.__version__, "cuda": torch.version.cuda, "cuda_available": torch.cuda.is_available(),
     "cmake_prefix_path": torch.utils.cmake_prefix_path,
     "cxx11_abi": bool(torch._C._GLIBCXX_USE_CXX11_ABI)}
if torch.cuda.is_available():
    p = torch.cuda.get_device_properties(0)
    d.update(device=p.name, multiprocessors=p.multi_processor_count, memory_bytes=p.total_memory,
             capability=f"{p.major}.{p.minor}")
print(json.dumps(d))
PY
prefix=$("$python" -c 'import json,sys; print(json.load(open(sys.argv[1]))["cmake_prefix_path"])' "$out/python.json" 2>/dev/null)
[ -n "$prefix" ] || { log "no PyTorch in $python: $(cat "$out/python.err")"; exit 1; }
log "LibTorch from $prefix; GPU: $(head -n 1 "$out/gpu.txt")"

# The King James text for the training benchmark, where the deps folder carries it (gpu-deps.sh).
[ -n "$deps" ] && [ -f "$deps/cache/tensorscope/kjv-bible.txt" ] && export XDG_CACHE_HOME="$deps/cache"

ok=1
# --- configure and build ---------------------------------------------------------------------------
if has_stage configure; then
  cuda_arch=$("$python" -c 'import torch; p=torch.cuda.get_device_properties(0); print(f"{p.major}.{p.minor}")' 2>/dev/null || echo 9.0)
  gen=()
  command -v ninja >/dev/null && gen=(-G Ninja)
  run_stage configure cmake -S "$root" -B "$build" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release \
    -DTENSORSCOPE_BUILD_GUI=OFF -DCMAKE_PREFIX_PATH="$prefix" ${deps:+-DTENSORSCOPE_DEPS_DIR="$deps"} \
    -DTORCH_CUDA_ARCH_LIST="$cuda_arch" -DTENSORSCOPE_PYTHON="$(command -v "$python")" || ok=0
fi
if [ $ok = 1 ] && has_stage build; then
  keep_going=()
  [ -f "$build/build.ninja" ] && keep_going=(-- -k 0)  # every compile error in one log, not the first
  run_stage build cmake --build "$build" -j "$jobs" "${keep_going[@]}" || ok=0
fi
[ -x "$build/app/tensorscope" ] && { "$build/app/tensorscope" --version >"$out/version.txt" 2>&1 || true; }

# --- tests ---------------------------------------------------------------------------------------
# A failed build still runs the tests that were built (and the report names the failure).
built=0
[ -x "$build/app/tensorscope" ] && built=1
if [ $built = 1 ] && has_stage test; then
  # Many test processes at once: two threads each, not one per core each.
  export TENSORSCOPE_THREADS=${TENSORSCOPE_THREADS:-2} OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}
  # The CUDA instances first (named .../cuda, *Cuda*, *_cuda), then everything else. Without a usable
  # device they skip with the reason; the JUnit files give the counts and the reasons.
  run_stage test_cuda ctest --test-dir "$build" --output-on-failure -j "$jobs" --timeout 900 -R '[Cc]uda' \
    --output-junit "$out/ctest-cuda.xml" || ok=0
  if [ "$tests" = all ]; then
    run_stage test ctest --test-dir "$build" --output-on-failure -j "$jobs" --timeout 900 -E '[Cc]uda' \
      --output-junit "$out/ctest.xml" || ok=0
  fi
fi
# --- benchmarks ------------------------------------------------------------------------------------
if [ $built = 1 ] && has_stage bench; then
  q=${bench_quick:+--quick}
  # shellcheck disable=SC2086 # the extra arguments are meant to split into words
  JSON_STDOUT=1 run_stage bench_attention "$build/bench/attention_bench" --device cuda --max-n 8192 $q $attention_args || ok=0
  # The layers as they ran before issue 39 (the ATen formulation), for the ratios of the report.
  # shellcheck disable=SC2086
  TENSORSCOPE_CUDA_ATTENTION=aten JSON_STDOUT=1 run_stage bench_attention_aten "$build/bench/attention_bench" \
    --device cuda --only mhsa,fixed_head,tp,thsa,thsa_linear,multilinear,dimwise $q $attention_args || ok=0
  # Under --deadline the comparison gets what is left of it, less 20 s for the report.
  budget=()
  if [ "$deadline" != 0 ]; then
    left=$((deadline - ($(date +%s) - started) - 20))
    [ $left -gt 0 ] || left=1
    budget=(--max-seconds "$left")
  fi
  # shellcheck disable=SC2086
  JSON_STDOUT=1 run_stage bench_compare "$python" "$root/bench/gpu_train_compare.py" "$build" \
    --python "$(command -v "$python")" $q $compare_args "${budget[@]}" || ok=0
  if [ "$train_args" != none ]; then
    # shellcheck disable=SC2086
    JSON_STDOUT=1 run_stage bench_train sh "$root/bench/run_train_bench.sh" "$build" --device cuda \
      --python "$(command -v "$python")" $q $train_args || ok=0
  fi
fi

# --- the report ------------------------------------------------------------------------------------
"$python" "$root/scripts/gpu_check_report.py" "$out" >"$out/gpu-check.json" || ok=0
log "report: $out/gpu-check.json"
[ $ok = 1 ]
