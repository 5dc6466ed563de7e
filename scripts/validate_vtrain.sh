#!/bin/bash
# Projects every row of the vTrain ground truth (measured Megatron iteration times on
# DGX A100, ../shared/validation/vtrain) and prints the MAPE, single-node and
# multi-node separately. The model is stated in topologies/calibration/vtrain.hpp; its two fitted
# constants (GEMM efficiency, per-op overhead) come from every 4th row of each file, on
# top of the all-reduce fits of topologies/validation/vtrain-a100-allreduce.csv
# (--refit redoes both and rewrites topologies/validation/dgx-a100-vtrain-fit.json).
# With --pp-pairs it checks the PP verdict instead of the times, on both topologies: the
# 122 groups measured with and without PP (topologies/calibration/pp_pairs.hpp); --groups N
# takes the first N groups only; --write-gain-error stores both topologies' gain error (the
# crossover verdict's uncertainty) in topologies/validation/pp-gain-error.json.
#   scripts/validate_vtrain.sh [BUILD_DIR] [--refit] [--verbose] [--dir DATA_DIR]
#                              [--pp-pairs [--groups N] [--write-gain-error]]
# DATA_DIR holds ground_truth_{single,multi}.csv (default: ../shared/validation/vtrain
# beside the checkout, compiled into ibt_validate_vtrain).
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
build="$here/build"
if [ $# -gt 0 ] && [ "${1#--}" = "$1" ]; then build="$1"; shift; fi
exe="$build/topologies/calibration/ibt_validate_vtrain"
[ -x "$exe" ] || { echo "validate_vtrain.sh: $exe not built (cmake --build $build --target ibt_validate_vtrain)" >&2; exit 2; }
fitted="$here/topologies/validation/dgx-a100-vtrain-fit.json"
args=() pairs=() data=() refit=0 write_gain=0
gain_file="$here/topologies/validation/pp-gain-error.json"
while [ $# -gt 0 ]; do
  case "$1" in
    --refit) refit=1 ;;
    --verbose) args+=(--verbose) ;;
    --pp-pairs) pairs+=(--pp-pairs) ;;
    --write-gain-error) write_gain=1 ;;
    --groups) [ $# -ge 2 ] || { echo "validate_vtrain.sh: --groups needs a value" >&2; exit 2; }
              pairs+=(--groups "$2"); shift ;;
    --dir) [ $# -ge 2 ] || { echo "validate_vtrain.sh: --dir needs a value" >&2; exit 2; }
           data=(--dir "$2"); shift ;;
    *) echo "validate_vtrain.sh: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
# gain_args KIND NOTE: where --write-gain-error stores this topology's gain error.
gain_args() {
  [ "$write_gain" = 1 ] || return 0
  printf '%s\n' --write-gain-error "$gain_file" --gain-error-kind "$1" --gain-error-note "$2" \
    --gain-error-command "scripts/validate_vtrain.sh BUILD --pp-pairs --write-gain-error"
}
if [ "$write_gain" = 1 ] && [ ${#pairs[@]} = 0 ]; then echo "validate_vtrain.sh: --write-gain-error needs --pp-pairs" >&2; exit 2; fi
if [ "$refit" = 1 ]; then "$exe" "${data[@]}" --fit --write "$fitted"; fi
echo "catalog dgx-a100 (default efficiency model, nothing fitted):"
mapfile -t gain < <(gain_args catalog "the catalog's figures, nothing fitted: what a user of dgx-a100 gets")
"$exe" "${data[@]}" --topology dgx-a100 ${pairs[@]+"${pairs[@]}"} ${pairs[@]+${args[@]+"${args[@]}"}} ${gain[@]+"${gain[@]}"}
echo "dgx-a100 with the efficiency model fitted once ($fitted):"
mapfile -t gain < <(gain_args calibrated "partly in-sample: its gemm_efficiency and op_overhead_us were fitted to every 4th row of these vTrain files (vtrain-fit), its all-reduce to the same authors' NCCL runs; a calibration of your own system is fitted to other runs than the pairs it is judged on")
"$exe" "${data[@]}" --topology "$fitted" ${pairs[@]+"${pairs[@]}"} ${args[@]+"${args[@]}"} ${gain[@]+"${gain[@]}"}
