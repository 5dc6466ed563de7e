#!/usr/bin/env bash
# A real full disk (ENOSPC) on a small tmpfs mounted for the test: an append that runs out
# of space exits 4 naming the file and "disk full", every earlier run stays readable and
# the file takes appends again once there is room; a checkpoint save that runs out of
# space never damages the last complete checkpoint, which resumes. Mounting needs root
# (CAP_SYS_ADMIN): without it the test is skipped (77) and says why; the unprivileged
# file-size-limit case (ulimit -f, EFBIG) is in store_faults_test.sh.
source "$(dirname "$0")/lib.sh"
mnt=$dir/mnt
mkdir -p "$mnt"
if [[ $(id -u) -ne 0 ]]; then echo "disk_full_test: SKIP: not root, cannot mount a small file system"; exit 77; fi
if ! mount -t tmpfs -o size=64m ibt-disk-full "$mnt" 2>"$dir/mount.err"; then
  echo "disk_full_test: SKIP: cannot mount a tmpfs: $(cat "$dir/mount.err")"; exit 77
fi
trap 'cleanup_marker "$mnt"; umount "$mnt" 2>/dev/null' EXIT
# fill_leaving BYTES: a filler file takes all free space but BYTES.
fill_leaving() {
  rm -f "$mnt/filler"
  local free=$(( $(stat -f -c '%a * %S' "$mnt") ))
  head -c $((free - $1)) /dev/zero >"$mnt/filler" 2>/dev/null
  return 0
}

# 1. The results store. (a) Less free space than the store's margin: refused before any
# work (exit 2), the file unchanged byte for byte. (b) The disk fills while a run appends
# (another process takes the space): exit 4 naming ENOSPC and the file, run 1 intact.
file=$mnt/full.h5
"$ibt" collectives --op all_reduce -b 8 -e 64 -n 2 -w 1 --out "$file" >/dev/null 2>&1 || fail "store: first run failed"
cp "$file" "$dir/before.h5"
fill_leaving $((1024 * 1024))
status=0
output=$("$ibt" collectives --op all_reduce -b 8 -e 64 -n 2 -w 1 --out "$file" 2>&1) || status=$?
[[ $status -eq 2 ]] || fail "store: nearly full: exit status $status (expected 2): $output"
grep -q "$file: disk full: its file system has [0-9]* bytes free" <<<"$output" || fail "store: nearly full: message '$output'"
cmp -s "$file" "$dir/before.h5" || fail "store: nearly full: the file was changed"
ok "store on a nearly full tmpfs: refused before work (exit 2), unchanged: $output"
rm -f "$mnt/filler"
log=$dir/append.log
"$ibt" train --model tiny-dense --steps 1000000 -T 30 --out "$file" >"$log" 2>&1 &
job=$!
wait_for '^ *20 ' "$log" 60 || { kill -KILL $job; fail "store: the appending run made no progress"; }
head -c 100M /dev/zero >"$mnt/filler" 2>/dev/null  # takes every free byte
status=0
timeout 60 tail --pid=$job -f /dev/null || { kill -KILL $job; fail "store: the run did not end within 60 s of the full disk"; }
wait $job || status=$?
grep -i error "$log"
[[ $status -eq 4 ]] || fail "store: full during the run: exit status $status (expected 4)"
grep -q "$file: disk full (ENOSPC" "$log" || fail "store: the message does not name the file and ENOSPC"
h5dump -H "$file" >/dev/null || fail "store: h5dump cannot read the file"
"$ibt" show "$file" | grep -q "000001 .*complete" || fail "store: run 1 is not readable and complete"
"$ibt" export "$file" --run 1 --csv >/dev/null || fail "store: export cannot read run 1"
rm -f "$mnt/filler"
"$ibt" collectives --op all_reduce -b 8 -e 64 -n 2 -w 1 --out "$file" >/dev/null 2>&1 || fail "store: no append once there is room"
"$ibt" show "$file" | grep -Eq "00000[23] .*complete" || fail "store: the append after the full disk is missing"
ok "store filled during a run: exit 4 naming ENOSPC and the file, run 1 intact, appends again with room"
rm -f "$file"

# 2. Checkpoints: tiny-dense's state is ~2.8 MB per save; saves run out of space partway.
ck=$mnt/ck log=$dir/ckpt.log
fill_leaving $((7 * 1024 * 1024))
status=0
"$ibt" train --model tiny-dense --steps 8 --checkpoint-every 1 --checkpoint-dir "$ck" >"$log" 2>&1 || status=$?
grep -i "error" "$log"
[[ $status -eq 4 ]] || fail "checkpoint: a save on a full disk: exit status $status (expected 4)"
grep -q "rank-00000.h5: disk full" "$log" || fail "checkpoint: the error does not say the disk is full"
last=$(for d in "$ck"/step-*; do [[ -f $d/manifest.json ]] && basename "$d"; done | sort | tail -1)
[[ -n $last ]] || fail "checkpoint: no complete checkpoint survived"
rm -f "$mnt/filler"
"$ibt" train --model tiny-dense --steps 9 --resume "$ck" >"$dir/resume.log" 2>&1 ||
  { cat "$dir/resume.log"; fail "checkpoint: the last complete checkpoint ($last) does not resume"; }
grep -q "$last" "$dir/resume.log" || fail "checkpoint: the resume did not start from $last"
ok "checkpoint save on a full tmpfs: exit $status, the last complete checkpoint ($last) resumes"
