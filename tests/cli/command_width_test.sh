#!/usr/bin/env bash
# command_width_test.sh IBT "MPIRUN" DIR: the default output of `ibt p2p-matrix` (its header,
# the oversubscription warning every multi-rank command prints, the outliers it names) and
# of `ibt checkpoint-bench` (its header and summary lines) fits 120 columns, a long "#" line
# continuing on "#   " lines; with --wide each stays on its one line as before (some wider
# than 120), the same words either way.
set -u
ibt=$1 mpirun=$2 dir=$3
rm -rf "$dir" && mkdir -p "$dir"
fail() { echo "command_width_test: FAIL: $*" >&2; exit 1; }
widest() { awk '{ if (length($0) > m) m = length($0) } END { print m + 0 }' "$1"; }
words() { tr -s ' #\n' '\n\n\n' < "$1" | sort; }
# check NAME: NAME.txt (default) fits 120 columns, NAME-wide.txt has a wider line, same words.
check() {
  local w
  w=$(widest "$dir/$1.txt")
  (( w <= 120 )) || { awk 'length($0) > 120' "$dir/$1.txt" >&2; fail "$1: a line of $w columns (limit 120)"; }
  (( $(widest "$dir/$1-wide.txt") > 120 )) || fail "$1 --wide: no line wider than 120 (the one-line layout)"
  [[ ${same_words:-1} == 0 || $(words "$dir/$1.txt") == "$(words "$dir/$1-wide.txt")" ]] ||
    fail "$1: not the same words as --wide"
  echo "command_width_test: $1: widest line $w columns, --wide $(widest "$dir/$1-wide.txt")"
}
# 4 ranks, rank 3 slowed: the header, an outlier line per slow pair and rank (and, on a
# machine with fewer than 4 cores, the oversubscription warning on stderr).
# shellcheck disable=SC2086  # MPIRUN is a command line
$mpirun -n 4 "$ibt" p2p-matrix -n 2 -w 1 --sizes 8 --inject-delay 3:20000 > "$dir/p2p.txt" 2>&1 ||
  fail "p2p-matrix: exit $?"
# shellcheck disable=SC2086
$mpirun -n 4 "$ibt" p2p-matrix -n 2 -w 1 --sizes 8 --inject-delay 3:20000 --wide > "$dir/p2p-wide.txt" 2>&1 ||
  fail "p2p-matrix --wide: exit $?"
grep -q "^#   rank latency .*rank 3 (" "$dir/p2p.txt" || fail "p2p-matrix: the slow rank is not named"
grep -q "^#   rank latency .*rank 3 (" "$dir/p2p-wide.txt" || fail "p2p-matrix --wide: the slow rank is not named"
# Which pairs count as outliers varies from run to run: the same words are compared on the
# header line only (with its continuation lines).
header() { awk '/^# ibt p2p-matrix/ { on = 1; print; next } on && /^#   / { print; next } { on = 0 }' "$1"; }
header "$dir/p2p.txt" > "$dir/p2ph.txt"
header "$dir/p2p-wide.txt" > "$dir/p2ph-wide.txt"
[[ -s $dir/p2ph.txt ]] || fail "p2p-matrix: no header line"
[[ $(words "$dir/p2ph.txt") == "$(words "$dir/p2ph-wide.txt")" ]] || fail "p2p-matrix: the header is not the same words as --wide"
same_words=0 check p2p
# shellcheck disable=SC2086
$mpirun -n 2 "$ibt" checkpoint-bench --state-bytes 1M --repeats 2 --dir "$dir/ck" > "$dir/ckpt.txt" 2>&1 ||
  fail "checkpoint-bench: exit $?"
# shellcheck disable=SC2086
$mpirun -n 2 "$ibt" checkpoint-bench --state-bytes 1M --repeats 2 --dir "$dir/ck" --wide > "$dir/ckpt-wide.txt" 2>&1 ||
  fail "checkpoint-bench --wide: exit $?"
sed -i -E 's/[0-9]+(\.[0-9]+)?%?//g' "$dir/ckpt.txt" "$dir/ckpt-wide.txt"
check ckpt
