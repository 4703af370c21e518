#!/usr/bin/env bash
# The pictures of issue 36 (docs/teaching.md): the KV cache lesson at its absorbed-MLA step and the
# talking-heads lesson after its intervention, both in the Teach layout, and the example session
# comparing MHSA, GQA, MQA and MLA in the Design layout, each at 1600 x 1000 and 1280 x 800
# (docs/images/lesson_kv_cache_*.png, lesson_mixing_heads_*.png, session_kv_cache_*.png).
# usage: scripts/design-lesson-screenshots.sh [BUILD_DIR]   (offscreen unless QT_QPA_PLATFORM is set)
set -euo pipefail
cd "$(dirname "$0")/.."
BIN="${1:-build}/app/tensorscope"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
export QT_QPA_PLATFORM=${QT_QPA_PLATFORM:-offscreen} HOME="$TMP/home" XDG_DATA_HOME="$TMP/home/data"
shoot() {  # name, size, then the script's lines
  local name=$1 size=$2
  shift 2
  printf '%s\n' "$@" "wait-ms 500" "screenshot docs/images/$name" quit > "$TMP/$name.txt"
  "$BIN" --demo "$TMP/$name.txt" --size "$size"
}
for size in 1600x1000 1280x800; do
  shoot "lesson_kv_cache_$size.png" "$size" "layout Teach" "lesson kv_cache_mhsa_gqa_mla" \
    lesson-do lesson-next lesson-do lesson-next lesson-do lesson-next lesson-do lesson-next \
    lesson-do lesson-next lesson-do "dock Cost"
  shoot "lesson_mixing_heads_$size.png" "$size" "layout Teach" "lesson mixing_heads" \
    lesson-do lesson-next lesson-do lesson-next lesson-do lesson-next lesson-do "dock Curves"
  shoot "session_kv_cache_$size.png" "$size" "session resources/sessions/kjv_kv_cache_designs.json" \
    "layout Design" "run 4" "dock Cost"
done
