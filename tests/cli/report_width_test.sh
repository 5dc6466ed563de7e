#!/usr/bin/env bash
# report_width_test.sh IBT DIR: the default output of project (one split, --all), crossover
# (grid, --atlas) and scaling fits 120 columns (rows with compact split labels, notes wrapped under their
# label), still says what it must (the best split, every grid cell's verdict, each
# infeasible point's reason, the atlas cell's verdict, every ranked split), and --wide gives
# the full split labels on wider lines.
set -u
ibt=$1 dir=$2
rm -rf "$dir" && mkdir -p "$dir"
fail() { echo "report_width_test: FAIL: $*" >&2; exit 1; }
widest() { awk '{ if (length($0) > m) m = length($0) } END { print m + 0 }' "$1"; }
run() {  # run NAME ARGS...: default and --wide output of one command into DIR/NAME{,-wide}.txt
  local name=$1
  shift
  "$ibt" "$@" > "$dir/$name.txt" 2> "$dir/$name.err" || fail "$name: exit $? ($(tail -1 "$dir/$name.err"))"
  "$ibt" "$@" --wide > "$dir/$name-wide.txt" 2> /dev/null || fail "$name --wide: exit $?"
  local w
  w=$(widest "$dir/$name.txt")
  if (( w > 120 )); then
    awk 'length($0) > 120' "$dir/$name.txt" >&2
    fail "$name: a line of $w columns in the default output (limit 120)"
  fi
  (( $(widest "$dir/$name-wide.txt") > 120 )) || fail "$name --wide: no line wider than 120 (full labels expected)"
  echo "report_width_test: $name: widest line $w columns (--wide: $(widest "$dir/$name-wide.txt"))"
}
run project project --model llama3-8b --topology dgx-h100 --gpus 64 --tp 2 --pp 2
run project_all project --model llama3-8b --topology dgx-h100 --gpus 64 --all --top 5
run crossover crossover --model llama3-8b --gpus 128 --domain-sizes 8,16 --scale-out-Gbps 100,400
run scaling scaling --model llama3-70b --topology dgx-a100,dgx-h100 --gpus 8,256 --global-batch 1024
run atlas crossover --atlas --atlas-file "$(dirname "$0")/../topologies/studies/atlas-small.json"
# Every split ranked: labels longer than the split column leaves room for continue below it.
run project_long project --model llama3-8b --topology dgx-h100 --gpus 64 --all --top 0 --global-batch 64 --shard-group 2

# What the narrow output must still say.
grep -Eq "^ +1  dp64 m32 zero[123]" "$dir/project_all.txt" || fail "project --all: rank 1 without its compact split"
grep -q "recompute=none" "$dir/project_all-wide.txt" || fail "project --all --wide: no full split label"
[[ $(grep -cE "^ +(8|16) +(100|400) .*(PP needed|PP not needed|within uncertainty)" "$dir/crossover.txt") == 4 ]] ||
  fail "crossover: not every one of the 4 cells has its verdict"
grep -q "<- own" "$dir/crossover.txt" || fail "crossover: the own fabric's cell is not marked"
grep -Eq "^failure assumptions: .*" "$dir/crossover.txt" || fail "crossover: no failure assumptions line"
grep -Eq "^ +256 +1024 .* dp64 cp4 ring m16 zero3 " "$dir/scaling.txt" || fail "scaling: the 256-device row lacks its split"
grep -q "no split fits in memory" "$dir/scaling.txt" || fail "scaling: the 8-device point's reason is missing"
grep -Eq "^llama3-8b +dgx-h100 +64 x 64 \(chosen\) +[-+][0-9.]+% +(PP needed|PP not needed|within uncertainty) " \
  "$dir/atlas.txt" || fail "crossover --atlas: the cell's line lacks its gain and verdict"
grep -q "^| llama3-8b | dgx-h100 | 64 x 64 | chosen |" "$dir/atlas-wide.txt" || fail "crossover --atlas --wide: no Markdown row"
# A label that continues below its row: its rest alone, in the split column (6 in).
grep -Eq "^      recompute=(selective|full)$" "$dir/project_long.txt" ||
  fail "project --all --top 0: no split label continued in its column"
[[ $(grep -cE "^ *[0-9]+  dp" "$dir/project_long.txt") == $(grep -cE "^ *[0-9]+  " "$dir/project_long-wide.txt") ]] ||
  fail "project --all --top 0: not as many ranked rows as with --wide"
echo "report_width_test: ok"
