#!/usr/bin/env bash
# The torch-free readers and kernels under AddressSanitizer + UndefinedBehaviorSanitizer (issue 19):
# the spec layer (spec, run-independent JSON readers, checkpoint store, atomic writer, tensor
# networks, cost model) and the fused-kernel building blocks (every instruction-set build of the row
# operations the CPU supports), each with its whole test suite. LibTorch code is left out: Debian's
# LibTorch is not built with ASan, and a full sanitized build costs ~25 CI minutes.
# usage: scripts/sanitize.sh [BUILD_DIR]   (default build-asan; ccache makes reruns quick)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build-asan}
start=$(date +%s)
mkdir -p "$BUILD"
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTENSORSCOPE_BUILD_GUI=OFF \
  -DTENSORSCOPE_SANITIZE=ON -DTENSORSCOPE_ENABLE_PCH=OFF > "$BUILD/configure.log"
cmake --build "$BUILD" -j "$(nproc)" --target spec_tests kernels_tests
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:strict_string_checks=1
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
"$BUILD/tests/spec_tests" --gtest_brief=1
"$BUILD/tests/kernels_tests" --gtest_brief=1
echo "sanitizers: spec_tests and kernels_tests clean under ASan + UBSan ($(( $(date +%s) - start )) s)"
