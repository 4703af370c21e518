#!/usr/bin/env bash
# Issue 20: installs the build into a temporary DESTDIR, moves the installed prefix elsewhere (the
# binary must find its resources relative to itself, never in the source or build tree), and from the
# installed files alone runs --version, spec preset thsa, a short train of an installed example, opens
# an installed example session in the window (offscreen) and by `tensorscope FILE`, and checks the
# man page, bash completion, desktop entry, AppStream metainfo, MIME type and icons.
# usage: test_install.sh BUILD_DIR OUT_DIR   (OUT_DIR keeps the screenshots)
set -euo pipefail
BUILD=$(cd "$1" && pwd)
SRC=$(cd "$(dirname "$0")/../.." && pwd)
OUT=$2
mkdir -p "$OUT"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fail() { echo "install test: $*" >&2; exit 1; }

DESTDIR="$TMP/dest" cmake --install "$BUILD" --prefix /usr >"$TMP/install.log" || { cat "$TMP/install.log"; fail "cmake --install failed"; }
mv "$TMP/dest/usr" "$TMP/moved"  # a prefix the build never knew
P="$TMP/moved"
BIN="$P/bin/tensorscope"
[ -x "$BIN" ] || fail "no bin/tensorscope"
export HOME="$TMP/home" XDG_DATA_HOME="$TMP/home/data" XDG_CONFIG_HOME="$TMP/home/config" QT_QPA_PLATFORM=offscreen
mkdir -p "$HOME"
cd "$TMP"  # not the source tree

# has PATTERN TEXT: never `producer | grep -q` under pipefail (grep -q leaves at its first match and
# a producer that writes again dies of SIGPIPE, so the pipeline fails at random).
has() { grep -q -- "$1" <<<"$2"; }
VERSION=$("$BIN" --version)
has '^Tensorscope ' "$VERSION" || fail "--version"
has '"variant": "thsa"' "$("$BIN" spec preset thsa)" || fail "spec preset thsa"
for f in sessions/thsa_design_space.json sessions/tp_role_clusters.json examples/copy_multilinear.json \
  sweeps/tuformer_design_space.json sweeps/heads_vs_rank.json lessons/thsa_stable_rank.json lessons/low_rank_bottleneck.json; do
  [ -f "$P/share/tensorscope/$f" ] || fail "share/tensorscope/$f not installed"
done
"$BIN" sweep plan "$P/share/tensorscope/sweeps/tuformer_design_space.json" --out "$TMP/sweep" >"$TMP/sweep.log" \
  || { cat "$TMP/sweep.log"; fail "sweep plan of an installed sweep"; }
"$BIN" train --config "$P/share/tensorscope/examples/copy_multilinear.json" --out "$TMP/run" --steps 3 >"$TMP/train.log" \
  || { cat "$TMP/train.log"; fail "train from the installed example"; }
[ -f "$TMP/run/config.json" ] || fail "the run directory has no config.json"

[ -f "$P/share/doc/tensorscope/README.md" ] || fail "no README in share/doc/tensorscope"
[ -f "$P/share/doc/tensorscope/attention-variants.md" ] || fail "no design docs (with the papers' references)"
MAN="$P/share/man/man1/tensorscope.1.gz"
[ -f "$MAN" ] || fail "no man page"
MAN_TEXT=$(zcat "$MAN")
has '^\.SH COMMANDS' "$MAN_TEXT" || fail "the man page has no COMMANDS"
has 'spec preset' "$MAN_TEXT" || fail "the man page misses the spec commands"
[ -f "$P/share/doc/tensorscope/copyright" ] && [ -f "$P/share/doc/tensorscope/changelog.gz" ] || fail "no copyright or changelog"
if command -v man >/dev/null; then
  has 'tensorscope' "$(MANPATH="$P/share/man" man -P cat tensorscope 2>/dev/null)" || fail "man tensorscope"
fi
COMP="$P/share/bash-completion/completions/tensorscope"
[ -f "$COMP" ] || fail "no bash completion"
got=$(PATH="$P/bin:$PATH" bash -c "source '$COMP'; COMP_WORDS=(tensorscope di); COMP_CWORD=1; _tensorscope; echo \${COMPREPLY[*]}")
[ "$got" = "diagram" ] || fail "bash completes 'tensorscope di' to '$got', not 'diagram'"
got=$(PATH="$P/bin:$PATH" bash -c "source '$COMP'; COMP_WORDS=(tensorscope diagram --preset skip_l); COMP_CWORD=3; _tensorscope; echo \${COMPREPLY[*]}")
[ "$got" = "skip_left" ] || fail "bash completes presets to '$got'"

if has '^Qt ' "$VERSION"; then  # the explorer and its desktop integration
  D="$P/share/applications/tensorscope.desktop"
  [ -f "$D" ] || fail "no desktop entry"
  if command -v desktop-file-validate >/dev/null; then desktop-file-validate "$D" || fail "desktop-file-validate"; fi
  M="$P/share/metainfo/io.github.tensorscope.Tensorscope.metainfo.xml"
  [ -f "$M" ] || fail "no AppStream metainfo"
  if command -v appstreamcli >/dev/null; then appstreamcli validate --no-net "$M" >/dev/null || fail "appstreamcli validate"; fi
  # Its screenshots are this repository's files at the address the ID names: each URL's path after
  # the branch must be a PNG of the source tree with the width and height the metainfo states.
  python3 - "$M" "$SRC" <<'PY' || fail "the AppStream screenshots do not name the source tree's images"
import struct, sys, xml.dom.minidom as m
images = m.parse(sys.argv[1]).getElementsByTagName("image")
assert images, "no screenshot"
prefix = "https://raw.githubusercontent.com/tensorscope/tensorscope/main/"
for image in images:
    url = image.firstChild.data.strip()
    assert url.startswith(prefix), url
    with open(sys.argv[2] + "/" + url[len(prefix):], "rb") as f:
        head = f.read(24)
    assert head[:8] == b"\x89PNG\r\n\x1a\n", url
    size = struct.unpack(">II", head[16:24])
    assert size == (int(image.getAttribute("width")), int(image.getAttribute("height"))), (url, size)
PY
  python3 -c "import sys, xml.dom.minidom as m; m.parse(sys.argv[1])" "$P/share/mime/packages/tensorscope-session.xml" \
    || fail "the MIME type is not XML"
  for s in 16 32 48 64 128 256 512; do
    [ -s "$P/share/icons/hicolor/${s}x${s}/apps/tensorscope.png" ] || fail "no ${s}x${s} icon"
  done
  [ -f "$P/share/icons/hicolor/scalable/apps/tensorscope.svg" ] || fail "no scalable icon"
  # The window opens an installed example session given as FILE (an untitled copy) ...
  "$BIN" --screenshot "$OUT/installed_open_file.png" "$P/share/tensorscope/sessions/tp_role_clusters.json" >"$TMP/gui.log" 2>&1 \
    || { cat "$TMP/gui.log"; fail "tensorscope FILE"; }
  [ -s "$OUT/installed_open_file.png" ] || fail "no screenshot of tensorscope FILE"
  # ... and lists the installed examples (File > Open example): a demo opens one and trains it.
  printf 'session %s\nrun 0\ntrain 3\nwait-end\nscreenshot %s\n' "$P/share/tensorscope/sessions/tensorized_attention.json" \
    "$OUT/installed_example.png" >"$TMP/demo.txt"
  "$BIN" --demo "$TMP/demo.txt" --size 1280x800 >"$TMP/demo.log" 2>&1 || { cat "$TMP/demo.log"; fail "the installed example session"; }
  [ -s "$OUT/installed_example.png" ] || fail "no screenshot of the installed example"
  # Its runs went to the user's data folder, not next to the installed (read-only) examples.
  [ -z "$(find "$P/share/tensorscope" -name '*.runs' -o -name 'metrics.jsonl')" ] || fail "runs written into share/tensorscope"
  [ -n "$(find "$XDG_DATA_HOME" -name metrics.jsonl)" ] || fail "no run under the user's data folder"
  # A file that does not read: refused with the reason, the window still opens.
  echo '{"format": "nonsense"}' >"$TMP/bad.json"
  "$BIN" --screenshot "$TMP/bad.png" "$TMP/bad.json" >"$TMP/bad.log" 2>&1 || true
  grep -q "cannot open" "$TMP/bad.log" || { cat "$TMP/bad.log"; fail "a bad FILE is not reported"; }
fi
# Nothing of the build or source tree is named in the installed text files.
if grep -rIl -e "$BUILD" "$P/share" >/dev/null 2>&1; then fail "installed files name the build tree: $(grep -rIl -e "$BUILD" "$P/share")"; fi
echo "install test: passed ($P)"
