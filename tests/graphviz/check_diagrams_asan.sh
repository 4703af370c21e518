#!/usr/bin/env bash
# Graphviz under AddressSanitizer on Tensorscope's own diagrams and on the upstream reproducer.
#   check_diagrams_asan.sh ours TENSORSCOPE CHECKER    every preset's DOT must lay out clean
#   check_diagrams_asan.sh upstream CHECKER DOT        the reproducer must still show the double free
#                                                      on Debian 12's Graphviz (exit 77 = skip elsewhere)
set -uo pipefail
export ASAN_OPTIONS=detect_leaks=0:abort_on_error=0
mode=$1
if [ "$mode" = ours ]; then
  ts=$2 checker=$3
  dir=$(mktemp -d)
  trap 'rm -rf "$dir"' EXIT
  files=()
  while read -r preset; do
    f="$dir/$(echo "$preset" | tr ':' '_').dot"
    QT_QPA_PLATFORM=offscreen "$ts" diagram --preset "$preset" --format dot --out "$f" >/dev/null || {
      echo "FAIL: could not write the DOT of $preset"; exit 1; }
    files+=("$f")
  done < <("$ts" spec preset --list)
  [ ${#files[@]} -ge 19 ] || { echo "FAIL: only ${#files[@]} presets listed"; exit 1; }
  out=$("$checker" "${files[@]}" 2>&1); rc=$?
  echo "$out" | head -40
  clean=$(echo "$out" | grep -c '^clean ')
  if [ $rc -ne 0 ] || [ "$clean" -ne ${#files[@]} ] || grep -q AddressSanitizer <<<"$out"; then
    echo "FAIL: $clean of ${#files[@]} diagrams laid out clean"; exit 1
  fi
  echo "PASS: all ${#files[@]} preset diagrams lay out without a sanitizer finding"
elif [ "$mode" = upstream ]; then
  checker=$2 dot=$3
  out=$("$checker" "$dot" 2>&1)
  version=$(echo "$out" | sed -n 's/^graphviz //p' | head -1)
  echo "Graphviz $version"
  case "$version" in
    2.42*|2.43.0) ;;
    *) echo "SKIP: the reproducer is pinned to Debian 12's Graphviz 2.42; this is $version"
       echo "$out" | tail -5; exit 77 ;;
  esac
  if grep -q "attempting double-free" <<<"$out"; then
    echo "PASS: Graphviz $version still frees twice on the reproducer (the emitted DOT avoids the trigger)"
  else
    echo "FAIL: no double free on the reproducer: the upstream bug or its trigger changed"; echo "$out" | tail -20; exit 1
  fi
else
  echo "usage: $0 ours|upstream ..." >&2; exit 2
fi
