#!/usr/bin/env bash
# search_rows_stored_test.sh IBT DIR: the searches whose rows were once lost (a split label
# one byte longer than its fixed-width column failed the append after the whole search had
# run, and the run was recorded failed with no rows) now store every row they print:
# `project --all --out` on the three searches that failed (the default top list), every
# split of one (--top 0), and `crossover --out` / `scaling --out`, each run complete.
set -euo pipefail
ibt=$1 dir=$2
rm -rf "$dir" && mkdir -p "$dir"
py=/usr/bin/python3
fail() { echo "FAIL: $*" >&2; exit 1; }

# stored FILE TABLE: rows of TABLE in the file's only run, after checking the run completed.
stored() {
  "$py" - "$1" "$2" <<'PY'
import sys, h5py
f = h5py.File(sys.argv[1], "r")
runs = list(f["runs"].values())
assert len(runs) == 1, f"{len(runs)} runs"
status = runs[0].attrs["status"]
status = status.decode() if isinstance(status, bytes) else status
assert status == "complete", f"run status {status}"
print(len(runs[0][sys.argv[2]]))
PY
}

# project_case NAME ARGS...: every split the search reports is stored -- the feasible and
# infeasible ones it counts ("25 feasible split(s) (20 shown), 0 infeasible") and those
# it did not price ("1190 more split(s) fit in memory but were not priced").
project_case() {
  local name=$1
  shift
  local file="$dir/$name.h5"
  "$ibt" project --all "$@" --out "$file" > "$dir/$name.txt" 2> "$dir/$name.err" ||
    fail "$name: exit $? ($(tail -1 "$dir/$name.err"))"
  local reported rows
  reported=$(awk '/ feasible split\(s\)/ {n += $1; for (i = 1; i < NF; i++) if ($(i + 1) ~ /^infeasible/) n += $i}
                  / more split\(s\) fit in memory but were not priced/ {n += $1}
                  END {print n + 0}' "$dir/$name.txt")
  rows=$(stored "$file" projections) || fail "$name: reading $file"
  [[ $reported -gt 0 && $rows -eq $reported ]] || fail "$name: the search reports $reported splits, the file holds $rows"
  echo "ok $name: $rows rows stored"
}
project_case tiny_dense_dgx_h100_8 --model tiny-dense --topology dgx-h100 --gpus 8
project_case llama3_70b_gb200_2048 --model llama3-70b --topology gb200-nvl72 --gpus 2048
project_case deepseek_v3_tpu_v5p_2048 --model deepseek-v3 --topology tpu-v5p --gpus 2048
# Every split of a search (about 1,200, labels up to 81 bytes and more).
project_case tiny_dense_every_split --model tiny-dense --topology dgx-h100 --gpus 8 --top 0

"$ibt" crossover --model llama3-8b --gpus 64 --domain-sizes 8,64 --scale-out-Gbps 100,400 --global-batch 64 \
  --out "$dir/crossover.h5" > "$dir/crossover.txt" 2>&1 || fail "crossover --out: exit $?"
rows=$(stored "$dir/crossover.h5" crossover) || fail "crossover: reading the file"
[[ $rows -eq 4 ]] || fail "crossover: $rows rows stored for a 2 x 2 grid"
echo "ok crossover: $rows rows stored"

"$ibt" scaling --model llama3-8b --topology dgx-h100,gb200-nvl72 --gpus 64,128 --out "$dir/scaling.h5" \
  > "$dir/scaling.txt" 2>&1 || fail "scaling --out: exit $?"
rows=$(stored "$dir/scaling.h5" scaling) || fail "scaling: reading the file"
[[ $rows -ge 4 ]] || fail "scaling: $rows rows stored for 2 systems x 2 sizes"
echo "ok scaling: $rows rows stored"
