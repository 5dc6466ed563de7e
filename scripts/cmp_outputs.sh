#!/usr/bin/env bash
# cmp_outputs.sh OLD_IBT NEW_IBT DIR: the output of a fixed set of commands from two
# binaries, compared byte for byte: the check that a refactor changed no behaviour (build
# the commit before it and after it, then compare). Exit 1 on any difference; DIR keeps
# both outputs of each command (N.old, N.new) for diff.
#   projections  stdout of project/crossover/scaling (stderr is progress, not compared)
#   help         `ibt --help` and every subcommand's --help
#   files        show and export (csv, json) of results files OLD writes once (a projection,
#                an imported log, a 2-rank collectives and p2p-matrix run), and `accept
#                --from` the collectives file: both binaries read the same bytes
#   import-log   the sample logs of tests/cli/import_log, good and cut
#   errors       bad input: a few commands that must refuse it
# Outside projections both stdout and stderr are compared, and the exit status always. The
# one thing that must differ, the commit a binary was built from ("ibt 0.1.0 (30e09f5954c4)"
# in `ibt --help`), is written as "(COMMIT)" in both outputs before they are compared.
# A few minutes on 2 cores (the collectives run uses 2 MPI ranks: MPIEXEC, default
# mpiexec.mpich).
set -uo pipefail
old=$1 new=$2 dir=$3
src=$(cd "$(dirname "$0")/.." && pwd)
logs=$src/tests/cli/import_log
mpiexec=${MPIEXEC:-mpiexec.mpich}
mkdir -p "$dir"
status=0 n=0

# compare STREAMS COMMAND...: runs `ibt COMMAND` with both binaries; STREAMS is "out"
# (stdout only) or "all" (stdout and stderr, in one file).
compare() {
  local streams=$1 ro rn
  shift
  local tag=$n
  n=$((n + 1))
  if [[ $streams == out ]]; then
    "$old" "$@" > "$dir/$tag.old" 2> /dev/null; ro=$?
    "$new" "$@" > "$dir/$tag.new" 2> /dev/null; rn=$?
  else
    "$old" "$@" > "$dir/$tag.old" 2>&1; ro=$?
    "$new" "$@" > "$dir/$tag.new" 2>&1; rn=$?
  fi
  sed -Ei 's/^(ibt [0-9]+\.[0-9]+\.[0-9]+) \([0-9a-f]{12}\)/\1 (COMMIT)/' "$dir/$tag.old" "$dir/$tag.new"
  if [[ $ro != "$rn" ]] || ! cmp -s "$dir/$tag.old" "$dir/$tag.new"; then
    echo "DIFFERENT ($ro/$rn) [$tag]: ibt $*"; status=1
  else
    echo "same (exit $rn, $(wc -l < "$dir/$tag.new") lines) [$tag]: ibt $*"
  fi
}

# compare_written COMMAND...: as `compare all`, for a command that must write a results
# file: each binary gets its own --out (DIR/N.old.h5, DIR/N.new.h5), named OUT.h5 in both
# outputs before they are compared (scripts/cmp_tables.sh compares the files themselves).
compare_written() {
  local ro rn tag=$n
  n=$((n + 1))
  "$old" "$@" --out "$dir/$tag.old.h5" > "$dir/$tag.old" 2>&1; ro=$?
  "$new" "$@" --out "$dir/$tag.new.h5" > "$dir/$tag.new" 2>&1; rn=$?
  sed -Ei -e 's/^(ibt [0-9]+\.[0-9]+\.[0-9]+) \([0-9a-f]{12}\)/\1 (COMMIT)/' -e "s|$dir/$tag\.(old\|new)\.h5|OUT.h5|g" \
    "$dir/$tag.old" "$dir/$tag.new"
  if [[ $ro != "$rn" ]] || ! cmp -s "$dir/$tag.old" "$dir/$tag.new"; then
    echo "DIFFERENT ($ro/$rn) [$tag]: ibt $* --out N.h5"; status=1
  else
    echo "same (exit $rn, $(wc -l < "$dir/$tag.new") lines) [$tag]: ibt $* --out N.h5"
  fi
}

projections=(
  "project --model llama3-8b --topology dgx-h100 --gpus 64 --tp 8"
  "project --model llama3-405b --topology dgx-h100 --gpus 8192 --tp 8 --pp 16 --zero 1"
  "project --model tiny-dense --topology dgx-h100 --gpus 8 --all"
  "project --model llama3-70b --topology gb200-nvl72 --gpus 2048 --all"
  "project --model deepseek-v3 --topology tpu-v5p --gpus 2048 --all --jobs 2"
  "project --model mixtral-8x7b --topology dgx-h100 --gpus 256 --all --top 20"
  "project --model kimi-k2 --topology dgx-h100 --gpus 4096 --all --jobs 2"
  "project --model megatron-1t --topology tpu-v3 --gpus 1024 --all --jobs 2"
  "crossover --model llama3-8b --gpus 64 --domain-sizes 8,64 --scale-out-Gbps 100,400 --global-batch 64"
  "crossover --model llama3-70b --gpus 1024 --domain-sizes 8,72 --scale-out-Gbps 200,800 --jobs 2"
  "scaling --model llama3-8b --topology dgx-h100,gb200-nvl72 --gpus 64,128"
)
for c in "${projections[@]}"; do
  # shellcheck disable=SC2086  # each entry is a command line split at spaces
  compare out $c
done

compare all --help
for cmd in collectives p2p-matrix accept train sweep project crossover scaling calibrate checkpoint-bench \
  project-compare import-log report show export gemm; do
  compare all "$cmd" --help
done

# The results files, written once by OLD; every read below reads the same bytes.
files=$dir/files
rm -rf "$files" && mkdir -p "$files"
"$old" project --model llama3-8b --topology dgx-h100 --gpus 64 --tp 8 --out "$files/mixed.h5" > /dev/null 2>&1 &&
  "$old" import-log "$logs/megatron_llama3_8b.log" --format megatron --model llama3-8b --topology dgx-h100 \
    --out "$files/mixed.h5" > /dev/null 2>&1 &&
  "$mpiexec" -n 2 "$old" collectives -b 8 -e 1K --out "$files/cluster.h5" > /dev/null 2>&1 &&
  "$mpiexec" -n 2 "$old" p2p-matrix --sizes 8,1K -n 3 -w 1 --out "$files/cluster.h5" > /dev/null 2>&1 ||
  { echo "could not write the results files with $old"; exit 1; }
for f in mixed cluster; do
  compare all show "$files/$f.h5"
  compare all show "$files/$f.h5" --run 1
  compare all export "$files/$f.h5" --csv
  compare all export "$files/$f.h5" --json
done
compare all accept --reference "$src/topologies/references/local-cpu.json" --from "$files/cluster.h5"

common=(--model llama3-8b --topology dgx-h100)
compare_written import-log "$logs/megatron_llama3_8b.log" --format megatron "${common[@]}"
compare_written import-log "$logs/megatron_truncated.log" --format megatron "${common[@]}"
compare_written import-log "$logs/nemo1_llama3_8b.log" --format nemo "${common[@]}"
compare_written import-log "$logs/nemo2_llama3_8b.log" --format nemo --config "$logs/nemo2_llama3_8b.yaml" "${common[@]}"
compare_written import-log "$logs/nemo_truncated.log" --format nemo "${common[@]}"
compare_written import-log "$logs/torchtitan_llama3_8b.log" --format torchtitan \
  --config "$logs/torchtitan_llama3_8b.toml" --world-size 16 "${common[@]}"

compare all no-such-command
compare all project --model no-such-model --topology dgx-h100 --gpus 8
compare all project --model llama3-8b --topology dgx-h100 --gpus 0
compare all project --model llama3-8b --topology dgx-h100 --gpus 64 --tp 3
compare all show /dev/null
compare all show "$src"
compare all export "$files/cluster.h5" --format xml
compare all import-log /dev/null --format megatron "${common[@]}"
compare_written import-log "$logs/megatron_llama3_8b.log" --format nosuch "${common[@]}"
compare all accept --reference /dev/null --from "$files/cluster.h5"
compare all train --tp 0
exit $status
