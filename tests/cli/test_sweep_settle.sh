#!/usr/bin/env bash
# `tensorscope sweep run --until-settled` (issue 37; docs/sweeps.md, Seeds until settled): a tiny
# sweep of two identical designs (paired seeds train them bit for bit alike, so their verdict can
# never settle) runs round by round to its seed cap; it is stopped with SIGINT part-way through a
# round's trial and resumed: the finished trials are kept, the interrupted one continues from its
# checkpoint, the rounds go on to the cap, and the report says how many seeds each verdict took.
# usage: test_sweep_settle.sh TENSORSCOPE_BINARY
set -u
BIN=$1
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
# shellcheck source=check_lib.sh
source "$(dirname "$0")/check_lib.sh"

"$BIN" spec preset mhsa > "$TMP/spec.json" || { echo "FAIL spec preset"; exit 1; }
/usr/bin/python3 "$(dirname "$0")/tiny_copy_config.py" "$TMP/spec.json" 300 100 10 150 > "$TMP/base.json" || { echo "FAIL base config"; exit 1; }
/usr/bin/python3 - "$TMP" <<'PY'
import json, sys
tmp = sys.argv[1]
same = {"model.attention.variant": "mhsa"}
sweep = {"format": "tensorscope.sweep", "version": 1, "name": "settle check", "base_file": "base.json",
         "axes": [{"name": "design", "values": [{"label": "mhsa", "set": same}, {"label": "twin", "set": same}]}],
         "seeds": [1, 2], "metric": "loss"}
json.dump(sweep, open(f"{tmp}/sweep.json", "w"), indent=2)
PY
check plan 0 "4 trials" -- "$BIN" sweep plan "$TMP/sweep.json" --out "$TMP/sw"
check alpha-needs-until-settled 2 "--alpha and --max-seeds go with --until-settled" -- "$BIN" sweep run "$TMP/sw" --alpha 0.01
check bad-alpha 2 "--alpha takes a significance level in \(0, 0.5\], e.g. 0.01; got 'x'" -- \
  "$BIN" sweep run "$TMP/sw" --until-settled --alpha x
check cap-below-seeds 2 "--max-seeds 2 is below|--max-seeds" -- "$BIN" sweep run "$TMP/sw" --until-settled --max-seeds 1

# Round by round to 4 seeds; stop once a trial of round 1 is past its first checkpoint.
"$BIN" --threads 1 sweep run "$TMP/sw" --until-settled --alpha 0.05 --max-seeds 4 > "$TMP/run1.log" 2>&1 &
pid=$!
target=""
for _ in $(seq 1 1200); do
  for m in "$TMP"/sw/trials/00[4-5]-*-s3/run/metrics.jsonl; do
    [ -f "$m" ] || continue
    step=$(grep '"kind":"train"' "$m" | sed -n 's/.*"step":\([0-9]*\).*/\1/p' | tail -1)
    if [ -n "$step" ] && [ "$step" -ge 20 ]; then target=$(basename "$(dirname "$(dirname "$m")")"); break 2; fi
  done
  sleep 0.05
done
kill -INT $pid
wait $pid
rc=$?
if [ "$rc" -eq 130 ] && [ -n "$target" ]; then ok "interrupted-in-round-1-exits-130"; else bad "interrupted run: exit $rc, trial '$target'" "$(cat "$TMP/run1.log")"; fi
check round-1-said 0 '"event": "settle_round".*"round": 1, "seed": 3' -- cat "$TMP/run1.log"
check settle-rule-recorded 0 '"max_seeds": 4' -- cat "$TMP/sw/settle.json"
first=$(cat "$TMP/sw/trials/000-mhsa-s1/result.json")
before=$(grep -c '"kind":"train"' "$TMP/sw/trials/$target/run/metrics.jsonl")
check status-shows-round-1 0 "$target +interrupted" -- "$BIN" sweep status "$TMP/sw"
check another-rule-refused 1 "error bound untrue" -- "$BIN" sweep run "$TMP/sw" --until-settled --alpha 0.01
check resume 0 '"event": "settled".*"at_cap": \["twin"\]' -- "$BIN" --threads 1 sweep run "$TMP/sw" --until-settled
steps=$(grep '"kind":"train"' "$TMP/sw/trials/$target/run/metrics.jsonl" | sed -n 's/.*"step":\([0-9]*\).*/\1/p')
if [ "$(sort -n <<<"$steps" | uniq | wc -l)" -eq 300 ] && [ "$(wc -l <<<"$steps")" -eq 300 ] && [ "$before" -gt 0 ]; then
  ok "interrupted-trial-resumed-not-restarted"
else
  bad "trial $target: $(wc -l <<<"$steps") records after resuming ($before before)"
fi
if [ "$(cat "$TMP/sw/trials/000-mhsa-s1/result.json")" = "$first" ]; then ok "finished-trial-kept"; else bad "trial 000 changed"; fi
check eight-trials 0 "^8 finished$" -- "$BIN" sweep status "$TMP/sw"
check round-2-trial 0 "007-twin-s4 +finished" -- "$BIN" sweep status "$TMP/sw"
check again-nothing-to-do 0 '"event": "settled"' -- "$BIN" sweep run "$TMP/sw" --until-settled
check report-md 0 "\| twin \| 4 \| no difference established at n = 4 \| open at the cap \(n = 4\) \|" -- "$BIN" sweep report "$TMP/sw"
check report-md-rule 0 "looked at, at most, 3 times; each look decides at alpha / 3 = 0.0166667" -- "$BIN" sweep report "$TMP/sw"
check report-csv 0 "^twin,.*,4,cap$" -- "$BIN" sweep report "$TMP/sw" --format csv
check report-json 0 '"state": "cap"' -- "$BIN" sweep report "$TMP/sw" --format json
check report-latex 0 'twin & 4 & open at the cap \(n = 4\)' -- "$BIN" sweep report "$TMP/sw" --format latex

# Budget matching in a sweep file (issue 37): MQA (one key/value group) at MHSA's KV cache solves D = 16
# (2 D = 2 H D with H = 2, D = 8); the plan lists the size, the cost and the residual.
/usr/bin/python3 - "$TMP" <<'PY'
import json, sys
tmp = sys.argv[1]
sweep = json.load(open(f"{tmp}/sweep.json"))
sweep["name"] = "mqa at equal kv"
sweep["axes"][0]["values"][1] = {"label": "mqa", "set": {"model.attention.slots": {"kv_groups": 1}}}
sweep["match"] = {"axis": "design", "reference": "mhsa", "on": "kv", "size": "D", "tolerance": 0.01}
json.dump(sweep, open(f"{tmp}/kv.json", "w"), indent=2)
sweep["match"]["on"] = "memory"
json.dump(sweep, open(f"{tmp}/kv-bad.json", "w"), indent=2)
PY
check plan-kv-match 0 "002-mqa-s1 +[0-9]+ +D=16 kv \+0\.00% " -- "$BIN" sweep plan "$TMP/kv.json" --out "$TMP/kv"
check plan-kv-recorded 0 '"on": "kv"' -- cat "$TMP/kv/plan.json"
check plan-kv-bad 1 "match.on: must be params, kv or flops; got 'memory'" -- "$BIN" sweep plan "$TMP/kv-bad.json" --out "$TMP/kv-bad"
finish
