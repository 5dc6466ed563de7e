#!/usr/bin/env bash
# cmp_outputs.sh OLD_IBT NEW_IBT DIR: the stdout of a fixed set of project/crossover/scaling
# commands from two binaries, compared byte for byte: the check that a refactor changed
# no projection (build the commit before it and after it, then compare). Exit 1 on any
# difference; DIR keeps both outputs of each command (N.old, N.new) for diff.
# About a minute on 2 cores.
set -uo pipefail
old=$1 new=$2 dir=$3
mkdir -p "$dir"
cmds=(
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
status=0
for i in "${!cmds[@]}"; do
  c=${cmds[$i]}
  $old $c > "$dir/$i.old" 2> /dev/null; ro=$?
  $new $c > "$dir/$i.new" 2> /dev/null; rn=$?
  if [[ $ro != "$rn" ]] || ! cmp -s "$dir/$i.old" "$dir/$i.new"; then
    echo "DIFFERENT ($ro/$rn): ibt $c"; status=1
  else
    echo "same ($(wc -l < "$dir/$i.new") lines): ibt $c"
  fi
done
exit $status
