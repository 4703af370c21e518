#!/usr/bin/env bash
# `tensorscope train` as a user drives it: a tiny run, a fork that starts from its checkpoint
# (--init-from), and precise usage errors.
# usage: test_train_cli.sh TENSORSCOPE_BINARY
set -u
BIN=$1
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
# shellcheck source=check_lib.sh
source "$(dirname "$0")/check_lib.sh"

# A two-layer copy-task decoder with a trainable head-mixing core (skip_right).
"$BIN" spec preset skip_right > "$TMP/spec.json" || { echo "FAIL spec preset"; exit 1; }
/usr/bin/python3 - "$TMP" <<'PY'
import json, sys
tmp = sys.argv[1]
spec = json.load(open(f"{tmp}/spec.json"))
spec["sizes"]["seq_len"] = 24
spec["causal"] = True
cfg = {"format": "tensorscope.run_config", "version": 1,
       "model": {"kind": "decoder", "layers": 2, "d_model": spec["sizes"]["F"], "ffn_multiplier": 2, "attention": spec},
       "task": {"name": "copy", "seq_len": 24, "algorithmic_length": 5, "seed": 1},
       "train": {"steps": 4, "batch": 4, "warmup": 1, "eval_interval": 4, "eval_examples": 8,
                 "checkpoint_interval": 2, "inspect_interval": 2, "seed": 1, "threads": 1}}
json.dump(cfg, open(f"{tmp}/run.json", "w"), indent=2)
PY

check help-lists-init-from 0 'train --config run.json --out RUN_DIR --init-from RUN_DIR' -- "$BIN" --help
# --threads means what it says, before or after the command, over the config's threads (here 0).
sed 's/"threads": 1/"threads": 0/' "$TMP/run.json" > "$TMP/run0.json"
check threads-after-command 0 '"event":"start".*"threads":1' -- "$BIN" train --config "$TMP/run0.json" --out "$TMP/t1" --steps 1 --threads 1 --json
check threads-before-command 0 '"event":"start".*"threads":1' -- "$BIN" --threads 1 train --config "$TMP/run0.json" --out "$TMP/t2" --steps 1 --json
check train-parent 0 '"event": "end", "steps": 4' -- "$BIN" train --config "$TMP/run.json" --out "$TMP/parent" --json
check eval-names-the-checkpoint-step 0 '^\{"accuracy":.*"split":"[a-z_]+","step":4\}$' -- "$BIN" eval --run "$TMP/parent"
check train-fork 0 'started from .*parent \(step 4\): [0-9]+ weight tensors taken over, 2 core tensors from this design' -- \
  "$BIN" train --config "$TMP/run.json" --out "$TMP/fork" --init-from "$TMP/parent" --steps 2 --json
check fork-records-its-source 0 '"source_step": 4' -- cat "$TMP/fork/init.json"
check fork-cores-from-checkpoint 0 'started from .*: [0-9]+ weight tensors taken over"' -- \
  "$BIN" train --config "$TMP/run.json" --out "$TMP/fork2" --init-from "$TMP/parent" --init-cores checkpoint --steps 1 --json
check init-from-nothing 1 'holds no checkpoint \(model.safetensors\) to start from' -- \
  "$BIN" train --config "$TMP/run.json" --out "$TMP/fork3" --init-from "$TMP/nowhere" --steps 1 --json
check init-from-with-resume 2 '--init-from starts a new run' -- "$BIN" train --resume "$TMP/parent" --init-from "$TMP/parent"
check init-cores-alone 2 '--init-cores needs --init-from' -- "$BIN" train --config "$TMP/run.json" --out "$TMP/x" --init-cores config
check init-cores-bad 2 "--init-cores takes config or checkpoint, not 'both'" -- \
  "$BIN" train --config "$TMP/run.json" --out "$TMP/x" --init-from "$TMP/parent" --init-cores both
check resume-needs-a-run 1 'empty-run holds no complete checkpoint to resume \(no config.json' -- "$BIN" train --resume "$TMP/empty-run"

finish
