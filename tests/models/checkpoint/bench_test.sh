#!/usr/bin/env bash
# bench_test.sh IBT "MPIRUN WORDS" DIR: ibt checkpoint-bench on 2 ranks writes a readable
# summary (write and read rows) and per-rank samples, and removes its checkpoints.
set -u
ibt=$1
read -r -a mpirun <<<"$2"
dir=$3
fail() { echo "bench_test: $*" >&2; exit 1; }
rm -rf "$dir" && mkdir -p "$dir"
"${mpirun[@]}" -n 2 "$ibt" checkpoint-bench --state-bytes 2M --repeats 2 --dir "$dir/ck" --out "$dir/bench.h5" \
  >"$dir/bench.log" 2>&1 || { cat "$dir/bench.log"; fail "checkpoint-bench failed"; }
grep -q "page cache" "$dir/bench.log" || fail "no page-cache caveat printed"
summary=$("$ibt" export "$dir/bench.h5" --csv --table summary)
[[ $(awk -F, 'NR > 1 { print $3 }' <<<"$summary" | tr '\n' ' ') == "write read " ]] || { echo "$summary"; fail "summary rows"; }
awk -F, 'NR > 1 && !($4 > 0 && $7 > 0) { bad = 1 } END { exit bad }' <<<"$summary" || { echo "$summary"; fail "non-positive bandwidth"; }
# resident_before_read (last column) is a fraction in [0, 1].
"$ibt" export "$dir/bench.h5" --csv --table samples | awk -F, 'NR > 1 && !($NF >= 0 && $NF <= 1) { bad = 1 } END { exit bad }' ||
  fail "resident_before_read out of [0, 1]"
samples=$("$ibt" export "$dir/bench.h5" --csv --table samples | tail -n +2 | wc -l)
[[ $samples -eq 4 ]] || fail "$samples sample rows, expected 2 repeats x 2 ranks"
[[ ! -e $dir/ck ]] || fail "the benchmark left $dir/ck behind"
"${mpirun[@]}" -n 2 "$ibt" checkpoint-bench --state-bytes 2M --repeats 1 --dir "$dir/kept" --keep >/dev/null 2>&1 ||
  fail "--keep run failed"
[[ -f $dir/kept/step-000000/manifest.json && -f $dir/kept/step-000000/rank-00001.h5 ]] || fail "--keep kept nothing"
out=$("${mpirun[@]}" -n 2 "$ibt" checkpoint-bench --state-bytes 2M --dir "$dir/kept" 2>&1)
[[ $? -eq 2 ]] && grep -q -- "--dir $dir/kept already holds checkpoints (step-000000)" <<<"$out" ||
  { echo "$out"; fail "a directory with checkpoints was not refused"; }
out=$("$ibt" checkpoint-bench --state-bytes 3 2>&1)
[[ $? -eq 2 ]] && grep -q "must be a positive multiple of 4" <<<"$out" || { echo "$out"; fail "--state-bytes 3 not refused"; }
echo "bench_test: ok"
