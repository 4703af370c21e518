#!/usr/bin/env bash
# Issue 14: a sweep on a real single-node Slurm (slurm_fixture.sh): submitted as a job array, it runs
# and reports the same numbers as the same plan run locally; a trial stopped by Slurm (SIGTERM, as a
# time limit or preemption sends it) keeps its checkpoint, and a second submit resubmits only it,
# which resumes rather than restarts. Needs root and Debian's slurmctld, slurmd and munge (exit 77,
# skipped, otherwise).
# usage: test_sweep_slurm.sh TENSORSCOPE_BINARY
set -u
BIN=$(realpath "$1")
if [ "$(id -u)" -ne 0 ] || ! command -v slurmctld >/dev/null || ! command -v munged >/dev/null; then
  echo "SKIP: needs root and slurmctld, slurmd and munge (scripts/setup.sh installs them)"
  exit 77
fi
HERE=$(cd "$(dirname "$0")" && pwd)
TMP=$(mktemp -d)
# shellcheck source=slurm_fixture.sh
source "$HERE/slurm_fixture.sh"
# shellcheck source=../cli/check_lib.sh
source "$HERE/../cli/check_lib.sh"
trap 'slurm_stop "$TMP/slurm"; rm -rf "$TMP"' EXIT
slurm_start "$TMP/slurm" || { echo "FAIL the Slurm fixture did not start"; cat "$TMP"/slurm/log/*.log 2>/dev/null | tail -20; exit 1; }
ok "slurm-fixture-idle"

"$BIN" spec preset mhsa > "$TMP/spec.json" || { echo "FAIL spec preset"; exit 1; }
/usr/bin/python3 "$(dirname "$0")/../cli/tiny_copy_config.py" "$TMP/spec.json" 60 20 20 60 > "$TMP/base.json" || { echo "FAIL base config"; exit 1; }
/usr/bin/python3 - "$TMP" <<'PY'
import json, sys
tmp = sys.argv[1]
base = json.load(open(f"{tmp}/base.json"))
sweep = {"format": "tensorscope.sweep", "version": 1, "name": "slurm check", "base": base,
         "axes": [{"name": "design", "values": [
             {"label": "mhsa", "set": {"model.attention.variant": "mhsa"}},
             {"label": "skip_right", "set": {"model.attention.variant": "thsa",
                                             "model.attention.core": {"preset": "skip_right"}}}]}],
         "seeds": [1, 2], "metric": "accuracy"}
json.dump(sweep, open(f"{tmp}/sweep.json", "w"), indent=2)
long = dict(sweep, name="slurm preemption", seeds=[1], budget={"steps": 4000})
long["axes"] = [{"name": "design", "values": sweep["axes"][0]["values"][:1]}]
json.dump(long, open(f"{tmp}/long.json", "w"), indent=2)
PY

# The same plan, locally and on Slurm.
"$BIN" sweep plan "$TMP/sweep.json" --out "$TMP/local" >/dev/null && "$BIN" sweep plan "$TMP/sweep.json" --out "$TMP/cluster" >/dev/null \
  || { echo "FAIL plan"; exit 1; }
check local-run 0 '"finished": 4' -- "$BIN" --threads 1 sweep run "$TMP/local" --jobs 2
check submit 0 "submitted Slurm job [0-9]+: 4 trials \(array 0-3%1\)" -- \
  "$BIN" sweep submit "$TMP/cluster" --slurm --cpus-per-task 1 --array-limit 1
# One task at a time: the last trials wait in Slurm's queue, and status says so.
check status-queued 0 "003-skip_right-s2 +queued +0/60 +slurm PENDING \(job [0-9]+_3\)" -- "$BIN" sweep status "$TMP/cluster"
check run-leaves-slurm-trials 4 "is in Slurm's queue" -- "$BIN" --threads 1 sweep run "$TMP/cluster"
check script-runs-run-trial 0 "sweep run-trial '$TMP/cluster' \"\\\$SLURM_ARRAY_TASK_ID\"" -- cat "$TMP/cluster/slurm/submit-1.sbatch"
for _ in $(seq 1 600); do
  "$BIN" sweep status "$TMP/cluster" | grep -q '^4 finished$' && break
  sleep 0.5
done
check cluster-finished 0 "^4 finished$" -- "$BIN" sweep status "$TMP/cluster"
check trained-by-slurm 0 '"where": "slurm job [0-9]+_3"' -- cat "$TMP/cluster/trials/003-skip_right-s2/result.json"
check nothing-left-to-submit 0 "nothing to submit: 4 trials have ended" -- "$BIN" sweep submit "$TMP/cluster" --slurm
"$BIN" sweep report "$TMP/local" --format json > "$TMP/local.json"
"$BIN" sweep report "$TMP/cluster" --format json > "$TMP/cluster.json"
check reports-equal 0 "^equal 2 designs$" -- /usr/bin/python3 - "$TMP/local.json" "$TMP/cluster.json" <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
keys = ("design", "attention_parameters", "trials", "finished", "mean", "std", "best_mean", "best_step")
da = [{k: d[k] for k in keys} for d in a["designs"]]
db = [{k: d[k] for k in keys} for d in b["designs"]]
fa = [t["result"]["final_eval"] for t in a["trials"]]
fb = [t["result"]["final_eval"] for t in b["trials"]]
print(f"equal {len(da)} designs" if da == db and fa == fb else f"differ:\n{da}\n{db}\n{fa}\n{fb}")
PY

# Preemption: Slurm's SIGTERM stops a running trial at a checkpoint; a second submit resumes it.
"$BIN" sweep plan "$TMP/long.json" --out "$TMP/long" >/dev/null || { echo "FAIL plan long"; exit 1; }
check submit-long 0 "submitted Slurm job [0-9]+: 1 trials \(array 0\)" -- "$BIN" sweep submit "$TMP/long" --slurm
job=$(/usr/bin/python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['jobs'][0]['job_id'])" "$TMP/long/slurm.json")
metrics="$TMP/long/trials/000-mhsa-s1/run/metrics.jsonl"
for _ in $(seq 1 600); do
  step=$(grep '"kind":"train"' "$metrics" 2>/dev/null | sed -n 's/.*"step":\([0-9]*\).*/\1/p' | tail -1)
  [ -n "$step" ] && [ "$step" -ge 100 ] && break
  sleep 0.1
done
check status-running 0 "000-mhsa-s1 +running" -- "$BIN" sweep status "$TMP/long"
scancel --batch --signal=TERM "${job}_0"
for _ in $(seq 1 300); do
  [ -z "$(squeue --noheader --jobs="$job" 2>/dev/null)" ] && break
  sleep 0.2
done
check preempted-is-interrupted 0 "000-mhsa-s1 +interrupted" -- "$BIN" sweep status "$TMP/long"
check preempted-said-so 0 "interrupted; it resumes from its checkpoint" -- cat "$TMP/long/slurm/${job}_0.out"
check resubmit 0 "submitted Slurm job [0-9]+: 1 trials \(array 0\)" -- "$BIN" sweep submit "$TMP/long" --slurm
for _ in $(seq 1 1200); do
  "$BIN" sweep status "$TMP/long" | grep -q '^1 finished$' && break
  sleep 0.5
done
check resumed-finished 0 "^1 finished$" -- "$BIN" sweep status "$TMP/long"
steps=$(grep '"kind":"train"' "$metrics" | sed -n 's/.*"step":\([0-9]*\).*/\1/p')
if [ "$(sort -n <<<"$steps" | uniq | wc -l)" -eq 4000 ] && [ "$(wc -l <<<"$steps")" -eq 4000 ]; then
  ok "resumed-not-restarted"
else
  bad "the preempted trial has $(wc -l <<<"$steps") training records for 4000 steps"
fi
finish
