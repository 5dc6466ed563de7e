#!/usr/bin/env bash
# make_results.sh IBT "MPIRUN" DIR: the results files the report tests read, made by real
# ibt runs (never by hand): two collectives files (A, and B with buffer rotation off, as
# two "systems"), a 3-rank p2p matrix in A, and a run that fails (a wrong result) in A,
# so the report has a failed run to show.
set -eu
ibt=$1 mpirun=$2 dir=$3
rm -rf "$dir" && mkdir -p "$dir"
quick=(-n 3 -w 1 -b 8 -e 1M -f 8)
$mpirun -n 2 "$ibt" collectives "${quick[@]}" --scope all --out "$dir/a.h5" > "$dir/a.log"
$mpirun -n 2 "$ibt" collectives "${quick[@]}" --rotate-bytes 0 --out "$dir/b.h5" > "$dir/b.log"
$mpirun -n 3 "$ibt" p2p-matrix -n 3 -w 1 --out "$dir/a.h5" > "$dir/p2p.log"
# Exit status 1 is what this run must give: its run is stored with status "failed".
set +e
$mpirun -n 2 "$ibt" collectives -n 2 -w 1 --op all_reduce -b 64 -e 256 --inject-wrong 1 --out "$dir/a.h5" > "$dir/wrong.log" 2>&1
status=$?
set -e
if [[ $status -ne 1 ]]; then echo "make_results: the injected wrong result gave status $status, expected 1" >&2; exit 1; fi
echo "make_results: ok ($dir/a.h5, $dir/b.h5)"
