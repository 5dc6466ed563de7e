#!/usr/bin/env bash
# The README's second command (and CI's): set up, build from scratch, run every test.
set -euo pipefail
cd "$(dirname "$0")/.."
# Warnings are errors here (and so in CI): the build is warning-free with the stricter
# flags of CMakeLists.txt's ibt_warnings, and must stay so.
IBT_CMAKE_ARGS="-DIBT_WERROR=ON ${IBT_CMAKE_ARGS:-}" scripts/setup.sh
cd build
ctest --output-on-failure --timeout 900 -j2 "$@"
