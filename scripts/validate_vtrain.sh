#!/bin/bash
# Projects every row of the vTrain ground truth (measured Megatron iteration times on
# DGX A100, ../shared/validation/vtrain) and prints the MAPE, single-node and
# multi-node separately. The model is stated in topologies/vtrain.hpp; its two fitted
# constants (GEMM efficiency, per-op overhead) come from every 4th row of each file, on
# top of the all-reduce fits of topologies/validation/vtrain-a100-allreduce.csv
# (--refit redoes both and rewrites topologies/validation/dgx-a100-vtrain-fit.json).
#   scripts/validate_vtrain.sh [BUILD_DIR] [--refit] [--verbose]
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-$here/build}"
shift || true
exe="$build/topologies/ibt_validate_vtrain"
[ -x "$exe" ] || { echo "validate_vtrain.sh: $exe not built (cmake --build $build --target ibt_validate_vtrain)" >&2; exit 2; }
fitted="$here/topologies/validation/dgx-a100-vtrain-fit.json"
args=()
for a in "$@"; do
  case "$a" in
    --refit) "$exe" --fit --write "$fitted" ;;
    --verbose) args+=(--verbose) ;;
    *) echo "validate_vtrain.sh: unknown option $a" >&2; exit 2 ;;
  esac
done
echo "catalog dgx-a100 (default efficiency model, nothing fitted):"
"$exe" --topology dgx-a100
echo "dgx-a100 with the efficiency model fitted once ($fitted):"
"$exe" --topology "$fitted" "${args[@]}"
