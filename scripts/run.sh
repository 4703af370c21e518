#!/usr/bin/env bash
# Sets up, builds and opens the Tensorscope explorer. Arguments go to tensorscope.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
BIN="${TENSORSCOPE_BUILD_DIR:-build}/app/tensorscope"
if [ -z "${DISPLAY:-}" ] && [ -z "${WAYLAND_DISPLAY:-}" ] && [ "${QT_QPA_PLATFORM:-}" != offscreen ]; then
  echo "run: no display found (DISPLAY is unset); starting the window on a virtual X server (xvfb-run)." >&2
  echo "run: on a desktop, run $BIN directly to see it." >&2
  exec xvfb-run -a -s "-screen 0 1600x1000x24" "$BIN" "$@"
fi
exec "$BIN" "$@"
