#!/usr/bin/env bash
# training_report_test.sh IBT "MPIRUN" DIR: the training and crossover figures from real
# runs: projections (ibt project --all) at two device counts, a crossover grid, and
# measured CPU training (ibt train) at 1 and 2 ranks; then the page is built and loaded.
# Exit 77 (skipped) when this ibt has no project/crossover/train commands yet.
set -eu
ibt=$1 mpirun=$2 dir=$3 here=$(dirname "$0")
for cmd in project crossover train; do
  if ! "$ibt" --help | grep -q "^  $cmd "; then echo "training_report_test: ibt has no '$cmd' command" >&2; exit 77; fi
done
rm -rf "$dir" && mkdir -p "$dir"
for gpus in 64 128; do
  "$ibt" project --model llama3-8b --topology dgx-h100 --gpus $gpus --all --out "$dir/t.h5" > /dev/null
done
"$ibt" crossover --model llama3-8b --gpus 128 --domain-sizes 8,16 --scale-out-Gbps 100,400 --out "$dir/t.h5" > /dev/null
$mpirun -n 1 "$ibt" train --model tiny-dense --steps 3 --out "$dir/t.h5" > /dev/null
$mpirun -n 2 "$ibt" train --model tiny-dense --dp 2 --steps 3 --out "$dir/t.h5" > /dev/null
"$ibt" report "$dir/t.h5" --out "$dir/html"
page=$dir/html/index.html
for fig in mfu_llama3-8b breakdown_llama3-8b mfu_tiny-dense breakdown_tiny-dense crossover_t.h5_; do
  grep -q "<figure id='fig-$fig" "$page" || { echo "training_report_test: FAIL: no figure $fig" >&2; exit 1; }
done
if grep -q "No training runs in these files" "$page"; then echo "training_report_test: FAIL: training said absent" >&2; exit 1; fi
"$here/../reports/html/browser_check.sh" "$page" "$dir/training.png" 5
/usr/bin/python3 "$here/../reports/html/figure_layout_check.py" "$dir/html" "$dir/training-1280.png"
echo "training_report_test: ok"
