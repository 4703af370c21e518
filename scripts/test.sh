#!/usr/bin/env bash
# Sets up, builds and runs every test (ctest). Exit status is ctest's.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
ctest --test-dir "${TENSORSCOPE_BUILD_DIR:-build}" --output-on-failure -j "$(nproc)"
