#!/usr/bin/env bash
# Projection agrees with measured multi-rank training on this machine (issue #4):
#   1. measure the collectives the dense splits use (2 ranks, one node, scope intra);
#   2. train small-dense for real at dp2, tp2 and pp2 (ibt train, 5 steps, the first
#      excluded as warm-up);
#   3. calibrate a topology from the collectives run plus the dp2 train run ONLY
#      (fit.h5); the tp2 and pp2 runs (held.h5) are reported as held out;
#   4. ibt project-compare the held-out runs on the calibrated topology: exit 1 when a
#      projected step time is off by more than BOUND percent, naming the component that
#      differs most.
# Measured figures (this 2-core machine, 2026-11-23, while 4 other sessions built and
# ran MPI tests: load average 7-11, so NOT an idle machine), held-out runs, fastest
# timed step, measured -> projected step time:
#   run A: tp2 1.342 s -> 1.077 s (-19.8%, worst: tp comm 0.309 measured vs 0.013 s);
#          pp2 2.901 s -> 2.853 s (-1.7%, worst: compute +0.128 s)
#   run B: tp2 1.610 s -> 1.166 s (-27.6%, worst: tp comm 0.384 vs 0.010 s);
#          pp2 3.302 s -> 3.100 s (-6.1%, worst: pp+bubble -0.132 s)
#   run C: tp2 1.037 s -> 1.084 s (+4.6%); pp2 2.522 s -> 2.873 s (+13.9%)
# Compute alone (what the fit targets), held out: tp2 +7% to +15%, pp2 +1.5% to +6.5%
# (runs A, B; run C, whose fit run was slowed by the load: +46% and +22%). Under load
# the TP all-reduces wait for a peer that has lost its core (0.3-0.4 s per step where
# the calibrated collectives predict 0.01 s): that is the machine's load, not the model,
# and an idle machine (CI runs this test alone, RUN_SERIAL) does not have it. The bound
# stays at the issue's starting 20% until figures from an idle machine allow less.
# Usage: agreement_test.sh IBT "MPIRUN WORDS" DIR BOUND
set -u
ibt=$1
read -r -a mpirun <<<"$2"
dir=$3
bound=$4
rm -rf "$dir" && mkdir -p "$dir"
fail() { echo "agreement_test: $*" >&2; exit 1; }
"${mpirun[@]}" -n 2 "$ibt" collectives --op all_reduce,all_gather,reduce_scatter,send_recv --scope intra \
  -b 8 -e 64M -f 4 -n 10 -w 2 --out "$dir/fit.h5" >"$dir/collectives.log" 2>&1 ||
  { cat "$dir/collectives.log"; fail "ibt collectives failed"; }
train() {  # FILE split options...
  local file=$1
  shift
  "${mpirun[@]}" -n 2 "$ibt" train --model small-dense --steps 5 "$@" --out "$file" || fail "ibt train $* failed"
}
# Microbatches of 2 sequences: half as many TP all-reduces and pipeline exchanges per
# second of compute as with 1, so a peer descheduled by another process (each
# synchronisation then waits a scheduler slice) weighs half as much.
train "$dir/fit.h5" --dp 2 --microbatches 1 --micro-batch-size 2
train "$dir/held.h5" --tp 2 --microbatches 1 --micro-batch-size 2
train "$dir/held.h5" --pp 2 --microbatches 2 --micro-batch-size 2
"$ibt" calibrate "$dir/fit.h5" "$dir/held.h5" --fit-train "$dir/fit.h5" --out "$dir/calibrated.json" ||
  fail "ibt calibrate failed"
"$ibt" project-compare "$dir/held.h5" --topology "$dir/calibrated.json" --bound "$bound"
rc=$?
[[ $rc -eq 0 ]] || fail "projection differs from the measured runs by more than $bound% (status $rc)"
echo "agreement_test: ok (bound $bound%)"
