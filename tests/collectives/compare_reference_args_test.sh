#!/usr/bin/env bash
# Bad input to the IMB reference pair (issue 41) is refused with a message naming it:
# plain_mpi_loop exits 2 with its usage on an unknown op, a bad size or flag, or ping-pong
# on other than 2 ranks; compare_reference.py exits 2 naming the argument (a band that is
# not LO:HI around 1, sizes out of range, an unknown op, a missing executable); and a
# failing launch is reported with the command and its status, not a traceback.
# Usage: compare_reference_args_test.sh IBT PLAIN "MPIRUN WORDS" SCRIPT
set -u
ibt=$1 plain=$2 script=$4
read -r -a mpirun <<<"$3"
fail() { echo "compare_reference_args_test: FAIL: $*" >&2; exit 1; }

# expect STATUS PATTERN CMD...: CMD exits STATUS and its stderr matches PATTERN.
expect() {
  local want=$1 pattern=$2 out status=0
  shift 2
  out=$("$@" 2>&1 >/dev/null) || status=$?
  ((status == want)) || fail "$* exited $status (expected $want): $out"
  grep -Eq -e "$pattern" <<<"$out" || fail "$*: the message does not match '$pattern': $out"
}

expect 2 "usage: plain_mpi_loop" "${mpirun[@]}" -n 2 "$plain" bogus 10 8
expect 2 "bad argument '7'" "${mpirun[@]}" -n 2 "$plain" allreduce 10 7
expect 2 "bad argument '--nope'" "${mpirun[@]}" -n 2 "$plain" allreduce 10 8 --nope
expect 2 "usage: plain_mpi_loop" "${mpirun[@]}" -n 2 "$plain" allreduce 0 8
expect 2 "usage: plain_mpi_loop" "${mpirun[@]}" -n 2 "$plain" allreduce 10 8 --alloc huge
expect 2 "usage: plain_mpi_loop" "${mpirun[@]}" -n 1 "$plain" pingpong 10 8
# A good run prints one line per size: op, bytes, a positive time.
out=$("${mpirun[@]}" -n 2 "$plain" allreduce 5 8 1024) || fail "plain_mpi_loop allreduce failed: $out"
[[ $(grep -cE '^allreduce (8|1024) [0-9]+\.[0-9]+$' <<<"$out") == 2 ]] || fail "unexpected output: $out"

py=(/usr/bin/python3 "$script")
expect 2 "--gross: '2:1'" "${py[@]}" "$ibt" "$plain" --gross 2:1
expect 2 "--gross: 'x'" "${py[@]}" "$ibt" "$plain" --gross x
expect 2 "--lo <= --hi" "${py[@]}" "$ibt" "$plain" --lo 10 --hi 5
expect 2 "--lo <= --hi" "${py[@]}" "$ibt" "$plain" --hi 40
expect 2 "unknown op gather" "${py[@]}" "$ibt" "$plain" --ops gather
expect 2 "--reps must be at least 1" "${py[@]}" "$ibt" "$plain" --reps 0
expect 2 "plain_mpi_loop executable not found" "${py[@]}" "$ibt" /nonexistent/plain
expect 2 "no op left" "${py[@]}" "$ibt" "$plain" --ranks 3 --ops ping_pong
expect 1 "exited [0-9]+:" "${py[@]}" "$ibt" "$plain" --mpiexec /bin/false --reps 1
# The gross band can fail: a reference whose every time reads 100x (as a harness that timed
# the wrong thing would) puts every repetition of every cell near 0.01. (At 8x, near 0.125,
# one repetition of a 5-iteration cell read about 0.52 under CI's load: median 0.344 of 2
# repetitions with a 102% spread.)
slow=$(mktemp -d)/plain_times_100
trap 'rm -rf "$(dirname "$slow")"' EXIT
printf '#!/bin/sh\n"%s" "$@" | awk '"'"'{ $3 = $3 * 100; print }'"'"'\n' "$plain" >"$slow"
chmod +x "$slow"
out=$("${py[@]}" "$ibt" "$slow" --mpiexec "${mpirun[*]}" --reps 2 --iters 5 --lo 10 --hi 12 --ops all_reduce 2>&1)
(($? == 1)) || fail "100x slower reference: not failed: $out"
grep -q "FAILED: 3 cell(s) outside the gross band 0.5-2 in every repetition" <<<"$out" ||
  fail "100x slower reference: the message does not name the cells: $out"
echo "compare_reference_args_test: ok"
