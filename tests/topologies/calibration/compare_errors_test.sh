#!/usr/bin/env bash
# Bad input to `ibt calibrate` / `ibt project-compare` is exit status 2 with a message
# naming the problem -- in particular a measured 4-rank run projected on a topology
# calibrated from a 2-rank (one-domain) collectives run: its DP group would span two
# domains of a topology without scale-out figures, and that must be an error naming
# them, never a free transfer.
# Usage: compare_errors_test.sh IBT "MPIRUN WORDS" DIR EXPECT_EXIT
set -u
ibt=$1
read -r -a mpirun <<<"$2"
dir=$3
expect=$4
rm -rf "$dir" && mkdir -p "$dir"
fail() { echo "compare_errors_test: $*" >&2; exit 1; }
"${mpirun[@]}" -n 2 "$ibt" collectives --op all_reduce,send_recv --scope intra -b 8 -e 64K -f 8 -n 2 -w 1 \
  --out "$dir/c.h5" >/dev/null || fail "ibt collectives failed"
"${mpirun[@]}" -n 4 "$ibt" train --model tiny-dense --dp 4 --steps 2 --out "$dir/t.h5" >/dev/null ||
  fail "ibt train failed"
"$ibt" calibrate "$dir/c.h5" --out "$dir/cal.json" | grep -q "no train run to fit" || fail "calibrate without train runs"
"$expect" 2 "scale_out.bandwidth_GBps" "$ibt" project-compare "$dir/t.h5" --topology "$dir/cal.json" || exit 1
# t.h5 is 4 ranks: on fewer than 4 cores refused as oversubscribed; allowed, refused for its spanning group.
(( $(getconf _NPROCESSORS_ONLN) >= 4 )) || "$expect" 2 "oversubscribed measurements: .*t.h5:000001 \\(4 ranks on [0-9]+ cores" \
  "$ibt" calibrate "$dir/c.h5" "$dir/t.h5" --out "$dir/x.json" || exit 1
"$expect" 2 "scale_out.bandwidth_GBps" "$ibt" calibrate "$dir/c.h5" "$dir/t.h5" --allow-oversubscribed \
  --out "$dir/x.json" || exit 1
"$expect" 2 "has no run '000042'" "$ibt" project-compare "$dir/t.h5:000042" --topology "$dir/cal.json" || exit 1
"$expect" 2 "holds no complete" "$ibt" project-compare "$dir/c.h5" --topology "$dir/cal.json" || exit 1
"$expect" 2 "no collectives run" "$ibt" calibrate "$dir/t.h5" --out "$dir/y.json" || exit 1
"$expect" 2 "holds no complete" "$ibt" calibrate "$dir/c.h5" --fit-train "$dir/c.h5" --out "$dir/z.json" || exit 1
"$expect" 2 "give at least one" "$ibt" project-compare || exit 1
# A run made with --check (its times include the serial reference) is not fitted.
"${mpirun[@]}" -n 2 "$ibt" train --model tiny-dense --dp 2 --steps 2 --check --out "$dir/k.h5" >/dev/null ||
  fail "ibt train --check failed"
"$ibt" calibrate "$dir/c.h5" "$dir/k.h5" --out "$dir/k.json" | grep -q "not fitted (made with --check" ||
  fail "calibrate fitted a --check run"
"$expect" 2 "made with --check" "$ibt" calibrate "$dir/c.h5" --fit-train "$dir/k.h5" --out "$dir/w.json" || exit 1
[[ ! -e "$dir/x.json" && ! -e "$dir/y.json" && ! -e "$dir/z.json" ]] || fail "a failed calibration wrote a file"
echo "compare_errors_test: ok"
