#!/usr/bin/env bash
# Installs the system packages (scripts/setup.sh), configures and builds Tensorscope in build/.
# Extra arguments go to CMake, e.g. -DTorch_DIR=/opt/libtorch-cuda/share/cmake/Torch.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
BUILD_DIR=${TENSORSCOPE_BUILD_DIR:-build}
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release "$@"
cmake --build "$BUILD_DIR" -j "$(nproc)"
