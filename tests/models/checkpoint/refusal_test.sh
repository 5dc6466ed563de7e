#!/usr/bin/env bash
# refusal_test.sh IBT "MPIRUN WORDS" DIR
# What a resume must refuse (exit 2, one line naming the problem) and what it must skip:
# another split / world size / lr, a fresh run into old checkpoints, --dump with --resume,
# a directory without any complete checkpoint, a truncated or damaged shard; a step
# directory without manifest is skipped in favour of the newest complete one.
set -u
ibt=$1
read -r -a mpirun <<<"$2"
dir=$3
fail() { echo "refusal_test: $*" >&2; exit 1; }
rm -rf "$dir" && mkdir -p "$dir"
run2() { "${mpirun[@]}" -n 2 "$ibt" train --model tiny-dense --peak-gflops 1 "$@"; }
# expect CODE REGEX ARGS...: run2 ARGS must exit CODE with output matching REGEX.
expect() {
  local want=$1 pattern=$2
  shift 2
  local out got
  out=$("$@" 2>&1)
  got=$?
  [[ $got -eq $want ]] || { echo "$out"; fail "exit $got, expected $want: $*"; }
  grep -Eq -- "$pattern" <<<"$out" || { echo "$out"; fail "output does not match /$pattern/: $*"; }
}

run2 --dp 2 --steps 2 --checkpoint-every 1 --checkpoint-dir "$dir/ck" >"$dir/base.log" 2>&1 ||
  { cat "$dir/base.log"; fail "writing the checkpoints failed"; }
[[ -f $dir/ck/step-000001/manifest.json && -f $dir/ck/step-000002/manifest.json ]] || fail "checkpoints missing"

# Another configuration: refused, naming both values.
expect 2 "split: the checkpoint has 'dp2 tp1 pp1.*', this run has 'dp1 tp2 pp1.*resharding" \
  run2 --tp 2 --steps 3 --resume "$dir/ck"
expect 2 "world size: the checkpoint has 2 ranks, this run has 4 ranks" \
  "${mpirun[@]}" -n 4 "$ibt" train --model tiny-dense --peak-gflops 1 --dp 4 --steps 3 --resume "$dir/ck"
# The issue's example: a DP4 checkpoint resumed as DP2 x PP2 on the same 4 ranks.
"${mpirun[@]}" -n 4 "$ibt" train --model tiny-dense --peak-gflops 1 --dp 4 --steps 1 --checkpoint-every 1 \
  --checkpoint-dir "$dir/ck4" >"$dir/ck4.log" 2>&1 || { cat "$dir/ck4.log"; fail "writing the dp4 checkpoint failed"; }
expect 2 "split: the checkpoint has 'dp4 tp1 pp1 .*', this run has 'dp2 tp1 pp2 .*' \(.*resharding" \
  "${mpirun[@]}" -n 4 "$ibt" train --model tiny-dense --peak-gflops 1 --dp 2 --pp 2 --microbatches 2 --steps 3 --resume "$dir/ck4"
expect 2 "lr: the checkpoint has 0.003, this run has 0.001" run2 --dp 2 --lr 1e-3 --steps 3 --resume "$dir/ck"
expect 2 "seed: the checkpoint has 1234, this run has 5" run2 --dp 2 --seed 5 --steps 3 --resume "$dir/ck"
# Options that cannot be honoured.
expect 2 "already holds checkpoints \(step-000002\)" run2 --dp 2 --steps 3 --checkpoint-every 1 --checkpoint-dir "$dir/ck"
expect 2 "--dump .* cannot be combined with --resume" run2 --dp 2 --steps 3 --resume "$dir/ck" --dump "$dir/d.h5"
expect 2 "already reaches --steps 2" run2 --dp 2 --steps 2 --resume "$dir/ck"
expect 2 "--resume $dir/nowhere: no such directory" run2 --dp 2 --steps 3 --resume "$dir/nowhere"
expect 2 "needs --checkpoint-dir" run2 --dp 2 --steps 3 --checkpoint-every 1
# --check after a resume: the reference replays the first steps, step 2 still matches.
expect 0 "check: every step matches" run2 --dp 2 --steps 3 --resume "$dir/ck" --check

# Partial: the newest step directory lost its manifest (a writer died): skipped.
cp -r "$dir/ck" "$dir/partial" && rm "$dir/partial/step-000002/manifest.json"
expect 0 "skipping .*partial/step-000002: no manifest.json.*" run2 --dp 2 --steps 3 --resume "$dir/partial"
# Resuming into the same directory rewrites the partial step-000002 and completes it.
expect 0 "resumed from .*partial/step-000001: 1 steps done" \
  run2 --dp 2 --steps 3 --resume "$dir/partial" --checkpoint-every 1
[[ -f $dir/partial/step-000002/manifest.json && -f $dir/partial/step-000003/manifest.json ]] ||
  fail "the resumed run did not complete step-000002 and step-000003"
for r in 00000 00001; do  # the same state, so the same bytes (shards carry no timestamps)
  cmp -s "$dir/partial/step-000002/rank-$r.h5" "$dir/ck/step-000002/rank-$r.h5" ||
    fail "the rewritten step-000002/rank-$r.h5 differs from the original"
done
expect 0 "resumed from .*partial/step-000003: 3 steps done" run2 --dp 2 --steps 4 --resume "$dir/partial"
# No complete checkpoint at all.
mkdir -p "$dir/none/step-000001" "$dir/none/step-000002"
expect 2 "no complete checkpoint: step-000001, step-000002 lack manifest.json" \
  run2 --dp 2 --steps 3 --resume "$dir/none"
# Truncated shard of rank 1: refused, naming the file (not silently skipped).
cp -r "$dir/ck" "$dir/truncated" && truncate -s -64 "$dir/truncated/step-000002/rank-00001.h5"
expect 2 "rank-00001.h5 has [0-9]+ bytes, the manifest says [0-9]+" run2 --dp 2 --steps 3 --resume "$dir/truncated"
# Damaged shard of rank 0, same size: the checksum names it.
cp -r "$dir/ck" "$dir/damaged"
f=$dir/damaged/step-000002/rank-00000.h5
size=$(stat -c %s "$f")
printf '\xff\xfe\xfd\xfc' | dd of="$f" bs=1 seek=$((size / 2)) conv=notrunc status=none
[[ $(stat -c %s "$f") -eq $size ]] || fail "damaging changed the size"
expect 2 "rank-00000.h5 has checksum crc32:[0-9a-f]+, the manifest says crc32:[0-9a-f]+" \
  run2 --dp 2 --steps 3 --resume "$dir/damaged"
echo "refusal_test: ok"
