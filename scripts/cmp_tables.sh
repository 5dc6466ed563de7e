#!/usr/bin/env bash
# cmp_tables.sh OLD_IBT NEW_IBT DIR: the results files each binary WRITES, compared table
# by table (cmp_outputs.sh compares what both read from files OLD wrote): every table's
# layout (h5dump -H: column names, types, order, unit attributes) and, where the rows are
# deterministic (projections, an imported log, an atlas cell, accept --from), the rows
# themselves; checkpoint-bench's layout only (its rows are timings). The
# check that a change to how rows are built (core/row_schema.hpp) kept the files' format.
# Needs h5dump (hdf5-tools) and mpiexec.mpich; a few minutes on 2 cores. Exit 1 on any
# difference; DIR keeps both dumps of each table.
set -uo pipefail
old=$1 new=$2 dir=$3
src=$(cd "$(dirname "$0")/.." && pwd)
logs=$src/tests/cli/import_log
rm -rf "$dir" && mkdir -p "$dir"
status=0
write() {  # write TAG BIN...
  local tag=$1 bin=$2 d=$dir/$1
  mkdir -p "$d"
  "$bin" project --model llama3-8b --topology dgx-h100 --gpus 64 --tp 8 --out "$d/p.h5" >/dev/null 2>&1 || echo "$tag project failed"
  "$bin" project --model tiny-dense --topology dgx-h100 --gpus 8 --all --out "$d/pa.h5" >/dev/null 2>&1 || echo "$tag project all failed"
  "$bin" import-log "$logs/megatron_llama3_8b.log" --format megatron --model llama3-8b --topology dgx-h100 --out "$d/i.h5" >/dev/null 2>&1 || echo "$tag import failed"
  mpiexec.mpich -n 2 "$bin" train --model tiny-dense --dp 2 --steps 2 --checkpoint-every 1 --checkpoint-dir "$d/ck" --out "$d/t.h5" >/dev/null 2>&1 || echo "$tag train failed"
  mpiexec.mpich -n 2 "$bin" collectives -b 8 -e 1K --scope all --domain-size 1 --out "$d/c.h5" >/dev/null 2>&1 || echo "$tag collectives failed"
  mpiexec.mpich -n 2 "$bin" p2p-matrix --sizes 8,1K -n 3 -w 1 --out "$d/c.h5" >/dev/null 2>&1 || echo "$tag p2p failed"
  mpiexec.mpich -n 2 "$bin" checkpoint-bench --state-bytes 64K --repeats 2 --dir "$d/cb" --out "$d/cb.h5" >/dev/null 2>&1 || echo "$tag checkpoint-bench failed"
  "$bin" crossover --atlas --atlas-models gpt3-175b --atlas-topologies dgx-a100 --out "$d/x.h5" >/dev/null 2>&1 || echo "$tag atlas failed"
  "$bin" accept --reference "$src/topologies/references/local-cpu.json" --from "$dir/input.h5" --out "$d/a.h5" --force >/dev/null 2>&1
  echo "$tag accept exit $?"
}
mpiexec.mpich -n 2 "$old" collectives -b 8 -e 1K --out "$dir/input.h5" >/dev/null 2>&1
mpiexec.mpich -n 2 "$old" p2p-matrix --sizes 8,1K -n 3 -w 1 --out "$dir/input.h5" >/dev/null 2>&1
write old "$old"
write new "$new"
tables() { h5dump -n "$1" | awk '$1=="dataset"{print $2}' | grep -v environment; }
for f in p pa i t c cb x a; do
  for t in $(tables "$dir/old/$f.h5"); do
    if [[ $f == p || $f == pa || $f == i || $f == x || $f == a ]]; then mode=""; else mode="-H"; fi
    h5dump $mode -d "$t" "$dir/old/$f.h5" | sed 1d | grep -v ibt_crc32 > "$dir/$f.$(basename $t).old"
    h5dump $mode -d "$t" "$dir/new/$f.h5" | sed 1d | grep -v ibt_crc32 > "$dir/$f.$(basename $t).new"
    if cmp -s "$dir/$f.$(basename $t).old" "$dir/$f.$(basename $t).new"; then echo "same ${mode:-rows}: $f $t"; else echo "DIFFERENT ${mode:-rows}: $f $t"; status=1; fi
  done
  [[ "$(tables "$dir/old/$f.h5")" == "$(tables "$dir/new/$f.h5")" ]] || { echo "DIFFERENT table list: $f"; status=1; }
done
exit $status
