#!/usr/bin/env bash
# Issue 37: seeds until settled on a real single-node Slurm (slurm_fixture.sh). Each
# `sweep submit --slurm --until-settled` moves the sweep on by one step: while trials are queued or
# running it submits only what is neither queued nor ended (resumable: run it again any time); once every trial has ended the
# report decides the next round and its seeds go to Slurm as a new job array; when no verdict is
# open (or the cap is reached) it says so. Two identical designs never settle, so the sweep runs to
# its cap of 3 seeds, and the report is the one the same sweep gives run locally until settled.
# Needs root and Debian's slurmctld, slurmd and munge (exit 77, skipped, otherwise).
# usage: test_sweep_settle_slurm.sh TENSORSCOPE_BINARY
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
/usr/bin/python3 "$HERE/../cli/tiny_copy_config.py" "$TMP/spec.json" 40 20 20 40 > "$TMP/base.json" || { echo "FAIL base config"; exit 1; }
/usr/bin/python3 - "$TMP" <<'PY'
import json, sys
tmp = sys.argv[1]
base = json.load(open(f"{tmp}/base.json"))
same = {"model.attention.variant": "mhsa"}
sweep = {"format": "tensorscope.sweep", "version": 1, "name": "slurm settle", "base": base,
         "axes": [{"name": "design", "values": [{"label": "mhsa", "set": same}, {"label": "twin", "set": same}]}],
         "seeds": [1, 2], "metric": "loss"}
json.dump(sweep, open(f"{tmp}/sweep.json", "w"), indent=2)
PY
"$BIN" sweep plan "$TMP/sweep.json" --out "$TMP/local" >/dev/null && "$BIN" sweep plan "$TMP/sweep.json" --out "$TMP/cluster" >/dev/null \
  || { echo "FAIL plan"; exit 1; }
check local-until-settled 0 '"event": "settled"' -- "$BIN" --threads 1 sweep run "$TMP/local" --until-settled --max-seeds 3

wait_ended() {  # N: until N trials have finished
  for _ in $(seq 1 600); do
    "$BIN" sweep status "$TMP/cluster" | grep -q "^$1 finished$" && return 0
    sleep 0.5
  done
  return 1
}
check submit-round-0 0 "submitted Slurm job [0-9]+: 4 trials \(array 0-3\)" -- \
  "$BIN" sweep submit "$TMP/cluster" --slurm --until-settled --max-seeds 3 --cpus-per-task 1
wait_ended 4 && ok "round-0-finished" || bad "round 0 did not finish" "$("$BIN" sweep status "$TMP/cluster")"
check submit-round-1 0 "round 1: seed 3 for 1 open verdict \(2 trials\)" -- "$BIN" sweep submit "$TMP/cluster" --slurm --until-settled
check round-1-array 0 "4-5" -- cat "$TMP/cluster/slurm/submit-2.sbatch"
wait_ended 6 && ok "round-1-finished" || bad "round 1 did not finish" "$("$BIN" sweep status "$TMP/cluster")"
check trained-by-slurm 0 '"where": "slurm job [0-9]+_5"' -- cat "$TMP/cluster/trials/005-twin-s3/result.json"
check settled 0 "settled: every verdict is settled or at the cap of 3 seeds" -- "$BIN" sweep submit "$TMP/cluster" --slurm --until-settled
check report-cap 0 "open at the cap \(n = 3\)" -- "$BIN" sweep report "$TMP/cluster"
"$BIN" sweep report "$TMP/local" --format json > "$TMP/local.json"
"$BIN" sweep report "$TMP/cluster" --format json > "$TMP/cluster.json"
check reports-equal 0 "^equal 2 designs, 6 trials$" -- /usr/bin/python3 - "$TMP/local.json" "$TMP/cluster.json" <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
keys = ("design", "trials", "finished", "mean", "std", "settle", "comparison")
da = [{k: d.get(k) for k in keys} for d in a["designs"]]
db = [{k: d.get(k) for k in keys} for d in b["designs"]]
ta = [(t["name"], t["result"]["final_eval"]) for t in a["trials"]]
tb = [(t["name"], t["result"]["final_eval"]) for t in b["trials"]]
same = da == db and ta == tb and a["until_settled"] == b["until_settled"]
print(f"equal {len(da)} designs, {len(ta)} trials" if same else f"differ:\n{da}\n{db}\n{ta}\n{tb}")
PY
finish
