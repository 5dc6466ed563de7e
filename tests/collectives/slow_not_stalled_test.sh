#!/usr/bin/env bash
# Slow is not stalled: one measurement of 205 calls of a 16 MiB all-reduce (about 7 s on
# 2 cores) under -T 2 finishes, because every completed call moves the watchdog's deadline
# on; before, the watchdog gave the whole measurement -T and ended the job with exit 3.
# The whole measurement must have taken longer than -T, or the test proves nothing.
# Usage: slow_not_stalled_test.sh IBT "MPIRUN WORDS" DIR
set -u
ibt=$1; read -r -a mpirun <<<"$2"; dir=$3
mkdir -p "$dir"
start=$(date +%s.%N)
"${mpirun[@]}" -n 2 "$ibt" collectives -b 16M -e 16M --op all_reduce --placement out -n 200 -w 5 -T 2 \
  > "$dir/out.log" 2>&1
status=$?
elapsed=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
cat "$dir/out.log"
[[ $status -eq 0 ]] || { echo "FAIL: exit $status: a progressing measurement was taken for a stall"; exit 1; }
grep -q '^  all_reduce .* 16777216 ' "$dir/out.log" || { echo "FAIL: no 16 MiB row"; exit 1; }
awk -v e="$elapsed" 'BEGIN { exit !(e > 2) }' || { echo "FAIL: the job took ${elapsed} s, not longer than -T"; exit 1; }
echo "slow_not_stalled_test: ok (${elapsed} s under -T 2)"
