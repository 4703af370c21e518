#!/usr/bin/env bash
# `tensorscope sweep` as a user drives it (issue 14): plan a small design-space sweep, run it two
# trials at a time, stop it with SIGINT in the middle of a trial, resume it (finished trials kept,
# the interrupted one continues from its checkpoint, not from step 0), then status and every report
# format, the figure, and precise errors for bad sweep files and directories.
# usage: test_sweep_cli.sh TENSORSCOPE_BINARY [gui|headless]
set -u
BIN=$1
MODE=${2:-gui}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
# shellcheck source=check_lib.sh
source "$(dirname "$0")/check_lib.sh"

"$BIN" spec preset mhsa > "$TMP/spec.json" || { echo "FAIL spec preset"; exit 1; }
/usr/bin/python3 "$(dirname "$0")/tiny_copy_config.py" "$TMP/spec.json" 40 10 5 20 > "$TMP/base.json" || { echo "FAIL base config"; exit 1; }
/usr/bin/python3 - "$TMP" <<'PY'
import json, sys
tmp = sys.argv[1]
sweep = {"format": "tensorscope.sweep", "version": 1, "name": "copy: MHSA vs dense THSA",
         "base_file": "base.json",
         "axes": [{"name": "design", "values": [
             {"label": "mhsa", "set": {"model.attention.variant": "mhsa"}},
             {"label": "thsa", "set": {"model.attention.variant": "thsa", "model.attention.core": {"preset": "thsa"}}}]}],
         "seeds": [1, 2],
         "budget": {"steps": 160},
         "match_parameters": {"axis": "design", "reference": "mhsa", "solve": "head_size", "tolerance": 0.25},
         "metric": "accuracy"}
json.dump(sweep, open(f"{tmp}/sweep.json", "w"), indent=2)
bad = dict(sweep, metric="perplexity", seeds=[1, 1])
json.dump(bad, open(f"{tmp}/bad.json", "w"), indent=2)
PY

check plan 0 "sweep 'copy: MHSA vs dense THSA': 4 trials" -- "$BIN" sweep plan "$TMP/sweep.json" --out "$TMP/sw"
check plan-again-same-lists-matched-sizes 0 "003-thsa-s2 +[0-9]+ +D=[0-9]+ +160 " -- "$BIN" sweep plan "$TMP/sweep.json" --out "$TMP/sw"
check plan-bad-file 1 "metric: must be loss, accuracy or exact_match; got 'perplexity'" -- \
  "$BIN" sweep plan "$TMP/bad.json" --out "$TMP/bad"
check plan-bad-file-names-seed 1 "seeds\[1\]: repeats seed 1" -- "$BIN" sweep plan "$TMP/bad.json" --out "$TMP/bad"
check status-pending 0 "000-mhsa-s1 +pending +0/160" -- "$BIN" sweep status "$TMP/sw"
check run-no-plan 1 "holds no sweep plan \(plan.json\)" -- "$BIN" sweep run "$TMP"
check run-trial-bad-index 2 "trial index '9' is not in \[0, 3\]" -- "$BIN" sweep run-trial "$TMP/sw" 9
check sub-command-needed 2 "sweep needs a sub-command" -- "$BIN" sweep

# Run two at a time; stop with SIGINT once a trial is part-way (past its first checkpoint).
"$BIN" --threads 1 sweep run "$TMP/sw" --jobs 2 > "$TMP/run1.log" 2>&1 &
pid=$!
for _ in $(seq 1 600); do
  step=$(grep -h '"kind":"train"' "$TMP"/sw/trials/*/run/metrics.jsonl 2>/dev/null | sed -n 's/.*"step":\([0-9]*\).*/\1/p' | sort -n | tail -1)
  [ -n "$step" ] && [ "$step" -ge 20 ] && break
  sleep 0.1
done
kill -INT $pid
wait $pid
rc=$?
if [ "$rc" -eq 130 ] && grep -q '"event": "end"' "$TMP/run1.log"; then ok "interrupted-run-exits-130"; else bad "interrupted run: exit $rc" "$(cat "$TMP/run1.log")"; fi
check status-after-interrupt 0 "interrupted" -- "$BIN" sweep status "$TMP/sw"
# The interrupted trial that was part-way: with two running, the other may have been stopped before
# its first step (then it rightly starts again from step 0), so the one with the most records is checked.
interrupted="" before=0
for t in $("$BIN" sweep status "$TMP/sw" | awk '$2 == "interrupted" {print $1}'); do
  n=$(grep -c '"kind":"train"' "$TMP/sw/trials/$t/run/metrics.jsonl" 2>/dev/null) || n=0
  if [ -z "$interrupted" ] || [ "$n" -gt "$before" ]; then interrupted=$t before=$n; fi
done
check resume 0 '"event": "end", "finished": [1-4], "failed": 0, "interrupted": 0' -- "$BIN" --threads 1 sweep run "$TMP/sw" --jobs 2
# The interrupted trial resumed: one training record per step 1..160 (none repeated, none lost).
steps=$(grep '"kind":"train"' "$TMP/sw/trials/$interrupted/run/metrics.jsonl" | sed -n 's/.*"step":\([0-9]*\).*/\1/p')
if [ "$(sort -n <<<"$steps" | uniq | wc -l)" -eq 160 ] && [ "$(wc -l <<<"$steps")" -eq 160 ] && [ "$before" -gt 0 ]; then
  ok "interrupted-trial-resumed-not-restarted"
else
  bad "interrupted trial $interrupted: $(wc -l <<<"$steps") records after resuming ($before before)"
fi
check resumed-from-checkpoint 0 '"event":"start","first_step":[1-9]' -- cat "$TMP/sw/trials/$interrupted/log.txt"
check run-again-nothing-to-do 0 "nothing to run \(4 of 4 trials have ended\)" -- "$BIN" sweep run "$TMP/sw"
check status-finished 0 "4 finished" -- "$BIN" sweep status "$TMP/sw"
check report-md 0 '\| thsa \| [0-9]+ \| 2/2 \| 0\.[0-9]{3} ± 0\.[0-9]{3} \|' -- "$BIN" sweep report "$TMP/sw"
check report-csv 0 '^mhsa,[0-9]+,2,2,' -- "$BIN" sweep report "$TMP/sw" --format csv
check report-latex 0 'mhsa & [0-9]+ & 2 & \$0\.[0-9]{3} \\pm 0\.[0-9]{3}\$' -- "$BIN" sweep report "$TMP/sw" --format latex
check report-json 0 '"format": "tensorscope.sweep_report"' -- "$BIN" sweep report "$TMP/sw" --format json
check report-bad-format 1 "the formats are md, csv, latex and json" -- "$BIN" sweep report "$TMP/sw" --format xlsx
check report-svg 0 "wrote .*fig.svg" -- "$BIN" sweep report "$TMP/sw" --figure "$TMP/fig.svg" --x design
check figure-is-svg 0 "</svg>" -- cat "$TMP/fig.svg"
check figure-bad-x 1 "this sweep has: parameters, design" -- "$BIN" sweep report "$TMP/sw" --figure "$TMP/f.svg" --x colour
if [ "$MODE" = gui ]; then
  check report-png 0 "wrote .*fig.png" -- "$BIN" sweep report "$TMP/sw" --figure "$TMP/fig.png"
  check figure-is-png 0 "^png 2400x1160$" -- /usr/bin/python3 -c "import struct,sys; d=open(sys.argv[1],'rb').read(24); print('png %dx%d' % struct.unpack('>II', d[16:24]) if d[:8] == b'\\x89PNG\\r\\n\\x1a\\n' else 'not a png')" "$TMP/fig.png"
  check report-pdf 0 "wrote .*fig.pdf" -- "$BIN" sweep report "$TMP/sw" --figure "$TMP/fig.pdf"
else
  check report-png-headless 2 "headless build writes figures as SVG" -- "$BIN" sweep report "$TMP/sw" --figure "$TMP/fig.png"
fi
# A wall-clock budget: the trial stops after its seconds, is evaluated where it stopped, and says so.
/usr/bin/python3 - "$TMP" <<'PY'
import json, sys
tmp = sys.argv[1]
s = json.load(open(f"{tmp}/sweep.json"))
s.update(name="timed", seeds=[1], budget={"steps": 1000000, "seconds": 2})
s["axes"][0]["values"] = s["axes"][0]["values"][:1]
s.pop("match_parameters")
json.dump(s, open(f"{tmp}/timed.json", "w"))
PY
"$BIN" sweep plan "$TMP/timed.json" --out "$TMP/timed" >/dev/null
check timed-run 0 '"finished": 1' -- "$BIN" --threads 1 sweep run "$TMP/timed"
check timed-result-says-budget 0 '"message": "stopped by the budget of 2[.0-9]* s at step [0-9]+"' -- cat "$TMP/timed/trials/000-mhsa-s1/result.json"
check timed-result-evaluated 0 '"final_metric": (0\.[0-9]+|1\.0)' -- cat "$TMP/timed/trials/000-mhsa-s1/result.json"
check timed-wall-within-budget 0 '^ok$' -- /usr/bin/python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print('ok' if 1.5 < r['wall_seconds'] < 4 and r['steps'] < 1000000 else r)" "$TMP/timed/trials/000-mhsa-s1/result.json"

# A plan into a directory holding another plan is refused.
sed 's/"seeds": \[/"seeds": [3, /' "$TMP/sweep.json" > "$TMP/sweep3.json"
check plan-other-into-same-dir 1 "holds another plan" -- "$BIN" sweep plan "$TMP/sweep3.json" --out "$TMP/sw"

finish
