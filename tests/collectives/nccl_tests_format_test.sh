#!/usr/bin/env bash
# `ibt collectives --output-format nccl-tests` is read by the same rule as a nccl-tests log
# (nccl_tests_log_rule.awk): first the sample log of nccl-tests' documented format
# (data/README.md says where the format is from), then ibt's output for several ops and
# scopes. Every line must follow the rule, every test must have rows, its "Avg bus
# bandwidth" must be the mean of its rows' busbw, and the column names and units the rows
# are read by must be the same in both.
# Usage: nccl_tests_format_test.sh IBT "MPIRUN WORDS" DIR
set -euo pipefail
ibt=$1; read -r -a mpirun <<<"$2"; dir=$3
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$dir"

check() {  # FILE MIN_TESTS
  local summary
  summary=$(awk -f "$here/nccl_tests_log_rule.awk" "$1")
  echo "$summary"
  if grep -q '^BAD' <<<"$summary"; then echo "FAIL: $1 has lines nccl-tests parsers would not read"; exit 1; fi
  local tests
  grep '^FIELDS\|^UNITS' <<<"$summary" | sort -u > "$dir/$(basename "$1").fields"
  tests=$(grep -c 'rows=' <<<"$summary" || true)
  if (( tests < $2 )); then echo "FAIL: $1: $tests tests, expected at least $2"; exit 1; fi
  awk '{ split($2, r, "="); split($3, a, "="); split($4, c, "=");
         if (r[2] < 1) { print "FAIL: no rows in " $1; exit 1 }
         d = a[2] - c[2]; if (d < 0) d = -d
         if (d > 0.01 + 0.01 * c[2]) { print "FAIL: " $1 " avg " a[2] " != mean of rows " c[2]; exit 1 } }' \
    < <(grep 'rows=' <<<"$summary")
}

check "$here/data/nccl_tests_all_reduce_8gpu.log" 1
"${mpirun[@]}" -n 4 "$ibt" collectives --output-format nccl-tests -n 2 -w 1 -b 8 -e 64K -f 8 \
  --op all_reduce,all_gather,broadcast,send_recv,ping_pong --scope all --domain-size 2 > "$dir/ibt.log"
cat "$dir/ibt.log"
check "$dir/ibt.log" 12
# The same fields: ibt's column names and units are the sample's, word for word (the
# 13-field rows are then read by the same positions).
sample_fields="$dir/nccl_tests_all_reduce_8gpu.log.fields"
[[ $(wc -l < "$sample_fields") -eq 2 ]] || { echo "FAIL: the sample has no single header"; cat "$sample_fields"; exit 1; }
cmp "$sample_fields" "$dir/ibt.log.fields" || { echo "FAIL: ibt's columns differ from nccl-tests'"; diff "$sample_fields" "$dir/ibt.log.fields"; exit 1; }
grep -q '^# Collective test starting: all_reduce_perf' "$dir/ibt.log"
grep -q '^# Collective test starting: sendrecv_perf' "$dir/ibt.log"
# Every test names its 4 ranks under "# Using devices" and starts with a version line, as
# nccl-tests >= 2.13 (parsers that key on them split the log into one block per test).
summary=$(awk -f "$here/nccl_tests_log_rule.awk" "$dir/ibt.log")
grep 'rows=' <<<"$summary" | grep -v ' ranks=4 ' && { echo "FAIL: a test without its 4 rank lines"; exit 1; }
grep 'rows=' <<<"$summary" | grep ' version=- ' && { echo "FAIL: a test without its version line"; exit 1; }
# NCCL_TESTS_MIN_BW: below 90% of it the Avg line says FAILED and the exit status is 1;
# above it, OK and 0 (nccl-tests' rule).
set +e
NCCL_TESTS_MIN_BW=100000 "${mpirun[@]}" -n 2 "$ibt" collectives --output-format nccl-tests -n 2 -w 1 -b 8 -e 1K \
  --op all_reduce > "$dir/minbw_fail.log" 2>&1
status=$?
set -e
cat "$dir/minbw_fail.log"
(( status == 1 )) || { echo "FAIL: NCCL_TESTS_MIN_BW=100000: exit $status, expected 1"; exit 1; }
awk -f "$here/nccl_tests_log_rule.awk" "$dir/minbw_fail.log" | grep -q 'min_bw=FAILED' ||
  { echo "FAIL: no FAILED on the Avg bus bandwidth line"; exit 1; }
NCCL_TESTS_MIN_BW=0 "${mpirun[@]}" -n 2 "$ibt" collectives --output-format nccl-tests -n 2 -w 1 -b 8 -e 1K \
  --op all_reduce > "$dir/minbw_ok.log"
awk -f "$here/nccl_tests_log_rule.awk" "$dir/minbw_ok.log" | grep -q 'min_bw=OK' ||
  { echo "FAIL: no OK on the Avg bus bandwidth line"; exit 1; }
echo PASS
