#!/usr/bin/env bash
# Sweeps always finish and lose nothing (issue 33, docs/sweeps.md "When things go wrong"): a trial
# killed before its first checkpoint starts again in place; a killed `sweep run` takes its trials
# with it (they checkpoint); trials trained elsewhere are never counted as done nor make `sweep run`
# exit 0; a damaged result.json is named and redone while the rest is reported; figures on a full
# disk keep the previous file; control characters never reach a Slurm script or the terminal.
# usage: test_sweep_reliability.sh TENSORSCOPE_BINARY [gui|headless]
set -u
BIN=$1
MODE=${2:-gui}
TMP=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
  rm -rf "$TMP"
}
trap cleanup EXIT
# shellcheck source=check_lib.sh
source "$(dirname "$0")/check_lib.sh"

"$BIN" spec preset mhsa > "$TMP/spec.json" || { echo "FAIL spec preset"; exit 1; }
/usr/bin/python3 "$(dirname "$0")/tiny_copy_config.py" "$TMP/spec.json" 20 5 5 20 > "$TMP/base.json" || { echo "FAIL base config"; exit 1; }
/usr/bin/python3 - "$TMP" <<'PY'
import json, sys
tmp = sys.argv[1]
sweep = {"format": "tensorscope.sweep", "version": 1, "name": "reliability", "base_file": "base.json",
         "axes": [{"path": "train.lr", "values": [0.002]}], "seeds": [1, 2], "budget": {"steps": 20},
         "metric": "accuracy"}
json.dump(sweep, open(f"{tmp}/sweep.json", "w"))
json.dump(dict(sweep, name="long", seeds=[1], budget={"steps": 100000}), open(f"{tmp}/long.json", "w"))
PY

# ---- A trial killed after train() wrote config.json but before its first checkpoint commit ----
"$BIN" sweep plan "$TMP/sweep.json" --out "$TMP/early" >/dev/null || { echo "FAIL plan"; exit 1; }
T0=$TMP/early/trials/000-0.002-s1
found=
for k in $(seq 1 80); do
  rm -rf "$T0/run"
  TENSORSCOPE_KILL_AT_FILE_OP=$k "$BIN" --threads 1 sweep run-trial "$TMP/early" 0 >/dev/null 2>&1
  if [ -f "$T0/run/config.json" ] && [ ! -e "$T0/run/checkpoint.json" ]; then found=$k; break; fi
done
if [ -n "$found" ]; then ok "killed-before-first-commit (file operation $found)"; else bad "no kill left config.json without a checkpoint"; fi
check killed-before-first-commit-trains-again 0 '"event": "end", "finished": 2, "failed": 0' -- \
  "$BIN" --threads 1 sweep run "$TMP/early"
check killed-before-first-commit-restarted-in-place 0 '"event": "restart"' -- cat "$T0/log.txt"
check killed-before-first-commit-both-seeds 0 '\| 2/2 \| 0\.[0-9]{3} ± 0\.[0-9]{3} \|' -- "$BIN" sweep report "$TMP/early"

# ---- Figures: a full disk (RLIMIT_FSIZE) makes the command fail and keeps the previous figure ----
for ext in svg png pdf; do
  [ "$ext" != svg ] && [ "$MODE" != gui ] && continue
  check "figure-$ext" 0 "wrote .*fig.$ext" -- "$BIN" sweep report "$TMP/early" --figure "$TMP/fig.$ext"
  before=$(md5sum < "$TMP/fig.$ext")
  check "figure-$ext-full-disk-fails" 1 "fig\.$ext" -- bash -c 'trap "" XFSZ; ulimit -f 2; exec "$0" sweep report "$1" --figure "$2"' \
    "$BIN" "$TMP/early" "$TMP/fig.$ext"
  if [ "$(md5sum < "$TMP/fig.$ext")" = "$before" ]; then ok "figure-$ext-kept"; else bad "figure-$ext: the previous figure changed"; fi
done

# ---- A damaged result.json: the rest is reported, the trial is named with the remedy and redone ----
R1=$TMP/early/trials/001-0.002-s2/result.json
cp "$R1" "$TMP/result-good.json"
head -c 40 "$TMP/result-good.json" > "$TMP/result-damaged.json"
cp "$TMP/result-damaged.json" "$R1"
check damaged-status-reads-on 0 "trial 001-0.002-s2: result.json is damaged .*sweep run .*--retry-failed" -- "$BIN" sweep status "$TMP/early"
check damaged-report-has-the-rest 0 '\| 000-0.002-s1 \| finished \| 20 \|' -- "$BIN" sweep report "$TMP/early"
check damaged-report-names-it 0 "- 001-0.002-s2: result.json is damaged" -- "$BIN" sweep report "$TMP/early"
check damaged-csv-says-it-on-stderr 0 "tensorscope: trial 001-0.002-s2: result.json is damaged" -- "$BIN" sweep report "$TMP/early" --format csv
check damaged-run-says-how 0 "001-0.002-s2: result.json is damaged.*--retry-failed" -- "$BIN" sweep run "$TMP/early"
check damaged-redone 0 '"event": "end", "finished": 1, "failed": 0' -- "$BIN" --threads 1 sweep run "$TMP/early" --retry-failed
check damaged-kept-aside 0 '' -- cmp "$TMP/result-damaged.json" "$R1.damaged"
check damaged-redone-status 0 "^2 finished$" -- "$BIN" sweep status "$TMP/early"

# ---- Control characters: never raw on the terminal, never in a Slurm script ----
cp "$R1" "$TMP/result-redone.json"
/usr/bin/python3 - "$R1" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
r.update(status="failed", message="\u001b[2J\rforged 4 finished\nline", final_metric=None, best_metric=None, best_step=-1)
json.dump(r, open(sys.argv[1], "w"))
PY
check status-escapes-messages 0 '^clean$' -- bash -c \
  '"$0" sweep status "$1" | /usr/bin/python3 -c "import sys; d = sys.stdin.buffer.read(); print(\"raw\" if b\"\x1b\" in d or b\"\r\" in d else \"clean\")"' \
  "$BIN" "$TMP/early"
check status-shows-escapes 0 '\\x1b\[2J\\rforged' -- "$BIN" sweep status "$TMP/early"
cp "$TMP/result-redone.json" "$R1"
NL="$TMP/s7
touch INJECTED
#"
cp -r "$TMP/early" "$NL"
check submit-refuses-newline-path 2 "holds a control character" -- "$BIN" sweep submit "$NL" --slurm --dry-run
check submit-wrote-no-script 0 '^none$' -- bash -c 'ls "$0"/slurm/*.sbatch >/dev/null 2>&1 && echo written || echo none' "$NL"
check plan-refuses-newline-path 1 "holds a control character" -- "$BIN" sweep plan "$TMP/sweep.json" --out "$TMP/a
b"

# ---- A trial trained by another process: its own exit status; `sweep run` does not exit 0 ----
"$BIN" sweep plan "$TMP/sweep.json" --out "$TMP/locked" >/dev/null
/usr/bin/python3 -c '
import fcntl, sys, time
f = open(sys.argv[1], "a"); fcntl.flock(f, fcntl.LOCK_EX); open(sys.argv[2], "w").close(); time.sleep(120)' \
  "$TMP/locked/trials/000-0.002-s1/lock" "$TMP/locked.ready" &
holder=$!
pids+=("$holder")
for _ in $(seq 1 100); do [ -e "$TMP/locked.ready" ] && break; sleep 0.1; done
check run-trial-locked-exits-4 4 "is being trained by another process" -- "$BIN" --threads 1 sweep run-trial "$TMP/locked" 0
check run-with-a-trial-elsewhere-exits-4 4 '"finished": 1, "failed": 0, "interrupted": 0, "run_elsewhere": 1' -- \
  "$BIN" --threads 1 sweep run "$TMP/locked"
check run-with-only-trials-elsewhere-exits-4 4 "the sweep has not ended: 1 trial is being trained elsewhere" -- \
  "$BIN" --threads 1 sweep run "$TMP/locked"
kill "$holder" 2>/dev/null
wait "$holder" 2>/dev/null
check run-after-the-other-process 0 '"finished": 1, "failed": 0' -- "$BIN" --threads 1 sweep run "$TMP/locked"

# ---- kill -9 of `sweep run`: its trial stops with a checkpoint instead of training on ----
"$BIN" sweep plan "$TMP/long.json" --out "$TMP/long" >/dev/null
"$BIN" --threads 1 sweep run "$TMP/long" > "$TMP/long.log" 2>&1 &
parent=$!
pids+=("$parent")
M=$TMP/long/trials/000-0.002-s1/run/metrics.jsonl
for _ in $(seq 1 300); do
  [ "$(grep -c '"kind":"train"' "$M" 2>/dev/null)" -ge 10 ] 2>/dev/null && break
  sleep 0.1
done
child=$(pgrep -P "$parent" | head -1)
pids+=("$child")
kill -9 "$parent"
wait "$parent" 2>/dev/null
for _ in $(seq 1 150); do kill -0 "$child" 2>/dev/null || break; sleep 0.1; done
if [ -n "$child" ] && ! kill -0 "$child" 2>/dev/null; then ok "killed-run-takes-its-trials"; else bad "trial process ${child:-?} trains on after its sweep run was killed"; fi
check killed-run-trial-checkpointed 0 "000-0.002-s1 +interrupted" -- "$BIN" sweep status "$TMP/long"

finish
