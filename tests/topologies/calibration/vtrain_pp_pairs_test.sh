#!/usr/bin/env bash
# The PP verdict checked on the vTrain groups measured with and without PP
# (ibt_validate_vtrain --pp-pairs, topologies/calibration/pp_pairs.hpp): the summary's
# format, the agreement counted from the per-group projections it printed, known groups'
# verdicts (a change of the projection that flips one fails here), and bad input (a
# missing or damaged vTrain file, bad --groups / --threshold) exits 2 naming it.
# Usage: vtrain_pp_pairs_test.sh VALIDATE_VTRAIN DATA_DIR FITTED_TOPOLOGY WORK_DIR EXPECT_EXIT
set -u
exe=$1 data=$2 fitted=$3 dir=$4 expect=$5
rm -rf "$dir" && mkdir -p "$dir"
fail() { echo "vtrain_pp_pairs_test: $*" >&2; exit 1; }

# check_run TOPOLOGY: all 122 groups, their summary, and its agreement recounted
# from the group lines (a group agrees unless its line says "(measured: the other)").
check_run() {
  out=$("$exe" --dir "$data" --topology "$1" --pp-pairs --verbose) || fail "--pp-pairs on $1 failed"
  printf '%s\n' "$out" >"$dir/$(basename "$1").txt"
  grep -Eq "^PP verdict on .*, 122 groups measured with and without PP \(verdict: gain > 5%\):$" <<<"$out" ||
    fail "$1: no summary header"
  grep -Eq "^  said PP not needed where PP won: [0-9]+; said PP needed where it did not: [0-9]+$" <<<"$out" ||
    fail "$1: no confusion line"
  grep -Eq "^  best split among the measured: top-1 [0-9]+/122 \([0-9]+%\), regret median [0-9.]+%, p90 [0-9.]+%$" \
    <<<"$out" || fail "$1: no best-split line"
  grep -Eq "^  gain error \(projected - measured gain, points\): median [-+][0-9.]+, p10 [-+][0-9.]+, p90 [-+][0-9.]+, \|err\| p80 [0-9.]+$" \
    <<<"$out" || fail "$1: no gain-error line"
  groups=$(grep -c "^  gpus .* splits " <<<"$out")
  [[ $groups == 122 ]] || fail "$1: $groups group lines, expected 122"
  agree=$(grep "^  gpus .* splits " <<<"$out" | grep -vc "(measured: the other)")
  grep -q "^  verdict agrees with the measured one: $agree/122 " <<<"$out" ||
    fail "$1: the agreement is not the count of agreeing groups ($agree)"
}
# known GROUP VERDICT: the group's line says VERDICT (and its measured gain is the file's).
known() {
  grep -Eq "^  $1 +splits +[0-9]+: gain measured +$2 projected .* said $3(,|$)" <<<"$out" ||
    fail "group '$1' (measured $2) no longer says '$3'"
}
check_run dgx-a100
# Measured PP +126% at 8 GPUs and global batch 2; the catalog just says PP needed (+8.7%).
known "gpus 8 gb 2 h 1024 a 16 l 24 s 1024" "\+125.9%" "PP needed"
known "gpus 8 gb 2 h 1024 a 16 l 12 s 1024" "\+114.4%" "PP needed"  # projected +5.7%: near the threshold
known "gpus 2 gb 16 h 1024 a 16 l 24 s 1024" "-22.8%" "PP not needed"
check_run "$fitted"
known "gpus 8 gb 4 h 1024 a 16 l 24 s 1024" "\+61.7%" "PP needed"
known "gpus 8 gb 8 h 2048 a 16 l 20 s 1024" "-6.0%" "PP needed \(measured: the other\)"
# --groups N keeps the first N groups.
"$exe" --dir "$data" --pp-pairs --groups 3 | grep -q "^PP verdict on dgx-a100, 3 groups measured" || fail "--groups 3"

# Bad input: exit 2 naming the file or the flag.
"$expect" 2 "cannot read $dir/none/ground_truth_single.csv" "$exe" --dir "$dir/none" --pp-pairs || exit 1
mkdir -p "$dir/bad"
cp "$data/ground_truth_multi.csv" "$dir/bad/"
sed '2s/^2,/two,/' "$data/ground_truth_single.csv" >"$dir/bad/ground_truth_single.csv"
"$expect" 2 "ground_truth_single.csv:2: 'two' is not a number" "$exe" --dir "$dir/bad" --pp-pairs || exit 1
sed '3s/,[^,]*$//' "$data/ground_truth_single.csv" >"$dir/bad/ground_truth_single.csv"
"$expect" 2 "ground_truth_single.csv:3: 10 columns, expected 11" "$exe" --dir "$dir/bad" --pp-pairs || exit 1
"$expect" 2 "--groups '0': expected a whole number of groups >= 1" "$exe" --pp-pairs --groups 0 || exit 1
"$expect" 2 "--threshold 'x': expected a fraction in \[0, 1\)" "$exe" --pp-pairs --threshold x || exit 1
# --write-gain-error stores the run's |err| p80 under its kind, keeping the other kind's.
"$exe" --dir "$data" --pp-pairs --write-gain-error "$dir/ge.json" --gain-error-kind catalog >/dev/null &&
  "$exe" --dir "$data" --topology "$fitted" --pp-pairs --write-gain-error "$dir/ge.json" \
    --gain-error-kind calibrated --gain-error-note "in-sample" >/dev/null || fail "--write-gain-error failed"
p80=$(grep -o "|err| p80 [0-9.]*" "$dir/dgx-a100.txt" | cut -d' ' -f3)
/usr/bin/python3 -c "
import json, sys
j = json.load(open('$dir/ge.json'))
assert j['kinds']['catalog']['abs_err_p80_points'] == float('$p80'), j['kinds']['catalog']
assert j['kinds']['catalog']['groups'] == 122 and j['kinds']['calibrated']['note'] == 'in-sample'
assert j['kinds']['calibrated']['abs_err_p80_points'] < j['kinds']['catalog']['abs_err_p80_points']
" || fail "the written gain error is not the run's"
"$expect" 2 "--write-gain-error needs --pp-pairs" "$exe" --write-gain-error "$dir/x.json" || exit 1
"$expect" 2 "--gain-error-kind 'mine': expected catalog or calibrated" \
  "$exe" --dir "$data" --pp-pairs --write-gain-error "$dir/x.json" --gain-error-kind mine || exit 1
"$expect" 2 "--write-gain-error with --groups: the stored error must come from every group" \
  "$exe" --dir "$data" --pp-pairs --groups 3 --write-gain-error "$dir/x.json" --gain-error-kind catalog || exit 1
echo "not json" >"$dir/x.json"
"$expect" 2 "x.json is not JSON" \
  "$exe" --dir "$data" --pp-pairs --write-gain-error "$dir/x.json" --gain-error-kind catalog || exit 1
"$expect" 2 "cannot write $dir/no/such/ge.json" \
  "$exe" --dir "$data" --pp-pairs --write-gain-error "$dir/no/such/ge.json" --gain-error-kind catalog || exit 1
echo "vtrain_pp_pairs_test: ok"
