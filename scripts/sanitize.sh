#!/usr/bin/env bash
# AddressSanitizer + UndefinedBehaviorSanitizer build of ibt and its unit tests, then the
# unit tests (ctest -L unit) and the fault-injection tests (ctest -L faults) under them.
# Usage: scripts/sanitize.sh [BUILD_DIR]   (default build-asan; takes a full build)
set -euo pipefail
build=${1:-build-asan}
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DIBT_WITH_CUDA=OFF \
  -DCMAKE_CXX_FLAGS="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined" \
  -DCMAKE_C_FLAGS="-fsanitize=address,undefined -fno-omit-frame-pointer" \
  -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" ${CMAKE_LAUNCHER_FLAGS:-}
cmake --build "$build" -j"$(nproc)"
# MPI and UCX keep allocations until exit by design: leaks are not what this checks.
export ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
ctest --test-dir "$build" -L unit -j"$(nproc)" --output-on-failure
ctest --test-dir "$build" -L faults --output-on-failure
