#!/usr/bin/env bash
# The calibration takes its domain layout from the collectives run (calibration_layout.hpp):
#   1. 4 ranks declared as 2 domains of 2 (--domain-size 2): the calibrated topology has a
#      2-device domain and a scale_out derived from the inter fits (source calibration);
#   2. a measured dp4 run -- a group spanning both domains, 2 ranks in each, which has no
#      fit of its own -- is projected on it (before, such a group was refused: no
#      scale_out), its dp communication priced above zero;
#   3. inputs measured on different layouts (2 domains of 2 and one domain of 2) are
#      refused with status 2 naming both files, and nothing is written.
# Usage: calibration_layout_test.sh IBT "MPIRUN WORDS" DIR EXPECT_EXIT
set -u
ibt=$1
read -r -a mpirun <<<"$2"
dir=$3
expect=$4
rm -rf "$dir" && mkdir -p "$dir"
fail() { echo "calibration_layout_test: $*" >&2; exit 1; }
"${mpirun[@]}" -n 4 "$ibt" collectives --op all_reduce,send_recv --scope all --domain-size 2 -b 1K -e 256K -f 4 \
  -n 2 -w 1 --out "$dir/d2.h5" >"$dir/d2.log" 2>&1 || { cat "$dir/d2.log"; fail "ibt collectives (2 domains) failed"; }
"${mpirun[@]}" -n 2 "$ibt" collectives --op all_reduce,send_recv --scope intra -b 1K -e 256K -f 4 -n 2 -w 1 \
  --out "$dir/d1.h5" >/dev/null 2>&1 || fail "ibt collectives (1 domain) failed"
"${mpirun[@]}" -n 4 "$ibt" train --model tiny-dense --dp 4 --steps 2 --out "$dir/t.h5" >/dev/null 2>&1 ||
  fail "ibt train failed"
# d2.h5 is 4 ranks: on fewer than 4 cores refused as oversubscribed unless allowed (the
# layout is what this test checks, not the fit's quality).
(( $(getconf _NPROCESSORS_ONLN) >= 4 )) || "$expect" 2 "oversubscribed measurements: .*d2.h5:000001 \\(4 ranks on [0-9]+ cores .*--allow-oversubscribed" \
  "$ibt" calibrate "$dir/d2.h5" --out "$dir/refused.json" || exit 1
[[ ! -e "$dir/refused.json" ]] || fail "a refused calibration wrote a file"
"$ibt" calibrate "$dir/d2.h5" --allow-oversubscribed --out "$dir/d2.json" >"$dir/calibrate.log" 2>&1 ||
  { cat "$dir/calibrate.log"; fail "ibt calibrate failed"; }
grep -q "^scale-up domain: 2 devices (calibration); scale-out: calibrated scale-out network (send_recv inter n=2 fit)" \
  "$dir/calibrate.log" || { cat "$dir/calibrate.log"; fail "the calibration did not take 2 domains of 2 and an inter-fitted scale-out"; }
"$ibt" project-compare "$dir/t.h5" --topology "$dir/d2.json" --bound 1000000 >"$dir/compare.log" 2>&1 ||
  { cat "$dir/compare.log"; fail "project-compare of dp4 over 2 domains failed"; }
awk '$1 == "dp" { found = 1; if (!($3 > 0)) exit 1 } END { exit !found }' "$dir/compare.log" ||
  { cat "$dir/compare.log"; fail "the spanning dp4 group was not priced (projected dp time not > 0)"; }
"$expect" 2 "different domain layouts: .*d2.h5 \\(4 ranks in 2 domain\\(s\\)\\) and .*d1.h5 \\(2 ranks in 1 domain\\(s\\)\\)" \
  "$ibt" calibrate "$dir/d2.h5" "$dir/d1.h5" --allow-oversubscribed --out "$dir/mixed.json" || exit 1
[[ ! -e "$dir/mixed.json" ]] || fail "a refused calibration wrote a file"
echo "calibration_layout_test: ok"
