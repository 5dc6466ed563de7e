#!/bin/bash
# The GPU checklist of docs/gpus.md as one command, for a
# machine with at least one NVIDIA GPU: the GPU tests, the measured GEMM peak, the cuda
# executor against the serial reference (fp32 and bf16, and with the one-thread attention),
# a 1.7B-parameter step with each attention path, the same step in PyTorch on the same GPU
# (where python3 has torch), and the NCCL backend on one rank. Each step runs under its own time limit, prints as it
# goes, and its output is kept in OUT/NAME.log; a summary line per step ends the run and
# the exit status is 1 when any step failed.
#   scripts/gpu_checklist.sh [BUILD_DIR] [OUT_DIR]      (defaults: build, gpu-checklist)
# Results files: OUT/gemm.h5, OUT/train.h5, OUT/nccl.h5 (`ibt show FILE`).
# Ran on one H200 on 2026-11-26 (second session, README) through gpu_tests, gemm, the three
# checks and both 1.7B steps (the one-thread check then had the GEMM attention's place);
# the session's own time limit stopped it at the PyTorch step, which ran on its own.
# A third session (2026-11-26) ran the same steps one by one from its own wrapper (gpu_tests,
# the three checks, the 1.7B gemm step beside PyTorch, NCCL on one rank): all passed.
set -uo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-$here/build}"
out="${2:-gpu-checklist}"
ibt="$build/ibt"
[ -x "$ibt" ] || { echo "gpu_checklist.sh: $ibt not built (scripts/setup.sh, or cmake --build $build)" >&2; exit 2; }
command -v nvidia-smi > /dev/null || { echo "gpu_checklist.sh: no nvidia-smi: this machine has no NVIDIA driver" >&2; exit 2; }
mkdir -p "$out" || exit 2
launch=(mpiexec -n 1)
command -v mpiexec > /dev/null || launch=()
summary=()
failed=0

# step NAME SECONDS COMMAND...: runs COMMAND with a time limit, tees its output to OUT/NAME.log.
step() {
  local name="$1" limit="$2"
  shift 2
  echo "=== $(date -u +%T) $name: $*"
  timeout "$limit" "$@" 2>&1 | tee "$out/$name.log"
  local rc=${PIPESTATUS[0]}
  if [ "$rc" = 0 ]; then summary+=("ok      $name"); else
    failed=1
    summary+=("FAILED  $name (exit $rc$([ "$rc" = 124 ] && echo ", over ${limit} s"); $out/$name.log)")
  fi
}

nvidia-smi --query-gpu=name,memory.total,driver_version,power.limit --format=csv | tee "$out/gpu.log"
if [ -x "$build/tests/gpu/gpu_tests" ]; then
  step gpu_tests 300 "$build/tests/gpu/gpu_tests"
else
  summary+=("skipped gpu_tests (not built: this build found no CUDA toolkit)")
fi
step gemm 180 "$ibt" gemm --dtype bf16,fp8 --out "$out/gemm.h5"
step check_fp32 120 "${launch[@]}" "$ibt" train --executor cuda --precision fp32 --model small-dense --steps 3 --check
step check_bf16 120 "${launch[@]}" "$ibt" train --executor cuda --model small-dense --steps 3 --check
step check_threads_attention 120 "${launch[@]}" "$ibt" train --executor cuda --precision fp32 --model small-dense \
  --steps 3 --check --cuda-attention threads
for attention in gemm threads; do
  step "step_1.7b_$attention" 300 "${launch[@]}" "$ibt" train --executor cuda --model megatron-1.7b \
    --micro-batch-size 2 --microbatches 4 --steps 4 --cuda-attention "$attention" \
    --gemm-peak-from "$out/gemm.h5" --out "$out/train.h5"
done
if python3 -c "import torch; assert torch.cuda.is_available()" 2> /dev/null; then
  step pytorch_1.7b 300 python3 "$here/bench/torch_gpu_step.py" --model-file "$here/models/catalog/megatron-1.7b.json" \
    --micro-batch-size 2 --microbatches 4 --steps 5
else
  summary+=("skipped pytorch_1.7b (python3 has no torch that sees a GPU)")
fi
step nccl_one_rank 180 "${launch[@]}" "$ibt" collectives --backend nccl --scope world -b 8 -e 256M -f 4 --out "$out/nccl.h5"

echo "=== summary ($out)"
printf '%s\n' "${summary[@]}"
exit "$failed"
