#!/usr/bin/env bash
# check_tensors_test.sh IBT "MPIRUN": ibt train --check compares every tensor's gradient
# and value with the serial reference. For dp2, tp2, pp2 and MoE ep2 on 2 ranks: the
# correct split passes; one tensor's gradient halved on the ranks holding it
# (--inject-grad-fault, tests only) fails naming that tensor and step 0; every gradient
# scaled by 5e-5 fails too (AdamW hides a uniform scale from the loss, not from the
# per-tensor gradient norms); an unknown tensor name is refused.
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
  train "$model" "$tensor:0.5" "${flags[@]}"
  [ $status = 1 ] || { cat "$log"; fail "$model $split: halved $tensor exited $status, not 1"; }
  grep -q "FAILED: step 0: tensor $tensor gradient norm .* differs from the serial reference's" "$log" ||
    { cat "$log"; fail "$model $split: halved $tensor not named"; }
  train "$model" "*:5e-5" "${flags[@]}"
  [ $status = 1 ] && grep -q "FAILED: step 0: tensor .* gradient norm" "$log" ||
    { cat "$log"; fail "$model $split: gradients scaled by 5e-5 passed"; }
  echo "check_tensors_test: $model $split: passes; halved $tensor and 5e-5 fail"
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
