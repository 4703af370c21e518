#!/usr/bin/env bash
# `tensorscope diagram` as a user runs it: every preset rendered, every format written, files that
# standard tools open, usage errors, and (with --check) the diagram computing what the layer computes.
# usage: test_diagram_cli.sh TENSORSCOPE_BINARY [--no-check]
set -u
BIN=$1
CHECK=${2:-}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
unset DISPLAY  # the command must render without a display
# shellcheck source=check_lib.sh
source "$(dirname "$0")/check_lib.sh"

png_size() { python3 -c "import struct,sys; d=open(sys.argv[1],'rb').read(24); print(*struct.unpack('>II', d[16:24]))" "$1"; }

# Every preset renders, each to one of the four text and picture formats in turn, so every format
# is written for a quarter of the presets (one process start each: the run is bound by LibTorch's
# start-up, not by the layout; tests/gui/test_diagram_export.cpp checks each format's content).
formats=(png svg dot tikz)
i=0
for name in $("$BIN" spec preset --list); do
  safe=${name//:/_}
  fmt=${formats[$((i % 4))]}
  i=$((i + 1))
  case $fmt in
    png)
      check "png-$name" 0 "wrote .*$safe.png \(png" -- "$BIN" diagram --preset "$name" --format png --out "$TMP/$safe.png" --dpi 96 ;;
    svg)
      check "svg-$name" 0 "wrote" -- "$BIN" diagram --preset "$name" --format svg --out "$TMP/$safe.svg"
      if command -v xmllint >/dev/null; then
        xmllint --noout "$TMP/$safe.svg" && ok "svg-xml-$name" || bad "svg-xml-$name"
      fi ;;
    dot)
      check "dot-$name" 0 "wrote" -- "$BIN" diagram --preset "$name" --format dot --out "$TMP/$safe.dot"
      if command -v dot >/dev/null; then
        dot -Tplain "$TMP/$safe.dot" >/dev/null && ok "dot-parses-$name" || bad "dot-parses-$name"
      fi ;;
    tikz)
      check "tikz-$name" 0 "wrote" -- "$BIN" diagram --preset "$name" --format tikz --out "$TMP/$safe.tex"
      grep -q '\\begin{tikzpicture}' "$TMP/$safe.tex" && ok "tikz-picture-$name" || bad "tikz-picture-$name" ;;
  esac
done
[ "$i" -ge 8 ] && ok "presets-rendered ($i)" || bad "presets-rendered (only $i presets listed)"

# PDF: a vector page that poppler renders to a picture that is not blank.
check pdf 0 "wrote" -- "$BIN" diagram --preset thsa --format pdf --out "$TMP/thsa.pdf"
if command -v pdftoppm >/dev/null; then
  pdftoppm -png -r 50 -singlefile "$TMP/thsa.pdf" "$TMP/thsa_page" && ok "pdf-renders" || bad "pdf-renders"
  python3 - "$TMP/thsa_page.png" <<'PY' && ok "pdf-not-blank" || bad "pdf-not-blank"
import sys, zlib, struct
data = open(sys.argv[1], 'rb').read()
w, h = struct.unpack('>II', data[16:24])
idat = b''.join(data[i + 8:i + 8 + struct.unpack('>I', data[i:i + 4])[0]]
                for i in range(8, len(data)) if data[i + 4:i + 8] == b'IDAT')
raw = zlib.decompress(idat)
dark = sum(1 for b in raw if b < 128)
sys.exit(0 if w > 100 and h > 100 and dark > 500 else 1)
PY
fi

# PNG resolution: 300 dpi is 300/72 pixels per point of the 72-dpi picture.
"$BIN" diagram --preset mhsa --format png --out "$TMP/m72.png" --dpi 72 >/dev/null
"$BIN" diagram --preset mhsa --format png --out "$TMP/m300.png" --dpi 300 >/dev/null
read -r w72 h72 <<<"$(png_size "$TMP/m72.png")"
read -r w300 h300 <<<"$(png_size "$TMP/m300.png")"
python3 -c "import sys; a,b,c,d=map(int,sys.argv[1:]); sys.exit(0 if abs(c-a*300/72)<=5 and abs(d-b*300/72)<=5 else 1)" \
  "$w72" "$h72" "$w300" "$h300" && ok "png-300dpi-size" || bad "png-300dpi-size ($w72x$h72 -> $w300x$h300)"

# Options: theme, sizes, sequence length, a spec file.
check dark 0 "wrote" -- "$BIN" diagram --preset tp --format png --out "$TMP/tp_dark.png" --theme dark
check sizes 0 "wrote" -- "$BIN" diagram --preset thsa --format dot --out "$TMP/sizes.dot" --sizes --seq 12
grep -q '<12>' "$TMP/sizes.dot" && ok "sizes-seq-in-labels" || bad "sizes-seq-in-labels"
"$BIN" spec preset skip_right > "$TMP/skip_right.json"
check spec-file 0 "wrote" -- "$BIN" diagram --spec "$TMP/skip_right.json" --format svg --out "$TMP/s.svg"
check help-lists-diagram 0 "tensorscope diagram --spec" -- "$BIN" --help

# Usage errors (exit 2) and failures (exit 1).
check no-source 2 "exactly one of --spec and --preset" -- "$BIN" diagram --format png --out "$TMP/x.png"
check both-sources 2 "exactly one of --spec and --preset" -- "$BIN" diagram --spec a.json --preset mhsa --format png --out x
check no-format 2 "needs --format and --out" -- "$BIN" diagram --preset mhsa
check bad-format 2 "unknown --format 'jpeg'" -- "$BIN" diagram --preset mhsa --format jpeg --out "$TMP/x.jpg"
check bad-theme 2 "unknown --theme 'sepia'" -- "$BIN" diagram --preset mhsa --format png --out "$TMP/x.png" --theme sepia
check dpi-not-png 2 "--dpi applies to --format png only" -- "$BIN" diagram --preset mhsa --format svg --out "$TMP/x.svg" --dpi 300
check bad-dpi 2 "--dpi" -- "$BIN" diagram --preset mhsa --format png --out "$TMP/x.png" --dpi 5
check unknown-preset 2 "unknown preset" -- "$BIN" diagram --preset skip_middle --format png --out "$TMP/x.png"
check stray-word 2 "" -- "$BIN" diagram --preset mhsa --format png --out "$TMP/x.png" extra
echo '{"variant": "thsa"' > "$TMP/broken.json"
check broken-spec 1 "invalid spec" -- "$BIN" diagram --spec "$TMP/broken.json" --format png --out "$TMP/x.png"
check unwritable 1 "cannot write|could not write" -- "$BIN" diagram --preset mhsa --format png --out /nonexistent-dir/x.png

# The diagram computes the layer: every preset, and causal variants.
if [ "$CHECK" != "--no-check" ]; then
  for name in $("$BIN" spec preset --list); do
    check "check-$name" 0 "diagram check .*: ok" -- "$BIN" diagram --preset "$name" --check --seq 6
  done
  # Rotary positions: the turns on the query and key legs (contract §9).
  for name in mhsa gqa tp thsa; do
    for pos in rotary rotary_interleaved; do
      check "check-$name-$pos" 0 "diagram check .*: ok" -- "$BIN" diagram --preset "$name" --check --seq 6 --positions "$pos"
    done
  done
  check check-rotary-refused 1 "thsa_linear takes no rotary positions" -- "$BIN" diagram --preset thsa_linear --check --positions rotary
  check check-bad-positions 2 "unknown --positions 'alibi'" -- "$BIN" diagram --preset mhsa --check --positions alibi
fi

finish
