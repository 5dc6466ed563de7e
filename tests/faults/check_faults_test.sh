#!/usr/bin/env bash
# check_faults_test.sh IBT MPIEXEC DIR PRELOAD EXPECTED_MISSES: `ibt train --check` against
# executors made wrong from outside. PRELOAD (comm_fault_shim.c, then the yield shim,
# colon-separated) changes one rank's MPI payload just above fp32 rounding: the first
# non-zero element x1.001 of a TP all-reduce (tp2), of a PP activation send (pp2) or
# exchange (pp2 vpp2 interleaved: MPI_Sendrecv), of an EP all-to-allv (tiny-moe ep2), of a
# ZeRO reduce-scatter (--zero 1, 2) or all-gather (--zero 3); x1.00005 and x1.02 of a CP
# ring K/V block (cp2 ring: the smallest scale step 0 catches there); and rank 1's last DP gradient all-reduce result reversed, or x1.001
# (a DP replica corrupted at the last step). Per case:
#   - the split run clean under the shim (count mode: nothing changed, the matching calls
#     counted) passes --check with exit 0, and has the call the fault aims at;
#   - the faulty run prints the shim's line (a fault that never fired fails the test);
#   - caught = exit 1 with "FAILED: step N"; missed = exit 0. Anything else fails.
# The checkpoints after the last step give how far the fault moved the trained weights
# (weight_shift.py: relative norm of faulty - clean over every rank's weights).
# EXPECTED_MISSES lists the cases today's --check misses: the test fails when a listed
# case is caught (update the file) or an unlisted one is missed. The table of every case
# (fired, exit, weight shift, message) is printed and left in DIR/table.txt.
# CHECK_FAULTS_ONLY=REGEX runs only the cases whose names match (for measuring one).
set -u
ibt=$1 mpiexec=$2 dir=$3 preload=$4 expected=$5
here=$(cd "$(dirname "$0")" && pwd)
fail() { echo "check_faults_test: FAIL: $*" >&2; exit 1; }
rm -rf "$dir" && mkdir -p "$dir" || fail "cannot make $dir"
[ -r "$expected" ] || fail "no expectation file $expected"
steps=2
check_flag=(--check)

# run NAME SPLIT FAULT_ENV...: a 2-rank `train --check` of SPLIT under the shim with the
# IBT_FAULT_* settings FAULT_ENV (VAR=VALUE words), its last step checkpointed in
# DIR/NAME.ckpt; sets $status, output in DIR/NAME.log.
run() {
  local name=$1 split=$2
  shift 2
  local genv=(-genv LD_PRELOAD "$preload") kv
  for kv in "$@"; do genv+=(-genv "${kv%%=*}" "${kv#*=}"); done
  local flags
  read -r -a flags <<<"$split"
  status=0
  timeout 300 "$mpiexec" "${genv[@]}" -n 2 "$ibt" train "${flags[@]}" --steps $steps ${check_flag[@]+"${check_flag[@]}"} \
    --checkpoint-every $steps --checkpoint-dir "$dir/$name.ckpt" </dev/null >"$dir/$name.log" 2>&1 || status=$?
}

# The shim's own input: a malformed variable stops every rank with exit 2, naming it.
bad_env() {
  run bad_env "--model tiny-dense --dp 2" "$@"
  [ "$status" = 2 ] && grep -q "comm_fault_shim: ${1%%=*}='${1#*=}' is not" "$dir/bad_env.log" ||
    { cat "$dir/bad_env.log"; fail "shim setting $* not refused with exit 2 (status $status)"; }
}
bad_env IBT_FAULT_OP=allreduc
bad_env IBT_FAULT_CALL=3-1 IBT_FAULT_OP=allreduce
bad_env IBT_FAULT_CALL=0 IBT_FAULT_OP=allreduce
bad_env IBT_FAULT_SCALE=1.001x IBT_FAULT_OP=allreduce
bad_env IBT_FAULT_MODE=flip IBT_FAULT_OP=allreduce
bad_env IBT_FAULT_RANK=2 IBT_FAULT_OP=allreduce
bad_env IBT_FAULT_COMM_SIZE=0 IBT_FAULT_OP=allreduce
echo "check_faults_test: malformed shim settings refused"

table=$dir/table.txt
printf '%-12s %-5s %-4s %-11s %s\n' case fired exit weights message >"$table"
wrong=()
# name | split | IBT_FAULT_OP RANK CALL MODE SCALE COMM_SIZE (CALL "last": the last
# matching call of the clean run, which falls in the last step; "step1+K": K calls after the
# first of the second step). The _late cases fault the second step, which --check judges from the
# split's own weights (the reference reseeded after step 0): their tolerances are those
# measured for reseeded steps, not step 0's.
while IFS='|' read -r name split fault; do
  name=${name// /}
  [ -z "$name" ] && continue
  [[ $name =~ ^(${CHECK_FAULTS_ONLY:-.*})$ ]] || continue
  read -r op rank call mode scale size <<<"$fault"
  aimed=$call
  common=(IBT_FAULT_OP="$op" IBT_FAULT_RANK="$rank" IBT_FAULT_COMM_SIZE="$size")
  run "$name.clean" "$split" "${common[@]}" IBT_FAULT_MODE=count
  [ "$status" = 0 ] && grep -q "check: every step matches" "$dir/$name.clean.log" ||
    { cat "$dir/$name.clean.log"; fail "$name: clean run ($split) exited $status"; }
  calls=$(sed -n "s/^comm_fault_shim: rank $rank: \([0-9]*\) matching .* calls, 0 changed$/\1/p" "$dir/$name.clean.log")
  [ "$call" = last ] && call=$calls
  # "step1[+K]": the first matching call of the second step (every step makes the same
  # calls), or K calls after it.
  second() { local k=${1#step1}; k=${k#+}; echo $(($2 / steps + 1 + ${k:-0})); }
  [[ $call == step1* ]] && call=$(second "$call" "$calls")
  [ -n "$calls" ] && ((calls >= call)) ||
    { cat "$dir/$name.clean.log"; fail "$name: the clean run has ${calls:-no} matching $op calls, the fault aims at call $call"; }
  run "$name" "$split" "${common[@]}" IBT_FAULT_CALL="$call" IBT_FAULT_MODE="$mode" IBT_FAULT_SCALE="$scale"
  log=$dir/$name.log checked_status=$status
  fired=$(grep -c "^comm_fault_shim: rank $rank .* call $call\b" "$log")
  [ "$fired" = 1 ] || { cat "$log"; fail "$name: the fault fired $fired times, not once"; }
  # How far the fault moves the trained weights: the same pair trained without --check (a
  # caught fault stops the checked run before its checkpoint), the call counted afresh.
  check_flag=()
  run "$name.clean.train" "$split" "${common[@]}" IBT_FAULT_MODE=count
  [ "$status" = 0 ] || { cat "$dir/$name.clean.train.log"; fail "$name: clean run without --check exited $status"; }
  train_calls=$(sed -n "s/^comm_fault_shim: rank $rank: \([0-9]*\) matching .* calls, 0 changed$/\1/p" "$dir/$name.clean.train.log")
  train_call=$call
  [ "$aimed" = last ] && train_call=$train_calls
  [[ $aimed == step1* ]] && train_call=$(second "$aimed" "$train_calls")
  run "$name.train" "$split" "${common[@]}" IBT_FAULT_CALL="$train_call" IBT_FAULT_MODE="$mode" IBT_FAULT_SCALE="$scale"
  [ "$status" = 0 ] || { cat "$dir/$name.train.log"; fail "$name: faulty run without --check exited $status"; }
  check_flag=(--check)
  shift_=$(python3 "$here/weight_shift.py" "$dir/$name.clean.train.ckpt" "$dir/$name.train.ckpt") ||
    fail "$name: weight_shift.py failed on $dir/$name.clean.train.ckpt and $dir/$name.train.ckpt"
  # A case that leaves the weights bitwise as they were tests nothing: aim it elsewhere.
  [ "$shift_" != 0 ] || fail "$name: the fault fired but the trained weights are bitwise those of the clean run"
  message=$(grep -m1 -o "FAILED: .*" "$log")
  status=$checked_status
  case $status in
    1) grep -Eq "FAILED: step [0-9]+" "$log" || { cat "$log"; fail "$name: exit 1 without naming a step"; }
       verdict=caught ;;
    0) grep -q "check: every step matches" "$log" || { cat "$log"; fail "$name: exit 0 without the check's verdict"; }
       verdict=missed message="(passed: every step matches)" ;;
    *) cat "$log"; fail "$name: exited $status" ;;
  esac
  printf '%-12s %-5s %-4s %-11s %s\n' "$name" yes "$status" "$shift_" "$message" >>"$table"
  listed=no
  grep -qx "$name" <(sed 's/#.*//; s/[[:space:]]//g' "$expected") && listed=yes
  [ $verdict = caught ] && [ $listed = yes ] && wrong+=("$name is caught but listed in $expected: remove it there")
  [ $verdict = missed ] && [ $listed = no ] && wrong+=("$name ($split; $fault) changes training and --check passes")
done <<'CASES'
tp        | --model tiny-dense --tp 2 --microbatches 2        | allreduce      1 1    scale   1.001   2
pp        | --model tiny-dense --pp 2 --microbatches 2        | send           0 1    scale   1.001   2
pp_vpp2   | --model tiny-dense --pp 2 --vpp 2 --microbatches 4 --schedule interleaved | sendrecv 1 1 scale 1.001 2
ep        | --model tiny-moe --dp 2 --ep 2 --microbatches 2   | alltoallv      1 1    scale   1.001   2
cp_ring   | --model tiny-dense --cp 2 --cp-comm ring          | isend          0 1    scale   1.00005 2
cp_ring_x102 | --model tiny-dense --cp 2 --cp-comm ring     | isend          0 1    scale   1.02    2
dp_reverse| --model tiny-dense --dp 2 --microbatches 2        | allreduce      1 last reverse 1       2
dp_scale  | --model tiny-dense --dp 2 --microbatches 2        | allreduce      1 last scale   1.001   2
zero1     | --model tiny-dense --dp 2 --microbatches 2 --zero 1 | reduce_scatter 1 last scale  1.001   2
zero2     | --model tiny-dense --dp 2 --microbatches 2 --zero 2 | reduce_scatter 1 1  scale   1.001   2
zero3     | --model tiny-dense --dp 2 --microbatches 2 --zero 3 | allgather      1 1  scale   1.001   2
zero3_late| --model tiny-dense --dp 2 --microbatches 2 --zero 3 | allgather      1 step1+1 scale 1.001 2
CASES
cat "$table"
for w in "${wrong[@]}"; do echo "check_faults_test: $w" >&2; done
((${#wrong[@]} == 0)) || fail "${#wrong[@]} case(s) differ from $expected"
echo "check_faults_test: ok"
