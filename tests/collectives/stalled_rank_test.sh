#!/usr/bin/env bash
# A rank that stops arriving must end the job within --timeout, with a message naming it,
# the run marked failed and the rows measured before it still in the file. The file is
# read back with h5dump, independently of ibt's own reader.
set -u
ibt=$1
read -r -a mpirun <<<"$2"
dir=$3
rm -rf "$dir" && mkdir -p "$dir"
file=$dir/stall.h5
start=$(date +%s)
output=$("${mpirun[@]}" -n 3 "$ibt" collectives -n 2 -w 1 --op all_reduce --scope world -b 8 -e 64 --placement out \
  -T 3 --inject-stall 1:2 --out "$file" 2>&1)
status=$?
elapsed=$(($(date +%s) - start))
printf '%s\n' "$output"
fail() { echo "stalled_rank_test: $*" >&2; exit 1; }
[[ $status -ne 0 ]] || fail "the job exited 0"
grep -q "rank 1 did not arrive" <<<"$output" || fail "the message does not name rank 1"
grep -q "before all_reduce (scope world, float32, 32 B)" <<<"$output" || fail "the message does not name op, scope and size"
((elapsed < 40)) || fail "took ${elapsed}s with a 3 s timeout"
h5dump -a /runs/000001/status "$file" | grep -q '"failed"' || fail "run not marked failed"
rows=$(h5dump -H -d /runs/000001/collectives "$file" | grep -o 'SIMPLE { ( [0-9]* )' | grep -o '[0-9]*')
[[ $rows == 2 ]] || fail "expected the 2 rows measured before the stall, found '$rows'"
echo "stalled_rank_test: ok (ended after ${elapsed}s, status $status, $rows rows kept, run failed)"

# The same rank stalling inside the op: every rank had arrived, so the watchdog ends it.
file=$dir/hang.h5
output=$("${mpirun[@]}" -n 3 "$ibt" collectives -n 2 -w 1 --op all_reduce --scope world -b 8 -e 64 --placement out \
  -T 3 --inject-stall 1:2:inside --out "$file" 2>&1)
status=$?
printf '%s\n' "$output"
[[ $status -ne 0 ]] || fail "the hung job exited 0"
grep -q "timed out after 3 s in all_reduce (scope world, float32, 32 B, out-of-place)" <<<"$output" || fail "no watchdog message"
# The harness makes the op through a prepared call (prepared_call.hpp), which publishes the
# MPI call in flight as the communicator's methods do.
grep -q "inside MPI_Allreduce on a group (world ranks 0, 1, 2)" <<<"$output" || fail "the message does not name the MPI call in flight"
h5dump -a /runs/000001/status "$file" | grep -q '"failed"' || fail "hung run not marked failed"
h5dump -a /runs/000001/error "$file" | grep -q 'stall is inside the operation' || fail "hung run has no error message"
echo "stalled_rank_test: ok (watchdog ended the hung op, status $status)"
