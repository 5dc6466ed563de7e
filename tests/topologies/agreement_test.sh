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
train "$dir/fit.h5" --dp 2 --microbatches 2
train "$dir/held.h5" --tp 2 --microbatches 2
train "$dir/held.h5" --pp 2 --microbatches 4
"$ibt" calibrate "$dir/fit.h5" "$dir/held.h5" --fit-train "$dir/fit.h5" --out "$dir/calibrated.json" ||
  fail "ibt calibrate failed"
"$ibt" project-compare "$dir/held.h5" --topology "$dir/calibrated.json" --bound "$bound"
rc=$?
[[ $rc -eq 0 ]] || fail "projection differs from the measured runs by more than $bound% (status $rc)"
echo "agreement_test: ok (bound $bound%)"
