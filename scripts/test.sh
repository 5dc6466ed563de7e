#!/usr/bin/env bash
# The README's second command (and CI's): set up, build from scratch, run every test.
set -euo pipefail
cd "$(dirname "$0")/.."
# Warnings are errors here (and so in CI): the build is warning-free with the stricter
# flags of CMakeLists.txt's ibt_warnings, and must stay so.
# Line tables only (-g1): the same optimised code, a third less compile time, which CI's
# 30 minutes on 2 cores need (CMakeLists.txt, IBT_LINE_TABLES_ONLY).
IBT_CMAKE_ARGS="-DIBT_WERROR=ON -DIBT_LINE_TABLES_ONLY=ON ${IBT_CMAKE_ARGS:-}" scripts/setup.sh
cd build
ctest --output-on-failure --timeout 900 -j2 "$@"
