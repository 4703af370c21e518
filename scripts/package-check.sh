#!/usr/bin/env bash
# CI's package step (issue 20): builds the .deb (scripts/package.sh), lists it, runs lintian (its
# errors fail the step, warnings are printed), installs it with apt-get, uses the installed command,
# man page and window, then purges it and checks that nothing is left. Needs root (apt-get).
set -euo pipefail
cd "$(dirname "$0")/.."
deb=$(bash scripts/package.sh)
echo "package: $deb"
dpkg-deb --info "$deb" | grep -E '^ (Package|Version|Depends|Recommends):'
dpkg-deb --contents "$deb" | awk '{print $6}' | grep -E '^\./usr/(bin/tensorscope|share/(applications/tensorscope\.desktop|man/man1/tensorscope\.1\.gz|metainfo/|mime/packages/|icons/hicolor/scalable/apps/tensorscope\.svg|bash-completion/completions/tensorscope|tensorscope/sessions/))' \
  | sort -u | sed 's/^/  /'
if command -v lintian >/dev/null; then
  lintian --fail-on error "$deb" || { echo "package: lintian reports errors" >&2; exit 1; }
fi
# Never `producer | grep -q` under pipefail: grep -q leaves at its first match, a producer that
# writes again (gio flushes every line) dies of SIGPIPE and the pipeline fails at random.
if [ "$(dpkg-query -W -f='${Status}' tensorscope 2>/dev/null || true)" = "install ok installed" ]; then
  echo "package: tensorscope is installed on this machine already; not touching it" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get install -y -qq "$deb" >/dev/null
trap 'apt-get purge -y -qq tensorscope >/dev/null 2>&1 || true' EXIT
tensorscope --version | sed -n 1p  # sed reads to the end: head would leave early (SIGPIPE under pipefail)
tensorscope spec preset thsa >/dev/null
man -w tensorscope >/dev/null
desktop-file-validate /usr/share/applications/tensorscope.desktop
if command -v gio >/dev/null; then  # the file manager's view: a session file has Tensorscope's MIME type
  TMPM=$(mktemp -d)
  cp resources/sessions/tp_role_clusters.json "$TMPM/study.tensorscope.json"
  type=$(gio info -a standard::content-type "$TMPM/study.tensorscope.json" | awk '/content-type/ {print $2}')
  rm -rf "$TMPM"
  [ "$type" = application/x-tensorscope-session ] || { echo "package: a session file is $type" >&2; exit 1; }
  openers=$(gio mime application/x-tensorscope-session)
  grep -q "tensorscope.desktop" <<<"$openers" \
    || { echo "package: Tensorscope does not open session files; gio says: $openers" >&2; exit 1; }
fi
TMP=$(mktemp -d)
HOME=$TMP XDG_DATA_HOME=$TMP/data QT_QPA_PLATFORM=offscreen \
  tensorscope --screenshot "$TMP/window.png" /usr/share/tensorscope/sessions/tp_role_clusters.json >/dev/null
[ -s "$TMP/window.png" ] || { echo "package: the installed window drew nothing" >&2; exit 1; }
rm -rf "$TMP"
apt-get purge -y -qq tensorscope >/dev/null
trap - EXIT
left=$(ls -d /usr/bin/tensorscope /usr/share/tensorscope /usr/share/doc/tensorscope /usr/share/man/man1/tensorscope.1.gz \
  /usr/share/applications/tensorscope.desktop /usr/share/mime/packages/tensorscope-session.xml 2>/dev/null || true)
[ -z "$left" ] || { echo "package: purge left $left" >&2; exit 1; }
echo "package: built, installed, used and purged cleanly"
