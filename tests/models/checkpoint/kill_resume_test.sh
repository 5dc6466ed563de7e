#!/usr/bin/env bash
# kill_resume_test.sh IBT "MPIRUN WORDS" DIR RANKS TRAIN-ARGS...
# Trains 6 steps uninterrupted; trains again with a checkpoint every 2 steps and rank 0
# killed (SIGKILL) after step 4, so the newest checkpoint is step-000004 and step 4's work
# is lost; resumes from it to step 6. The losses of the resumed steps (and of the steps
# before the kill) must equal the uninterrupted run's exactly (ibt export prints exact
# values), and so must the final state: both runs' step-6 shards are compared byte by byte.
set -u
ibt=$1
read -r -a mpirun <<<"$2"
dir=$3 ranks=$4
shift 4
fail() { echo "kill_resume_test: $*" >&2; exit 1; }
rm -rf "$dir" && mkdir -p "$dir"
train=("${mpirun[@]}" -n "$ranks" "$ibt" train "$@" --steps 6 --peak-gflops 1)
losses() { "$ibt" export "$1" --csv --table steps | awk -F, 'NR > 1 { print $3 "," $4 }'; }

"${train[@]}" --checkpoint-every 2 --checkpoint-dir "$dir/full_ck" --out "$dir/full.h5" >"$dir/full.log" 2>&1 ||
  { cat "$dir/full.log"; fail "uninterrupted run failed"; }

"${train[@]}" --checkpoint-every 2 --checkpoint-dir "$dir/ck" --exit-after-step 4 --out "$dir/killed.h5" \
  >"$dir/killed.log" 2>&1 && { cat "$dir/killed.log"; fail "the killed run exited 0"; }
grep -q "exit-after-step 4: rank 0 kills itself" "$dir/killed.log" || { cat "$dir/killed.log"; fail "no kill message"; }
for s in 000002 000004; do
  [[ -f $dir/ck/step-$s/manifest.json ]] || fail "step-$s has no manifest"
  n=$(ls "$dir/ck/step-$s"/rank-*.h5 | wc -l)
  [[ $n -eq $ranks ]] || fail "step-$s has $n shards, expected $ranks"
done
[[ ! -e $dir/ck/step-000006 ]] || fail "a checkpoint after the kill exists"

"${train[@]}" --checkpoint-every 2 --resume "$dir/ck" --out "$dir/resumed.h5" >"$dir/resumed.log" 2>&1 ||
  { cat "$dir/resumed.log"; fail "resumed run failed"; }
grep -Eq "resumed from .*/ck/step-000004: 4 steps done" "$dir/resumed.log" || { cat "$dir/resumed.log"; fail "did not resume from step-000004"; }
[[ -f $dir/ck/step-000006/manifest.json ]] || fail "the resumed run wrote no step-000006 checkpoint"

full=$(losses "$dir/full.h5")
killed=$(losses "$dir/killed.h5")
resumed=$(losses "$dir/resumed.h5")
[[ $(wc -l <<<"$full") -eq 6 ]] || fail "uninterrupted run has not 6 steps: $full"
[[ $(head -n 5 <<<"$full") == "$killed" ]] || fail "steps 0-4 before the kill differ:"$'\n'"$full"$'\n---\n'"$killed"
[[ $(tail -n 2 <<<"$full") == "$resumed" ]] ||
  fail "resumed losses differ from the uninterrupted run's:"$'\n'"$(tail -n 2 <<<"$full")"$'\n---\n'"$resumed"

# The whole state, not only the loss: the final checkpoints' shards (weights, optimizer
# moments, biases) are byte-identical (shards carry no timestamps).
for f in "$dir"/full_ck/step-000006/rank-*.h5; do
  cmp -s "$f" "$dir/ck/step-000006/$(basename "$f")" ||
    fail "step-000006/$(basename "$f") differs between the uninterrupted and the resumed run"
done

# Records: the resumed run says where it came from and tables its checkpoint.
h5dump -a /runs/000001/resumed_from_step "$dir/resumed.h5" | grep -q "(0): 4" || fail "resumed_from_step not 4"
rows=$("$ibt" export "$dir/resumed.h5" --csv --table checkpoints | awk -F, 'NR > 1 { print $3 }')
[[ $rows == 6 ]] || fail "checkpoints table of the resumed run: '$rows', expected step 6"
ranks_rows=$("$ibt" export "$dir/resumed.h5" --csv --table checkpoint_ranks | tail -n +2 | wc -l)
[[ $ranks_rows -eq $ranks ]] || fail "checkpoint_ranks has $ranks_rows rows, expected $ranks"
echo "kill_resume_test: ok (losses of steps 4 and 5 equal after kill and resume:"
echo "$resumed"
echo ")"
