#!/usr/bin/env bash
# The README's pictures of the explorer: the default session's THSA run mid-training, with the maps
# of a typed probe, at 1600 x 1000 and 1280 x 800, light and dark (docs/images/explorer_*.png).
# usage: scripts/readme-screenshots.sh [BUILD_DIR]     (offscreen unless QT_QPA_PLATFORM is set)
set -euo pipefail
cd "$(dirname "$0")/.."
BIN="${1:-build}/app/tensorscope"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
export QT_QPA_PLATFORM=${QT_QPA_PLATFORM:-offscreen} HOME="$TMP/home" XDG_DATA_HOME="$TMP/home/data"
shoot() {  # size theme file
  cat > "$TMP/demo.txt" <<SCRIPT
theme $2
run 1
train 1000
wait-step 300
probe 52907314
wait-step 330
screenshot docs/images/$3
stop
wait-end
SCRIPT
  "$BIN" --demo "$TMP/demo.txt" --size "$1"
}
shoot 1600x1000 light explorer_training.png
shoot 1600x1000 dark explorer_training_dark.png
shoot 1280x800 light explorer_laptop.png
shoot 1280x800 dark explorer_laptop_dark.png
