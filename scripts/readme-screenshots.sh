#!/usr/bin/env bash
# The README's pictures of the explorer: the default session's MHSA and heads-only runs trained, its
# THSA run mid-training, with the maps of a typed probe, at 1600 x 1000 and 1280 x 800, light and
# dark (docs/images/explorer_*.png).
# usage: scripts/readme-screenshots.sh [BUILD_DIR]     (offscreen unless QT_QPA_PLATFORM is set)
set -euo pipefail
cd "$(dirname "$0")/.."
BIN="${1:-build}/app/tensorscope"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
export QT_QPA_PLATFORM=${QT_QPA_PLATFORM:-offscreen} HOME="$TMP/home" XDG_DATA_HOME="$TMP/home/data"
shoot() {  # size light-file dark-file
  cat > "$TMP/demo.txt" <<SCRIPT
theme light
run 0
train 600
wait-end
run 2
train 600
wait-end
run 1
train 600
wait-step 250
probe 8316402957316402
wait-step 280
screenshot docs/images/$2
theme dark
screenshot docs/images/$3
stop
wait-end
quit
SCRIPT
  "$BIN" --demo "$TMP/demo.txt" --size "$1"
}
shoot 1600x1000 explorer_training.png explorer_training_dark.png
shoot 1280x800 explorer_laptop.png explorer_laptop_dark.png
