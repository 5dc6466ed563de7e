#!/usr/bin/env bash
# atlas_cli_test.sh IBT EXPECT DIR: `ibt crossover --atlas` end to end on a one-cell atlas
# (atlas-small.json): per-cell progress on stderr, the cell's line on stdout with a
# verdict, an agreement that follows the verdict rules (topologies/studies/atlas.hpp), the
# table "atlas" in the HDF5 file, and its report section; bad atlas flags exit 2.
set -eu
ibt=$1 expect=$2 dir=$3 here=$(dirname "$0")
rm -rf "$dir" && mkdir -p "$dir"
"$ibt" crossover --atlas --atlas-file "$here/atlas-small.json" --jobs 2 --out "$dir/a.h5" > "$dir/out.txt" 2> "$dir/err.txt"
grep -q "atlas \[1/1\] llama3-8b on dgx-h100, 64 devices, batch 64: searching" "$dir/err.txt" \
  || { echo "atlas_cli_test: FAIL: no progress line on stderr" >&2; cat "$dir/err.txt" >&2; exit 1; }
line=$(grep -E "^llama3-8b +dgx-h100 +64 x 64 \(chosen\) +" "$dir/out.txt") \
  || { echo "atlas_cli_test: FAIL: no cell line" >&2; cat "$dir/out.txt" >&2; exit 1; }
# The verdict decides the agreement with practice "pp".
[[ $line =~ " "(PP needed +pp +agrees|PP not needed +pp +disagrees|within uncertainty +pp +undecided)" " ]] \
  || { echo "atlas_cli_test: FAIL: verdict and agreement do not follow the rules: $line" >&2; exit 1; }
verdict=$(sed -E 's/ +pp +.*//' <<< "${BASH_REMATCH[1]}")
grep -Eq "^  with PP +[0-9.]+% \(.*\) +[a-z]" "$dir/out.txt" && grep -Eq "^  without PP +[0-9.]+% \(.*\) +[a-z]" "$dir/out.txt" \
  || { echo "atlas_cli_test: FAIL: the cell's two bests are not under its line" >&2; cat "$dir/out.txt" >&2; exit 1; }
# --wide: the Markdown row of the same cell, with the same verdict and agreement.
"$ibt" crossover --atlas --atlas-file "$here/atlas-small.json" --jobs 2 --wide > "$dir/wide.txt" 2> /dev/null
row=$(grep "^| llama3-8b | dgx-h100 | 64 x 64 |" "$dir/wide.txt") \
  || { echo "atlas_cli_test: FAIL: no Markdown row with --wide" >&2; cat "$dir/wide.txt" >&2; exit 1; }
[[ $row == *"| $verdict | pp | "* ]] \
  || { echo "atlas_cli_test: FAIL: --wide's row says otherwise than '$verdict': $row" >&2; exit 1; }
"$ibt" report "$dir/a.h5" --out "$dir/html" > /dev/null
grep -q "Is pipeline parallelism still needed? The atlas" "$dir/html/index.html" \
  && grep -q "<figure id='fig-atlas_a.h5_" "$dir/html/index.html" \
  || { echo "atlas_cli_test: FAIL: no atlas section in the report" >&2; exit 1; }
"$expect" 2 "--atlas-models: no cell of .* has model 'gpt-5'" "$ibt" crossover --atlas --atlas-file "$here/atlas-small.json" --atlas-models gpt-5
"$expect" 2 "go with --atlas" "$ibt" crossover --atlas-models llama3-8b --model llama3-8b --gpus 8
"$expect" 2 "cells\[0\]: field 'practice'" sh -c "sed 's/\"practice\": \"pp\"/\"practice\": \"yes\"/' '$here/atlas-small.json' > '$dir/bad.json' && '$ibt' crossover --atlas --atlas-file '$dir/bad.json'"
echo "atlas_cli_test: ok"
