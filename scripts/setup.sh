#!/usr/bin/env bash
# Installs every Debian 12 package Tensorscope needs to build, test and run. Idempotent.
# As root it installs; otherwise it prints the exact command to run and exits non-zero.
set -euo pipefail

PACKAGES=(
  # toolchain
  build-essential cmake ninja-build pkg-config ccache git
  # libFuzzer harnesses of the readers (scripts/fuzz.sh): clang and its sanitizer/fuzzer runtimes
  clang libclang-rt-14-dev
  # Qt 6: Widgets, Svg, PrintSupport, Concurrent, Test
  qt6-base-dev qt6-svg-dev libqt6svg6 libgl-dev
  # LibTorch (CPU) and a fast BLAS: Debian's reference BLAS makes GEMM ~17x slower
  libtorch-dev libopenblas0-openmp
  # plotting, graph layout, tests, JSON, compression
  libqcustomplot-dev libqcustomplot2.1-qt6 libgraphviz-dev graphviz
  libgtest-dev libgmock-dev nlohmann-json3-dev zlib1g-dev
  # GUI tests and screenshots, fonts for legible rendering
  xvfb xauth fonts-dejavu-core
  # PyTorch (same 1.13) to prove exported files load in Python; poppler and xmllint for export checks
  python3-torch python3-numpy poppler-utils libxml2-utils
  # real data sets used by the training tasks
  dataset-fashion-mnist bible-kjv
  # the Debian package and desktop integration (issue 20): dpkg-shlibdeps, the desktop entry's and
  # AppStream's validators, man, lintian
  dpkg-dev desktop-file-utils appstream man-db lintian
  # sweeps on Slurm (issue 14): a real single-node cluster for the tests (tests/slurm); no service
  # is started by installing them (the test starts its own daemons in a temporary directory)
  slurm-wlm slurmctld slurmd slurm-client munge
)

missing=()
for p in "${PACKAGES[@]}"; do
  if [ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)" != "install ok installed" ]; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#PACKAGES[@]} packages present"
else
  if [ "$(id -u)" -ne 0 ]; then
    echo "setup: missing packages; run as root:" >&2
    echo "  sudo apt-get update && sudo apt-get install -y --no-install-recommends ${missing[*]}" >&2
    exit 1
  fi
  echo "setup: installing ${#missing[@]} packages: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# LibTorch must use OpenBLAS, not the reference BLAS (measured 4.3 vs 76 GFLOP/s per core).
if [ "$(id -u)" -eq 0 ]; then
  arch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || echo x86_64-linux-gnu)
  for alt in libblas.so.3 liblapack.so.3; do
    cand="/usr/lib/$arch/openblas-openmp/$alt"
    if [ -e "$cand" ]; then
      update-alternatives --set "$alt-$arch" "$cand" >/dev/null 2>&1 || true
    fi
  done
fi
echo "setup: BLAS in use: $(readlink -f /usr/lib/*/libblas.so.3 2>/dev/null | head -1)"
