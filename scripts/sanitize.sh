#!/usr/bin/env bash
# AddressSanitizer + UndefinedBehaviorSanitizer build of the GoogleTest unit-test binaries
# only (not ibt itself, not the mpiexec tests: those take a full build and an hour on a
# small machine), in a build directory of its own, then every unit test under them.
# Usage: scripts/sanitize.sh [BUILD_DIR]   (default build-asan)
# JOBS=N sets the build's parallelism (default: nproc). Exit status: the tests' (0 = clean).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-asan}
jobs=${JOBS:-$(nproc)}
# The GoogleTest binaries of tests/*/CMakeLists.txt (ibt_unit_test); gpu_tests only exists
# in a CUDA build.
targets=(collectives_unit_test collectives_nccl_tests_test topologies_hardware_test topologies_sim_test
         topologies_goodput_test topologies_calibration_test topologies_studies_test report_unit_test
         plan_tests engine_tests reports_store_test reports_export_test checkpoint_unit_test)
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
flags="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined"
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DIBT_WITH_CUDA=OFF "${launcher[@]}" \
  -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_C_FLAGS="$flags" \
  -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" >/dev/null
cmake --build "$build" --target "${targets[@]}" -j"$jobs"
# MPI and UCX keep allocations until exit by design: leaks are not what this checks.
export ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
status=0
for t in "${targets[@]}"; do
  binary=$(find "$build/tests" -type f -name "$t" -perm -u+x | head -1)
  [[ -n $binary ]] || { echo "sanitize: $t was not built" >&2; status=1; continue; }
  echo "== $t"
  # Run from the source root: some tests read catalog files relative to it.
  "$binary" --gtest_brief=1 || status=$?
done
echo "sanitize: exit status $status"
exit $status
