#!/usr/bin/env bash
# The input corpus (tests/faults/corpus, made by make_corpus.py): hostile model,
# topology and reference files and command lines. Every case must end within 20 s with
# exit 0 (a mutation that is still valid) or 2 with an "error:" line naming the problem
# -- never 1, a crash (134, 139), a hang or an allocation failure.
source "$(dirname "$0")/lib.sh"
corpus=$4
checked=0 refused=0
run() {  # LABEL -- command...
  local label=$1 out st=0
  shift 2
  out=$(cd "$dir" && timeout 20 "$@" 2>&1 >/dev/null) || st=$?
  checked=$((checked + 1))
  case $st in
    0) ;;
    2) grep -q "error:" <<<"$out" || fail "$label: exit 2 without an error line: $out"
       refused=$((refused + 1)) ;;
    124) fail "$label: did not end within 20 s" ;;
    *) fail "$label: exit $st: $(tail -3 <<<"$out")" ;;
  esac
}
for f in "$corpus"/models/*.json; do
  run "model $(basename "$f")" -- "$ibt" project --model "$f" --topology dgx-h100 --gpus 8
done
for f in "$corpus"/topologies/*.json; do
  run "topology $(basename "$f")" -- "$ibt" project --model tiny-dense --topology "$f" --gpus 8
done
for f in "$corpus"/references/*.json; do
  run "reference $(basename "$f")" -- "$ibt" accept --reference "$f"
done
# flags.txt: a command line, optionally followed by " ~ TEXT": the error line must hold TEXT.
while read -r line; do
  [[ -z $line || $line == \#* ]] && continue
  expect=
  if [[ $line == *" ~ "* ]]; then expect=${line#* ~ }; line=${line%% ~ *}; fi
  eval "args=($line)"
  st=0
  out=$(cd "$dir" && timeout 20 "$ibt" "${args[@]}" 2>&1 >/dev/null) || st=$?
  checked=$((checked + 1))
  [[ $st -eq 2 ]] || fail "flags '$line': exit $st (expected 2): $(tail -2 <<<"$out")"
  [[ $(grep -c "error:" <<<"$out") -ge 1 ]] || fail "flags '$line': no error line"
  [[ -z $expect ]] || grep -qF -- "$expect" <<<"$out" || fail "flags '$line': the error does not say '$expect': $out"
  refused=$((refused + 1))
done <"$corpus/flags.txt"
# Rank lists against the job's ranks, under the launcher with 2 ranks: refused by every
# rank (exit 2) naming the flag and the job's size.
for line in "collectives --op all_reduce -b 8 -e 8 --inject-stall 7:0" "collectives --op all_reduce -b 8 -e 8 --inject-wrong 2" \
  "p2p-matrix --sizes 8 --inject-delay 9:5"; do
  read -r -a args <<<"$line"
  st=0
  out=$(cd "$dir" && timeout 60 "${mpirun[@]}" -n 2 "$ibt" "${args[@]}" 2>&1 >/dev/null) || st=$?
  checked=$((checked + 1))
  [[ $st -eq 2 ]] || fail "2 ranks, '$line': exit $st (expected 2): $(tail -2 <<<"$out")"
  grep -q "names rank [0-9]*, but the job has 2 ranks" <<<"$out" || fail "2 ranks, '$line': $out"
  refused=$((refused + 1))
done
ok "$checked cases, $refused refused with exit 2, the rest accepted as valid; none crashed or hung"
