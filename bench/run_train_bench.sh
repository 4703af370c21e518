#!/bin/sh
# Training throughput, Tensorscope (bench/train_bench) against PyTorch (bench/train_bench_pytorch.py),
# side by side in one run: for each configuration the C++ run and then the PyTorch run, with the
# same model, sizes, data, optimizer and thread count. Prints one JSON document with both
# throughputs and their ratio (target: Tensorscope MHSA >= 1.2x PyTorch).
#
#   bench/run_train_bench.sh [BUILD_DIR] [--steps S] [--heavy-steps S2] [--rounds K] [--warmup W]
#                            [--threads T] [--only A,B] [--quick] [--wait-idle SECONDS]
#                            [--device cpu|cuda] [--python PY]
#
# Timed steps per run: S (default 8) for the MHSA-cost runs (mhsa, core:mhsa, skip_right, single_head),
# S2 (default 3) for the runs that keep one softmax map per channel or per D=1 head (thsa, skip_left,
# trainable_heads_only, heads_only, low_rank: 15-50x the work in PyTorch), so the whole run stays
# near 10 minutes. Ratios between cores on the Tensorscope side come from `train_bench --rounds K`,
# which alternates the runs within one process (see bench/README.md).
# Each run's throughput comes from its median step time. The MHSA-cost configurations are measured
# in K rounds (default 5; C++ then PyTorch in each round); the reported throughputs and ratio are the
# medians over the rounds, since this kind of virtual machine drifts by 10-20% over minutes; each
# round's step times and the ratio of the two sides' fastest rounds (ratio_of_fastest_rounds) are
# recorded too.
#
# --wait-idle: before each pair, wait up to SECONDS for the CPUs to be at least 90% idle over 3
# seconds (on a shared machine, processes competing for the 2 cores slow OpenMP runs 10-30x). The
# idle percentage found is recorded per pair.
#
# --device cuda (issue 16): both sides train on CUDA device 0 (the idle wait still runs; it costs
# 3 seconds per pair and does not matter there). --python PY: the interpreter of the PyTorch side
# (default /usr/bin/python3, the one Debian's python3-torch belongs to; on a GPU machine the one
# with a CUDA PyTorch).
#
# Every train_bench run has a PyTorch side: the export's model.py builds each of them, the designs
# of contract section 8 (mqa .. mta) and mhsa_rotary (model.positions "rotary", section 9) included;
# each row carries both sides' trainable parameter counts (equal when the export is the same model).
#
# BUILD_DIR defaults to ./build (needs `ninja -C BUILD_DIR train_bench`). Measure on an otherwise
# idle machine.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
build=build
case "${1:-}" in
  -*|"") ;;
  *) build=$1; shift ;;
esac
steps=8 heavy_steps=3 rounds=5 warmup=1 threads=0 only="" quick="" wait_idle=0 device=cpu python=/usr/bin/python3
usage="usage: $0 [BUILD_DIR] [--steps S] [--heavy-steps S2] [--rounds K] [--warmup W] [--threads T] [--only A,B] [--quick] [--wait-idle S] [--device cpu|cuda] [--python PY]"
while [ $# -gt 0 ]; do
  [ $# -ge 2 ] || [ "$1" = --quick ] || { echo "$usage" >&2; exit 2; }
  case "$1" in
    --steps) steps=$2; shift 2 ;;
    --heavy-steps) heavy_steps=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --warmup) warmup=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --only) only=$2; shift 2 ;;
    --quick) quick=--quick; shift ;;
    --wait-idle) wait_idle=$2; shift 2 ;;
    --device) device=$2; shift 2 ;;
    --python) python=$2; shift 2 ;;
    *) echo "$usage" >&2; exit 2 ;;
  esac
done
case "$device" in
  cpu|cuda) ;;
  *) echo "$0: --device must be cpu or cuda, not '$device'" >&2; exit 2 ;;
esac

bench="$build/bench/train_bench"
[ -x "$bench" ] || { echo "$bench not found: build it with ninja -C $build train_bench" >&2; exit 1; }
command -v "$python" >/dev/null || { echo "$0: python interpreter '$python' not found (--python PY)" >&2; exit 1; }
work=$(mktemp -d "${TMPDIR:-/tmp}/train_bench.XXXXXX")
trap 'rm -rf "$work"' EXIT

# Percentage of CPU time idle over the next 3 seconds (all CPUs, from /proc/stat).
idle_percent() {
  a=$(awk '/^cpu /{print $2+$3+$4+$5+$6+$7+$8+$9, $5+$6}' /proc/stat)
  sleep 3
  b=$(awk '/^cpu /{print $2+$3+$4+$5+$6+$7+$8+$9, $5+$6}' /proc/stat)
  echo "$a $b" | awk '{t=$3-$1; i=$4-$2; printf "%d", (t > 0 ? 100 * i / t : 100)}'
}

echo "load before the run: $(uptime)" >&2
# The configs, the PyTorch model (the export's model.py) and the corpus, for the Python side.
"$bench" --emit "$work/emit" --device "$device" $quick ${only:+--only "$only"}
names=$("$python" -c 'import json,sys; print(" ".join(r["name"] for r in json.load(open(sys.argv[1]))["runs"]))' \
  "$work/emit/configs.json")
# Both sides on the same OpenBLAS kernels (issue 40): when train_bench restarted itself with a core
# type of its choosing, the PyTorch side gets it too (and train_bench's later runs start with it).
for assignment in $("$python" -c 'import json,sys; print(" ".join("%s=%s" % kv for kv in
    json.load(open(sys.argv[1])).get("blas_environment", {}).items()))' "$work/emit/configs.json"); do
  export "$assignment"
  echo "OpenBLAS kernels for both sides: $assignment" >&2
done

for name in $names; do
  case "$name" in
    thsa|skip_left|trainable_heads_only|heads_only|low_rank) n=$heavy_steps k=1 ;;
    *) n=$steps k=$rounds ;;
  esac
  tag=$(echo "$name" | tr ':' '_')
  r=0
  while [ "$r" -lt "$k" ]; do
    r=$((r + 1))
    idle=$(idle_percent)
    waited=0
    while [ "$idle" -lt 90 ] && [ "$waited" -lt "$wait_idle" ]; do
      sleep 7
      waited=$((waited + 10))
      idle=$(idle_percent)
    done
    echo "$name round $r/$k: CPUs ${idle}% idle before the pair" >&2
    echo "$idle" > "$work/idle_${tag}_$r"
    "$bench" --steps "$n" --warmup "$warmup" --threads "$threads" --only "$name" --device "$device" $quick \
      > "$work/ts_${tag}_$r.json"
    "$python" "$here/train_bench_pytorch.py" "$work/emit" --steps "$n" --warmup "$warmup" \
      --threads "$threads" --only "$name" --device "$device" > "$work/pt_${tag}_$r.json"
  done
done
echo "load after the run: $(uptime)" >&2

"$python" - "$work" $names <<'EOF'
import glob, json, os, statistics, sys
work, names = sys.argv[1], sys.argv[2:]
rows, first_ts, first_pt = [], None, None
for name in names:
    tag = name.replace(":", "_")
    # Exactly this run's rounds: "ts_tpa_*" would also match "ts_tpa_kv_only_*".
    rounds = sorted(p for p in glob.glob(os.path.join(work, "ts_%s_*.json" % tag))
                    if os.path.basename(p)[len("ts_%s_" % tag):-len(".json")].isdigit())
    ts_runs, pt_runs, idle = [], [], []
    for path in rounds:
        r = path[len(os.path.join(work, "ts_%s_" % tag)):-len(".json")]
        ts_doc = json.load(open(path))
        pt_doc = json.load(open(os.path.join(work, "pt_%s_%s.json" % (tag, r))))
        first_ts, first_pt = first_ts or ts_doc, first_pt or pt_doc
        ts_runs.append(ts_doc["runs"][0])
        pt_runs.append(pt_doc["runs"][0])
        idle.append(int(open(os.path.join(work, "idle_%s_%s" % (tag, r))).read()))
    med = lambda runs, key: statistics.median(x[key] for x in runs)  # noqa: E731
    ts0, pt0 = ts_runs[0], pt_runs[0]
    ratios = [a["tokens_per_second"] / b["tokens_per_second"] for a, b in zip(ts_runs, pt_runs)]
    rows.append({
        "name": name, "variant": ts0["variant"], "core": ts0["core"], "positions": ts0["positions"],
        "H": ts0["H"], "D": ts0["D"], "R": ts0["R"],
        "trainable_parameters": ts0["trainable_parameters"], "vocab": ts0["vocab"],
        "pytorch_trainable_parameters": pt0["trainable_parameters"], "rounds": len(ts_runs),
        "steps_timed": ts0["steps_timed"],
        "tensorscope_tokens_per_second": round(med(ts_runs, "tokens_per_second"), 1),
        "pytorch_tokens_per_second": round(med(pt_runs, "tokens_per_second"), 1),
        "ratio_tensorscope_over_pytorch": round(statistics.median(ratios), 3),
        "ratio_per_round": [round(x, 3) for x in ratios],
        "ratio_of_means": round(statistics.median(a["mean_tokens_per_second"] / b["mean_tokens_per_second"]
                                                  for a, b in zip(ts_runs, pt_runs)), 3),
        "tensorscope_ms_per_step": round(med(ts_runs, "ms_per_step"), 1),
        "pytorch_ms_per_step": round(med(pt_runs, "ms_per_step"), 1),
        # Each round's step time on both sides, and the ratio of each side's fastest round: a side
        # slowed in some rounds by the host (this VM drifts by 30% within minutes) moves the medians
        # of the per-round ratios far more than its fastest round.
        "tensorscope_ms_per_round": [round(x["ms_per_step"], 1) for x in ts_runs],
        "pytorch_ms_per_round": [round(x["ms_per_step"], 1) for x in pt_runs],
        "ratio_of_fastest_rounds": round(min(x["ms_per_step"] for x in pt_runs) /
                                         min(x["ms_per_step"] for x in ts_runs), 3),
        "tensorscope_peak_tensor_mb": round(ts0["peak_tensor_mb"], 1),
        "tensorscope_peak_rss_mb": ts0["peak_rss_mb"] and round(ts0["peak_rss_mb"], 1),
        "pytorch_peak_rss_mb": pt0["peak_rss_mb"] and round(pt0["peak_rss_mb"], 1),
        # On CUDA both sides report the caching allocator's peak (PyTorch has no CPU counter).
        **({"pytorch_peak_tensor_mb": round(pt0["peak_tensor_mb"], 1)} if "peak_tensor_mb" in pt0 else {}),
        "tensorscope_final_loss": round(ts0["final_loss"], 4), "pytorch_final_loss": round(pt0["final_loss"], 4),
        "gemm_gflops": round(med(ts_runs, "gemm_gflops"), 1),
        "useful_gflop_per_step": ts0.get("useful_gflop_per_step") and round(ts0["useful_gflop_per_step"], 2),
        "tensorscope_achieved_gflops": ts0.get("achieved_gflops") and round(med(ts_runs, "achieved_gflops"), 1),
        "tensorscope_fraction_of_gemm": ts0.get("fraction_of_gemm") and round(med(ts_runs, "fraction_of_gemm"), 3),
        "cpu_idle_before": idle})
doc = {"benchmark": "training_side_by_side",
       "machine": {"tensorscope": first_ts["machine"], "pytorch": first_pt["machine"], "cpus": os.cpu_count(),
                   "openblas_coretype": os.environ.get("OPENBLAS_CORETYPE")},
       "config": first_ts["config"],
       "runs": rows}
mhsa = next((r for r in rows if r["name"] == "mhsa"), None)
if mhsa:
    # Each core's step against MHSA's, Tensorscope side, in this run (issue targets: skip_left <= 3x,
    # skip_right and single_head <= 1.3x; trainable_heads_only within 1.2x of dense thsa).
    doc["tensorscope_step_over_mhsa"] = {r["name"]: round(r["tensorscope_ms_per_step"] / mhsa["tensorscope_ms_per_step"], 3)
                                         for r in rows}
    dense = next((r for r in rows if r["name"] == "thsa"), None)
    tho = next((r for r in rows if r["name"] == "trainable_heads_only"), None)
    if dense and tho:
        doc["trainable_heads_only_over_thsa"] = round(tho["tensorscope_ms_per_step"] / dense["tensorscope_ms_per_step"], 3)
    doc["mhsa_ratio"] = mhsa["ratio_tensorscope_over_pytorch"]
    doc["mhsa_target_1_2x_met"] = mhsa["ratio_tensorscope_over_pytorch"] >= 1.2
print(json.dumps(doc, indent=2))
EOF
