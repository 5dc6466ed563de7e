#!/usr/bin/env bash
# table_width_test.sh IBT "MPIRUN" DIR: the tables of `ibt --help`, `ibt show`, `ibt
# collectives`, `ibt accept` and `ibt calibrate` fit 120 columns by default and say the same
# with --wide, where they keep the layout they always had: the command list one line per
# command, every stored table row on one line, collectives' 174-column line per size, a
# verdict or residual line per metric or run.
set -u
ibt=$1 mpirun=$2 dir=$3
rm -rf "$dir" && mkdir -p "$dir"
fail() { echo "table_width_test: FAIL: $*" >&2; exit 1; }
widest() { awk '{ if (length($0) > m) m = length($0) } END { print m + 0 }' "$1"; }
fits() {  # fits FILE WHAT: no line of FILE over 120 columns
  local w
  w=$(widest "$1")
  if (( w > 120 )); then
    awk 'length($0) > 120' "$1" >&2
    fail "$2: a line of $w columns in the default output (limit 120)"
  fi
  echo "table_width_test: $2: widest line $w columns"
}
words() { tr -s ' \n' '\n\n' < "$1" | sort; }  # the words of a file, however laid out
# The characters of a file but its blanks and "#", counted: a word cut where its column
# ends, or a comment continued as "#   ...", stays the same characters (rules, as wide as
# their columns, left out).
chars() { grep -vE '^[ -]*$' "$1" | tr -d ' #\n' | fold -w1 | sort | uniq -c; }

# ibt --help: each summary wraps under itself; --wide, one line per command.
"$ibt" --help > "$dir/help.txt" || fail "ibt --help: exit $?"
"$ibt" --help --wide > "$dir/help-wide.txt" || fail "ibt --help --wide: exit $?"
fits "$dir/help.txt" "ibt --help"
(( $(widest "$dir/help-wide.txt") > 120 )) || fail "ibt --help --wide: no line wider than 120 (the train summary)"
grep -Eq "^  train            train a model .*serial reference$" "$dir/help-wide.txt" ||
  fail "ibt --help --wide: train's summary not on its one line"
grep -Eq "^                   serial reference$|^                   .*serial reference$" "$dir/help.txt" ||
  fail "ibt --help: train's summary does not continue under itself"
[[ $(words "$dir/help.txt") == "$(words "$dir/help-wide.txt")" ]] || fail "ibt --help: not the same words as --wide"

# ibt collectives on 2 ranks, then show of its file.
# shellcheck disable=SC2086  # MPIRUN is a command line
$mpirun -n 2 "$ibt" collectives -b 8 -e 1M -n 2 -w 1 --out "$dir/c.h5" > "$dir/coll.txt" 2> "$dir/coll.err" ||
  fail "collectives: exit $? ($(tail -1 "$dir/coll.err"))"
# shellcheck disable=SC2086
$mpirun -n 2 "$ibt" collectives -b 8 -e 1M -n 2 -w 1 --wide > "$dir/coll-wide.txt" 2> /dev/null ||
  fail "collectives --wide: exit $?"
fits "$dir/coll.txt" "collectives"
sizes=$(grep -cE "^  all_reduce +world +2 +[0-9]+ " "$dir/coll-wide.txt")
(( sizes == 18 )) || fail "collectives --wide: $sizes all_reduce lines, 18 sizes expected"
[[ $(grep -cE "^  all_reduce +world +2 +[0-9]+ " "$dir/coll.txt") == "$sizes" ]] ||
  fail "collectives: not one first line per size"
[[ $(widest "$dir/coll-wide.txt") == 174 ]] || fail "collectives --wide: widest line $(widest "$dir/coll-wide.txt"), not 174"
# --wide: every size's line is 174 columns wide, as ibt always printed it.
awk '/^  [a-z_]+ +world/ && length($0) != 174 { bad = 1 } END { exit bad }' "$dir/coll-wide.txt" ||
  fail "collectives --wide: a size's line not 174 columns"
grep -q "^# op  *scope group" "$dir/coll.txt" || fail "collectives: no column names"

for args in "" "--run 1" "--table collectives"; do
  # shellcheck disable=SC2086  # the arguments are words
  "$ibt" show "$dir/c.h5" $args > "$dir/show.txt" || fail "show $args: exit $?"
  # shellcheck disable=SC2086
  "$ibt" show "$dir/c.h5" $args --wide > "$dir/show-wide.txt" || fail "show $args --wide: exit $?"
  fits "$dir/show.txt" "show $args"
  [[ $(chars "$dir/show.txt") == "$(chars "$dir/show-wide.txt")" ]] || fail "show $args: not the same text as --wide"
done
"$ibt" show "$dir/c.h5" --run 1 --wide > "$dir/show-wide.txt"
(( $(widest "$dir/show-wide.txt") > 120 )) || fail "show --run 1 --wide: no line wider than 120"
# --wide: one line per stored row, as before.
rows=$(grep -oE "^table collectives \(([0-9]+) rows\)" "$dir/show-wide.txt" | grep -oE "[0-9]+")
[[ $(grep -cE "^  [a-z_]+ +world +mpi +float32 " "$dir/show-wide.txt") == "$rows" ]] ||
  fail "show --wide: not one line per row of the collectives table ($rows rows)"
# accept --from the same file: the verdict table (notes wrap under their verdict); --wide,
# one line per metric at its old widths (exit 1: this file lacks some metrics' sizes).
reference=$(dirname "$0")/../../topologies/references/local-cpu.json
"$ibt" accept --reference "$reference" --from "$dir/c.h5" > "$dir/accept.txt" 2> /dev/null
[[ $? == 1 ]] || fail "accept --from: exit status not 1"
"$ibt" accept --reference "$reference" --from "$dir/c.h5" --wide > "$dir/accept-wide.txt" 2> /dev/null
fits "$dir/accept.txt" "accept --from"
metrics=$(grep -cE "^  [A-Za-z0-9-]+ +[A-Za-z0-9_]+ " "$dir/accept-wide.txt")
(( metrics > 0 )) && [[ $(grep -cE "  (PASS|FAIL)( |$)" "$dir/accept-wide.txt") == "$metrics" ]] ||
  fail "accept --wide: not one line per metric with its verdict"
awk '/^  [A-Za-z0-9-]+ +[A-Za-z0-9_]+ / && (substr($0, 47, 1) != " " || substr($0, 48, 1) == " ") { bad = 1 } END { exit bad }' \
  "$dir/accept-wide.txt" ||
  fail "accept --wide: the statistic column does not start at column 48 as before"
[[ $(grep -cE "^  [A-Za-z0-9-]+ +[A-Za-z0-9_]+ " "$dir/accept.txt") == "$metrics" ]] || fail "accept: not every metric"
[[ $(chars "$dir/accept.txt") == "$(chars "$dir/accept-wide.txt")" ]] || fail "accept: not the same text as --wide"

# accept measuring on 2 ranks: its "measured" lines too (exit 0 or 1: the verdict is not
# what this test checks).
# shellcheck disable=SC2086
$mpirun -n 2 "$ibt" accept --reference "$reference" > "$dir/accept-live.txt" 2> "$dir/accept-live.err"
rc=$?
(( rc <= 1 )) || fail "accept on 2 ranks: exit status $rc ($(tail -1 "$dir/accept-live.err"))"
grep -q "^  measured " "$dir/accept-live.txt" || fail "accept on 2 ranks: no measured lines"
fits "$dir/accept-live.txt" "accept on 2 ranks"

# calibrate with a train run: the compute fit's residual table.
# shellcheck disable=SC2086
$mpirun -n 2 "$ibt" train --dp 2 --steps 3 --out "$dir/t.h5" > /dev/null 2>&1 || fail "train: exit $?"
# In DIR, so that the file names (printed whole, never cut) are short.
(cd "$dir" && "$ibt" calibrate c.h5 t.h5 --out cal.json > cal.txt 2>&1) || fail "calibrate: exit $?"
(cd "$dir" && "$ibt" calibrate c.h5 t.h5 --out cal.json --force --wide > cal-wide.txt 2>&1) ||
  fail "calibrate --wide: exit $?"
fits "$dir/cal.txt" "calibrate"
(( $(widest "$dir/cal-wide.txt") > 120 )) || fail "calibrate --wide: no line wider than 120"
grep -qE "^fit +t\.h5:000001 .* tiny-dense, dp2 " "$dir/cal-wide.txt" || fail "calibrate --wide: the run's residual line"
[[ $(chars "$dir/cal.txt") == "$(chars "$dir/cal-wide.txt")" ]] || fail "calibrate: not the same text as --wide"
echo "table_width_test: ok"
