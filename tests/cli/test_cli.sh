#!/usr/bin/env bash
# CLI behaviour as a user sees it: output, messages and exit codes.
# usage: test_cli.sh TENSORSCOPE_BINARY TEST_DATA_DIR [gui|headless]
set -u
BIN=$1
DATA=$2
MODE=${3:-gui}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
# shellcheck source=check_lib.sh
source "$(dirname "$0")/check_lib.sh"

check help 0 "spec validate FILE" -- "$BIN" --help
check version-names-all 0 "^Tensorscope [0-9]" -- "$BIN" --version
if [ "$MODE" = gui ]; then
  check version-qt 0 "^Qt 6\." -- "$BIN" --version
else
  # A headless build (TENSORSCOPE_BUILD_GUI=OFF) says so, checks diagrams and refuses to draw them.
  check version-headless 0 "^headless build" -- "$BIN" --version
  check diagram-check-headless 0 "diagram check core:low_rank: ok" -- "$BIN" diagram --preset core:low_rank --check
  check diagram-draw-headless 1 "headless build .*--check" -- "$BIN" diagram --preset mhsa --format dot --out "$TMP/x.dot"
  check window-headless 2 "headless build" -- "$BIN"
fi
check version-threads 0 "threads: $(nproc) intra-op" -- "$BIN" --version
# Debian's LibTorch calls the system BLAS (OpenBLAS once set up); PyTorch's 2.x builds carry MKL inside.
check version-blas 0 "^BLAS: (OpenBLAS|MKL, linked into LibTorch)" -- "$BIN" --version
check version-threads-flag 0 "threads: 1 intra-op" -- "$BIN" --threads 1 --version
check preset-list 0 "^skip_right$" -- "$BIN" spec preset --list
check preset-unknown 2 "unknown preset 'skip_middle'.*skip_right" -- "$BIN" spec preset skip_middle

# Every listed preset prints JSON that validate accepts.
for name in $("$BIN" spec preset --list); do
  "$BIN" spec preset "$name" > "$TMP/$name.json" || { echo "FAIL preset $name"; fail=$((fail + 1)); continue; }
  check "validate-$name" 0 "valid .* spec" -- "$BIN" spec validate "$TMP/$name.json"
done
python3 -c "import json,sys; json.load(open(sys.argv[1]))" "$TMP/skip_right.json" \
  && { echo "ok   preset-is-json"; pass=$((pass + 1)); } || { echo "FAIL preset-is-json"; fail=$((fail + 1)); }

check broken-rc-and-R 1 "sizes.R: core structure kronecker needs R = H\*D; got R=24, H=4, D=8" -- "$BIN" spec validate "$DATA/broken_spec.json"
check broken-all-problems 1 "invalid spec \(3 problems\)" -- "$BIN" spec validate "$DATA/broken_spec.json"
check broken-seq 1 "sizes.seq_len: .*got 0" -- "$BIN" spec validate "$DATA/broken_spec.json"
check broken-dropout 1 "dropout: dropout must be in \[0, 1\); got 1.2" -- "$BIN" spec validate "$DATA/broken_spec.json"
check malformed 1 "malformed JSON" -- "$BIN" spec validate "$DATA/malformed_spec.json"
check future-version 1 "unsupported version 99" -- "$BIN" spec validate "$DATA/future_spec.json"
check missing-file 1 "cannot open .*No such file" -- "$BIN" spec validate "$TMP/nope.json"
check cost 0 "parameters +16400 trainable" -- "$BIN" spec cost "$TMP/skip_right.json" --batch 32 --seq 128
check cost-json 0 "\"forward_flops\"" -- "$BIN" spec cost "$TMP/skip_right.json" --batch 2 --seq 8 --json
check cost-needs-sizes 2 "needs --batch and --seq" -- "$BIN" spec cost "$TMP/skip_right.json"
# Budget matching (issue 37): MQA solves H = 7 for MHSA's 16384 parameters; D alone misses by 1.56%.
check match-params 0 "matched: H = 7" -- "$BIN" spec match mqa --like mhsa --on params
check match-refused 1 "the closest is D = 26 with 16640 trainable parameters, \+1.56% from the base's 16384" -- "$BIN" spec match mqa --like mhsa --on params --size D
check match-kv 0 "matched: kv_groups = 4" -- "$BIN" spec match gqa --like mhsa --on kv --causal
check match-kv-not-causal 1 "no KV cache to match: a non-causal layer" -- "$BIN" spec match gqa --like mhsa --on kv
check match-json 0 "\"found\": true" -- "$BIN" spec match "$TMP/skip_right.json" --like "$TMP/skip_right.json" --on flops --json
check match-bad-cost 2 "params, kv or flops; got 'memory'" -- "$BIN" spec match mqa --like mhsa --on memory
check match-bad-tolerance 2 "--tolerance is a number in \[0, 1\)" -- "$BIN" spec match mqa --like mhsa --on params --tolerance 2
check cost-bad-number 2 "whole number; got 'x'" -- "$BIN" spec cost "$TMP/skip_right.json" --batch x --seq 4
check unknown-option 2 "unknown option '--frobnicate'" -- "$BIN" spec validate "$TMP/mhsa.json" --frobnicate
check unknown-command 2 "unknown command 'trian'" -- "$BIN" trian

# One layer in and out: weight files are checked by name and shape against the spec.
check attention-save 0 "wrote .*w.safetensors: 7 tensors" -- "$BIN" attention --spec "$TMP/skip_left.json" --seed 7 --save-weights "$TMP/w.safetensors"
check attention-wrong-spec 1 "unexpected tensor 'core.c2'" -- "$BIN" attention --spec "$TMP/core:mhsa.json" --weights "$TMP/w.safetensors" --save-weights "$TMP/w2.safetensors"
check attention-missing-x 1 "no tensor named 'x' \(found: core, core.c2" -- "$BIN" attention --spec "$TMP/skip_left.json" --weights "$TMP/w.safetensors" --input "$TMP/w.safetensors" --output "$TMP/y.safetensors"
check attention-needs-work 2 "nothing to do" -- "$BIN" attention --spec "$TMP/skip_left.json"
check attention-corrupt-weights 1 "w.json" -- "$BIN" attention --spec "$TMP/skip_left.json" --weights "$TMP/w.json" --save-weights "$TMP/w3.safetensors"
# The output line names what the file holds: tp writes its role vectors too (issue 12, item 7).
python3 - "$TMP/tp.json" "$TMP/x.safetensors" <<'PY'
import json, struct, sys
F = json.load(open(sys.argv[1]))["sizes"]["F"]
B, N = 1, 5
data = struct.pack("<%df" % (B * N * F), *[((i * 37) % 11 - 5) / 7 for i in range(B * N * F)])
header = json.dumps({"x": {"dtype": "F32", "shape": [B, N, F], "data_offsets": [0, len(data)]}}).encode()
header += b" " * (-len(header) % 8)
open(sys.argv[2], "wb").write(struct.pack("<Q", len(header)) + header + data)
PY
check attention-tp-maps 0 "wrote .*y_tp.safetensors \(y, maps, roles\)$" -- "$BIN" attention --spec "$TMP/tp.json" --input "$TMP/x.safetensors" --output "$TMP/y_tp.safetensors" --maps
check attention-tp-y 0 "wrote .*y_tp1.safetensors \(y\)$" -- "$BIN" attention --spec "$TMP/tp.json" --input "$TMP/x.safetensors" --output "$TMP/y_tp1.safetensors"

finish
