#!/usr/bin/env bash
# Builds Tensorscope (scripts/build.sh) and its Debian package with CPack; prints the .deb's path.
# Install it with: apt-get install ./tensorscope_*.deb
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${TENSORSCOPE_BUILD_DIR:-build}
bash scripts/build.sh "$@" >&2
(cd "$BUILD_DIR" && cpack -G DEB -B "$PWD/package" >&2)
deb=$(ls -t "$BUILD_DIR"/package/tensorscope_*.deb | sed -n 1p)
realpath "$deb"
