#!/usr/bin/env bash
# Two jobs writing to one file make two runs, and the second leaves the first untouched.
set -u
ibt=$1
read -r -a mpirun <<<"$2"
dir=$3
rm -rf "$dir" && mkdir -p "$dir"
file=$dir/runs.h5
fail() { echo "append_runs_test: $*" >&2; exit 1; }
run() { "${mpirun[@]}" -n 2 "$ibt" collectives -n 2 -w 1 -b 8 -e 1K -f 8 --out "$file" >/dev/null || fail "ibt collectives failed"; }
run
before=$(h5dump -g /runs/000001 "$file") || fail "h5dump cannot read the file"
run
after=$(h5dump -g /runs/000001 "$file")
[[ "$before" == "$after" ]] || fail "the first run changed when the second was appended"
h5dump -a /runs/000002/status "$file" | grep -q '"complete"' || fail "second run not complete"
h5dump -a /runs/000001/command_line "$file" | grep -q "ibt collectives" || fail "command line not recorded"
"$ibt" show "$file" | grep -c complete | grep -q '^2$' || fail "ibt show does not list two complete runs"
echo "append_runs_test: ok"
