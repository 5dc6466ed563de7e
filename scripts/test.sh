#!/usr/bin/env bash
# The README's second command (and CI's): set up, build from scratch, run every test.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cd build
ctest --output-on-failure --timeout 900 -j2 "$@"
