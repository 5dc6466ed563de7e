#!/usr/bin/env bash
# A training loss that stops being finite ends the run: exit 1, a message naming the
# step and the rank, the run stored as failed with that reason and the rows up to that
# step, and no checkpoint of the diverged state (the newest stays the last finite one).
# The NaN is injected (--inject-nan-loss-at-step) on the last rank: with AdamW and the
# largest --lr accepted (10), tiny-dense's loss swings to thousands but stays finite.
source "$(dirname "$0")/lib.sh"
cd "$dir" || exit 1
st=0
"${mpirun[@]}" -n 2 "$ibt" train --model tiny-dense --dp 2 --steps 6 --inject-nan-loss-at-step 3 \
  --checkpoint-every 1 --checkpoint-dir ck --out d.h5 >log 2>&1 || st=$?
cat log
[[ $st -eq 1 ]] || fail "exit status $st (expected 1)"
grep -q "FAILED: step 3: the training loss became nan on rank 1 .*training diverged" log ||
  fail "the message does not name the step, the rank and the NaN"
"$ibt" show d.h5 | grep -q "000001 .*train .*failed" || fail "the run is not stored as failed"
[[ $(attr d.h5 000001 error) == "step 3: the training loss became nan on rank 1"* ]] ||
  fail "the stored reason is '$(attr d.h5 000001 error)'"
[[ $(rows d.h5 000001 steps) -eq 4 ]] || fail "$(rows d.h5 000001 steps) step rows stored (expected 4: steps 0-3)"
# step-NNNNNN holds the state after NNNNNN steps: steps 0-2 were finite, step 3 was not.
[[ $(ls ck) == $'step-000001\nstep-000002\nstep-000003' ]] || fail "checkpoints: $(ls ck | tr '\n' ' ')"
ok "NaN loss at step 3: exit 1, failed with the step and rank, 4 step rows, newest checkpoint the last finite step"
# The last finite checkpoint resumes.
"${mpirun[@]}" -n 2 "$ibt" train --model tiny-dense --dp 2 --steps 5 --resume ck --out d.h5 >resume.log 2>&1 ||
  { cat resume.log; fail "resuming from the last finite checkpoint failed"; }
"$ibt" show d.h5 | grep -q "000002 .*train .*complete" || fail "the resumed run is not complete"
ok "the newest checkpoint (before the divergence) resumes"
