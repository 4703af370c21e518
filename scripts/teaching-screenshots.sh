#!/usr/bin/env bash
# The README's pictures of teaching (issue 15), at 1600 x 1000: a lesson in the Teach layout (THSA's
# C cut into two heads), the Inspector on a trained MHSA run (the attention weights of a typed probe,
# the plan stepped to the softmax), and the low-rank bottleneck lab (docs/images/teaching_*.png).
# usage: scripts/teaching-screenshots.sh [BUILD_DIR]     (offscreen unless QT_QPA_PLATFORM is set)
set -euo pipefail
cd "$(dirname "$0")/.."
BIN="${1:-build}/app/tensorscope"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
export QT_QPA_PLATFORM=${QT_QPA_PLATFORM:-offscreen} HOME="$TMP/home" XDG_DATA_HOME="$TMP/home/data"
shoot() {  # name, then the script's lines
  local name=$1
  shift
  printf '%s\n' "$@" "wait-ms 500" "screenshot docs/images/$name" quit > "$TMP/$name.txt"
  "$BIN" --demo "$TMP/$name.txt" --size 1600x1000
}
shoot teaching_lesson.png "layout Teach" "lesson thsa_stable_rank" lesson-do lesson-next lesson-do lesson-next lesson-do
shoot teaching_inspector.png "run 0" "train 300" wait-end "probe 8316402957316402" "plan-step 4"
shoot teaching_lab.png "lab bottleneck"
