#!/usr/bin/env bash
# layering_faults_test.sh SOURCE: the layering check can fail. Copies the tracked sources
# of SOURCE to a scratch folder, checks that the clean copy passes, then injects one fault
# of each kind the check knows (a library including a folder above it, a test reaching above
# its folder, a link to a library above, a folder the block does not name) and checks that
# each is reported by file and line and that the check exits 1; then a badly formatted
# line, which the clang-format check must name.
set -euo pipefail
src=$(cd "$1" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd "$src" && git ls-files -z --cached --others --exclude-standard | xargs -0 cp --parents -t "$work" 2>/dev/null) ||
  (cd "$src" && tar --exclude=./build --exclude=./.git --exclude=./results -cf - . | tar -xf - -C "$work")
check="python3 $work/scripts/check_layering.py $work"

$check >/dev/null || { echo "FAIL: the clean tree does not pass"; $check; exit 1; }

echo '#include "cli/cli.hpp"' >> "$work/core/stats.cpp"
plan_test=$(cd "$work" && ls tests/models/plan/*_test.cpp | head -1)
echo '#include "topologies/sim/sim_fast.hpp"' >> "$work/$plan_test"
sed -i 's/target_link_libraries(ibt_runtime PUBLIC ibt_collectives ibt_store)/target_link_libraries(ibt_runtime PUBLIC ibt_collectives ibt_store ibt_projection)/' \
  "$work/collectives/runtime/CMakeLists.txt"
mkdir "$work/unlisted" && echo 'int unlisted;' > "$work/unlisted/a.cpp"

set +e
out=$($check 2>&1)
rc=$?
set -e
echo "$out"
[[ $rc -eq 1 ]] || { echo "FAIL: exit $rc, expected 1"; exit 1; }
expect() { grep -qF -- "$1" <<<"$out" || { echo "FAIL: no line saying: $1"; exit 1; }; }
expect 'core/stats.cpp:'
expect 'includes "cli/cli.hpp" of cli/, which core/ may not reach'
expect "$plan_test:"
expect 'which models/plan/ may not reach'
expect 'collectives/runtime/CMakeLists.txt:'
expect 'ibt_runtime links ibt_projection of topologies/projection/'
expect 'unlisted/a.cpp: in no folder of the layering block'
expect 'check_layering: 4 fault(s)'
# The formatting check fails too: a line clang-format would change.
here=$(cd "$(dirname "$0")" && pwd)
printf 'int   badly_formatted ( ) { return 0 ; }\n' >> "$work/core/stats.cpp"
set +e
fmt=$("$here/clang_format_test.sh" "$work" 2>&1)
frc=$?
set -e
[[ $frc -eq 1 ]] || { echo "$fmt"; echo "FAIL: clang_format_test exit $frc on a badly formatted file, expected 1"; exit 1; }
grep -qF "not formatted: core/stats.cpp" <<<"$fmt" || { echo "$fmt"; echo "FAIL: the unformatted file is not named"; exit 1; }
echo "PASS: every injected fault was named, the unformatted file too"
