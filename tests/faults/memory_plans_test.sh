#!/usr/bin/env bash
# Memory-sized requests are planned before anything is allocated: message sizes with
# their rotation pools, pipeline schedules of huge microbatch counts, checkpoint states,
# model shapes. Each is refused with exit 2 naming the flag and the bytes needed against
# the bytes available, at once, and appends no run to --out. The sizes below need
# terabytes to petabytes, more than any host has.
source "$(dirname "$0")/lib.sh"
cd "$dir" || exit 1

# planned LABEL PATTERN COMMAND...: exit 2 within 30 s, the message, no results file.
planned() {
  local label=$1 pattern=$2 st=0 out start=$SECONDS
  shift 2
  rm -f plan.h5
  out=$(timeout 60 "$@" --out plan.h5 2>&1) || st=$?
  [[ $st -eq 2 ]] || fail "$label: exit status $st (expected 2): $(tail -3 <<<"$out")"
  grep -q -- "$pattern" <<<"$out" || fail "$label: message lacks '$pattern': $out"
  grep -q "needs [0-9]* bytes (.*) but only [0-9]* bytes (.*) are available" <<<"$out" ||
    fail "$label: the message does not give the bytes needed and available: $out"
  ((SECONDS - start <= 30)) || fail "$label: took $((SECONDS - start)) s to refuse"
  [[ ! -e plan.h5 ]] || fail "$label: a run was appended to --out"
  ok "$label: $(grep -o 'error: .*' <<<"$out" | head -1)"
}
planned "collectives -e 900G" "--max-bytes 900G with --rotate-bytes 64M: all_to_all" \
  "${mpirun[@]}" -n 2 "$ibt" collectives --op all_to_all -b 8 -e 900G -n 1 -w 0
planned "collectives pools" "--max-bytes 900G" \
  "${mpirun[@]}" -n 2 "$ibt" collectives --op all_reduce -b 900G -e 900G -n 1 -w 0 --rotate-bytes 0
planned "project --microbatches 2e9" "the pipeline schedule of 2000000000 microbatches" \
  "$ibt" project --model llama3-8b --topology dgx-h100 --gpus 64 --microbatches 2000000000
planned "project --global-batch 1e11" "1562500000 microbatches" \
  "$ibt" project --model llama3-8b --topology dgx-h100 --gpus 64 --global-batch 100000000000
planned "project --pp 8 --microbatches 2e8" "200000000 microbatches" \
  "$ibt" project --model llama3-8b --topology dgx-h100 --gpus 64 --pp 8 --microbatches 200000000
planned "checkpoint-bench --state-bytes 900G" "--state-bytes 900G" \
  "${mpirun[@]}" -n 2 "$ibt" checkpoint-bench --state-bytes 900G --dir ck
planned "train --micro-batch-size 100000" "--model tiny-dense" \
  "$ibt" train --model tiny-dense --micro-batch-size 100000 --steps 1
# Counts an int cannot hold are refused, never wrapped.
st=0; out=$("$ibt" project --model llama3-8b --topology dgx-h100 --gpus 64 --microbatches 10000000000 2>&1) || st=$?
[[ $st -eq 2 ]] && grep -q -- "--microbatches 10000000000 is out of range" <<<"$out" || fail "--microbatches 1e10: exit $st: $out"
st=0; out=$("$ibt" project --model llama3-8b --topology dgx-h100 --gpus 1000000000000 2>&1) || st=$?
[[ $st -eq 2 ]] && grep -q -- "--gpus 1000000000000 is out of range" <<<"$out" || fail "--gpus 1e12: exit $st: $out"
st=0; out=$("${mpirun[@]}" -n 2 "$ibt" p2p-matrix --sizes 8,3G --out plan.h5 2>&1) || st=$?
[[ $st -eq 2 && ! -e plan.h5 ]] && grep -q "above 2 GiB - 1 are not supported" <<<"$out" || fail "p2p 3G: exit $st: $out"
ok "int overflow and p2p's 2 GiB limit refused before any run"
