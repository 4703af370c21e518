#!/usr/bin/env bash
# Fills a folder with what the headless build needs and a GPU machine without network may lack:
# GoogleTest's sources, nlohmann-json's headers and zlib's headers, copied from this (Debian 12)
# machine's packages (googletest, nlohmann-json3-dev, zlib1g-dev; scripts/setup.sh installs them),
# and the King James text the training benchmark's reference model reads (package bible-kjv), as
# the task cache cache/tensorscope/kjv-bible.txt that gpu-check.sh points XDG_CACHE_HOME at.
# Pass the folder to scripts/gpu-check.sh --deps DIR (CMake: -DTENSORSCOPE_DEPS_DIR=DIR).
#
#   scripts/gpu-deps.sh DIR
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: $0 DIR" >&2; exit 2; }
dir=$1
for f in /usr/src/googletest/CMakeLists.txt /usr/include/nlohmann/json.hpp /usr/include/zlib.h /usr/include/zconf.h; do
  [ -e "$f" ] || { echo "$0: $f is missing: install googletest, nlohmann-json3-dev and zlib1g-dev" >&2; exit 1; }
done
rm -rf "$dir/googletest" "$dir/nlohmann" "$dir/zlib"
mkdir -p "$dir/nlohmann/include" "$dir/zlib"
cp -r /usr/src/googletest "$dir/googletest"
cp -r /usr/include/nlohmann "$dir/nlohmann/include/nlohmann"
cp /usr/include/zlib.h /usr/include/zconf.h "$dir/zlib/"
# The same extraction as model_core's loadKingJamesBible (tasks/data_sources.h).
if command -v bible >/dev/null; then
  mkdir -p "$dir/cache/tensorscope"
  bible -f "Gen1:1-Rev22:21" >"$dir/cache/tensorscope/kjv-bible.txt.tmp" </dev/null &&
    mv "$dir/cache/tensorscope/kjv-bible.txt.tmp" "$dir/cache/tensorscope/kjv-bible.txt"
else
  echo "$0: no \`bible\` (package bible-kjv): the training benchmark will not find its corpus" >&2
fi
du -sh "$dir" | awk '{print "gpu-deps: " $1 " in " $2}'
