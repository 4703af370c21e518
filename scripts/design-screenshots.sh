#!/usr/bin/env bash
# Pictures of the Design dock's design space (issue 36): the MHSA run made MLA (absorbed order),
# GQA-2, MLA with its latent matched to MHSA's parameters (Match budget), TPA (R_K 2, R_Q 6) and
# differential attention with rotary positions (λ by layer) in the Design layout — the slots, what
# the network is, the Cost dock against MHSA, and the diagram with the same name in its caption — at
# 1600 x 1000 and 1280 x 800.
# usage: scripts/design-screenshots.sh [BUILD_DIR] [OUT_DIR]   (offscreen unless QT_QPA_PLATFORM is set;
# OUT_DIR defaults to docs/images; the README shows design_space_mla.png)
set -euo pipefail
cd "$(dirname "$0")/.."
BIN="${1:-build}/app/tensorscope"
OUT="${2:-docs/images}"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
export QT_QPA_PLATFORM=${QT_QPA_PLATFORM:-offscreen} HOME="$TMP/home" XDG_DATA_HOME="$TMP/home/data"
mkdir -p "$OUT"
shoot() {  # size, suffix
  cat > "$TMP/demo.txt" <<SCRIPT
wait-ms 300
layout Design
run 0
preset mla
slot slots.latent.order absorbed
slot slots.latent.kv_rank 32
wait-ms 300
screenshot $OUT/design_space_mla$2.png
preset gqa
slot slots.kv_groups 2
wait-ms 300
screenshot $OUT/design_space_gqa$2.png
preset mla
match params mhsa kv_rank apply
wait-ms 300
screenshot $OUT/design_space_match$2.png
preset mhsa
slot slots.tpa.k_rank 2
slot slots.tpa.q_rank 6
wait-ms 300
screenshot $OUT/design_space_tpa$2.png
preset diff
positions rotary
slot slots.differential on
wait-ms 300
screenshot $OUT/design_space_diff$2.png
quit
SCRIPT
  "$BIN" --demo "$TMP/demo.txt" --size "$1"
}
shoot 1600x1000 ""
shoot 1280x800 _laptop
