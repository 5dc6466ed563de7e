#!/usr/bin/env bash
# check_tensors_test.sh IBT "MPIRUN": ibt train --check compares every copy of every
# tensor, element by element, with the serial reference. For dp2, tp2, pp2 and MoE ep2 on
# 2 ranks: the correct split passes; one tensor's gradient scaled by 1.00005 (a fault
# just above fp32 rounding: 5e-5 relative on the ranks that count that shard, before the
# reduction; --inject-grad-fault, tests only) fails, naming step 0, the tensor, a rank and
# its slice; so does the same tensor halved; every gradient scaled by 5e-5 (a factor of
# 20000 smaller) fails too; an unknown tensor name and a bad scale are refused.
set -u
ibt=$1 mpirun=$2
read -r -a run <<<"$mpirun"
fail() { echo "check_tensors_test: FAIL: $*" >&2; exit 1; }
log=$(mktemp)
trap 'rm -f "$log"' EXIT
# train MODEL TENSOR SPLIT...: a 2-rank --check run; sets $status, output in $log.
train() {
  local model=$1 fault=$2
  shift 2
  local extra=()
  [ -n "$fault" ] && extra=(--inject-grad-fault "$fault")
  status=0
  timeout 300 "${run[@]}" -n 2 "$ibt" train --model "$model" "$@" --steps 2 --check "${extra[@]}" </dev/null >"$log" 2>&1 ||
    status=$?
}
while read -r model tensor split; do
  [ -z "$model" ] && continue
  read -r -a flags <<<"$split"
  train "$model" "" "${flags[@]}"
  [ $status = 0 ] && grep -q "check: every step matches" "$log" || { cat "$log"; fail "$model $split: correct split failed"; }
  # The message names step, tensor, rank (and host) and the slice: "FAILED: step 0:
  # tensor T (rank 1 on HOST, rows 0-31 of 64): gradients differ from the serial
  # reference by 5e-05 relative (...)".
  named="FAILED: step 0: tensor ${tensor//./\\.} \\(rank [0-9]+ on [^,]+, [^)]+\\): gradients differ from the serial reference by"
  for scale in 1.00005 0.5; do
    train "$model" "$tensor:$scale" "${flags[@]}"
    [ $status = 1 ] || { cat "$log"; fail "$model $split: $tensor x $scale exited $status, not 1"; }
    grep -Eq "$named" "$log" || { cat "$log"; fail "$model $split: $tensor x $scale: step, tensor, rank not named"; }
  done
  train "$model" "*:5e-5" "${flags[@]}"
  [ $status = 1 ] && grep -Eq "FAILED: step 0: tensor .* gradients differ from the serial reference" "$log" ||
    { cat "$log"; fail "$model $split: gradients scaled by 5e-5 passed"; }
  echo "check_tensors_test: $model $split: passes; $tensor x 1.00005 and x 0.5, and every gradient x 5e-5, fail"
done <<'CASES'
tiny-dense layers.1.mlp.w_down --dp 2
tiny-dense layers.0.attention.wq --tp 2
tiny-dense layers.3.mlp.w_up --pp 2 --microbatches 2
tiny-moe layers.1.experts.3.w_down --dp 2 --ep 2
CASES
train tiny-dense "nope:0.5" --dp 2
[ $status = 2 ] && grep -q "no tensor named 'nope'" "$log" || { cat "$log"; fail "unknown tensor not refused"; }
train tiny-dense "layers.0.mlp.w_up:x" --dp 2
[ $status = 2 ] && grep -q "is not a finite number" "$log" || { cat "$log"; fail "bad scale not refused"; }
echo "check_tensors_test: ok"
