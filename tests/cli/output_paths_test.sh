#!/usr/bin/env bash
# output_paths_test.sh IBT "MPIRUN" SOURCE DIR: every path a command writes (--out of the
# results store, --junit, --write, whole-file --out, report's --out folder) is judged before
# any work, refused with exit 2 and a reason that carries its fix, leaving a file already
# there byte for byte as it was:
#   1. a missing folder, in every command that takes one ("does not exist: create it
#      (mkdir -p ...)");
#   2. a folder given where a file goes, a file where a folder goes;
#   3. permission denied: as root, /sys (the kernel refuses root a new file there, though
#      access(2) says yes); as an unprivileged user (the test's own, or nobody through
#      setpriv when run as root), a folder of mode 0555;
#   4. a virtual file system that takes no files (/proc): not "disk full";
#   5. a read-only file system and a full disk, on a small tmpfs mounted for the test
#      (root with CAP_SYS_ADMIN; otherwise said and skipped, the rest still checked);
#   6. a bad --junit under mpiexec: exit 2 at once, nothing measured, no MPI_Abort.
set -u
ibt=$1 src=$3 dir=$4
read -r -a mpirun <<<"$2"
rm -rf "$dir" && mkdir -p "$dir"
fail() { echo "output_paths_test: FAIL: $*" >&2; exit 1; }
ok() { echo "output_paths_test: ok: $*"; }
reference=$src/topologies/references/local-cpu.json
log=$src/tests/cli/import_log/megatron_llama3_8b.log
"${mpirun[@]}" -n 2 "$ibt" collectives --op all_reduce -b 8 -e 64 -n 2 -w 1 --out "$dir/r.h5" >/dev/null 2>&1 ||
  fail "no results file"
cp "$dir/r.h5" "$dir/r.before"

# refused LABEL PATTERN COMMAND...: exit 2, PATTERN in the output, no measurement line,
# r.h5 (the commands' input) unchanged, no probe or temporary file left in $dir.
refused() {
  local label=$1 pattern=$2 st=0 out
  shift 2
  out=$("$@" 2>&1) || st=$?
  [[ $st -eq 2 ]] || fail "$label: exit status $st (expected 2): $out"
  grep -qF -- "$pattern" <<<"$out" || fail "$label: message '$out' lacks '$pattern'"
  ! grep -qE "MPI_Abort|application called|^  (all_reduce|measured) " <<<"$out" || fail "$label: work or abort noise: $out"
  cmp -s "$dir/r.h5" "$dir/r.before" || fail "$label: the input file was changed"
  ! ls -A "$dir" | grep -q "ibt-probe\|ibt-tmp" || fail "$label: a probe or temporary file was left"
  ok "$label: $(grep -F -- "$pattern" <<<"$out" | head -1)"
}

# 1. A missing folder, every command.
nope=$dir/nope
why="folder '$nope' does not exist: create it (mkdir -p $nope) or choose another"
refused "collectives --out" "$nope/x.h5: $why --out" "$ibt" collectives -b 8 -e 8 --out "$nope/x.h5"
refused "p2p-matrix --out" "$nope/x.h5: $why --out" "${mpirun[@]}" -n 2 "$ibt" p2p-matrix --out "$nope/x.h5"
refused "train --out" "$nope/x.h5: $why --out" "$ibt" train --model tiny-dense --steps 1 --out "$nope/x.h5"
refused "sweep --out" "$nope/x.h5: $why --out" "$ibt" sweep --model tiny-dense --steps 2 --out "$nope/x.h5"
refused "checkpoint-bench --out" "$nope/x.h5: $why --out" \
  "$ibt" checkpoint-bench --state-bytes 1M --dir "$dir/ck" --out "$nope/x.h5"
refused "project --out" "$nope/x.h5: $why --out" \
  "$ibt" project --model llama3-8b --topology dgx-h100 --gpus 8 --out "$nope/x.h5"
refused "scaling --out" "$nope/x.h5: $why --out" \
  "$ibt" scaling --model llama3-8b --topology dgx-h100 --gpus 8,16 --out "$nope/x.h5"
refused "crossover --out" "$nope/x.h5: $why --out" \
  "$ibt" crossover --model llama3-8b --topology dgx-h100 --gpus 64 --out "$nope/x.h5"
refused "crossover --atlas --out" "$nope/x.h5: $why --out" \
  "$ibt" crossover --atlas --atlas-models gpt3-175b --atlas-topologies dgx-h100 --out "$nope/x.h5"
refused "import-log --out" "$nope/x.h5: $why --out" \
  "$ibt" import-log "$log" --model llama3-8b --topology dgx-h100 --out "$nope/x.h5"
refused "accept --from --out" "$nope/x.h5: $why --out" \
  "$ibt" accept --reference "$reference" --from "$dir/r.h5" --out "$nope/x.h5"
refused "accept --from --junit" "--junit $nope/a.xml: $why --junit" \
  "$ibt" accept --reference "$reference" --from "$dir/r.h5" --junit "$nope/a.xml"
refused "accept --write" "--write $nope/ref.json: $why --write" \
  "$ibt" accept --generate-reference dgx-h100 --ranks 16 --write "$nope/ref.json"
refused "calibrate --out" "--out $nope/t.json: $why --out" \
  "$ibt" calibrate "$dir/r.h5" --out "$nope/t.json" --allow-oversubscribed
refused "export --out" "--out $nope/r.json: $why --out" "$ibt" export "$dir/r.h5" --json --out "$nope/r.json"

# 6. The issue's case: accept under mpiexec with a --junit it cannot write, refused on
# every rank before the job measures (it was exit 4 and MPI_Abort after all the work).
refused "mpiexec accept --junit" "--junit $nope/a.xml: $why --junit" \
  "${mpirun[@]}" -n 2 "$ibt" accept --reference "$reference" --junit "$nope/a.xml"

# 2. A folder where a file goes, a file where a folder goes.
mkdir -p "$dir/afolder"
echo keep > "$dir/afile"
refused "--out a folder (store)" "$dir/afolder: is a directory, not a results file (name a file inside it, e.g. $dir/afolder/results.h5)" \
  "$ibt" project --model llama3-8b --topology dgx-h100 --gpus 8 --out "$dir/afolder"
refused "--junit a folder" "--junit $dir/afolder: is a folder; give a file name" \
  "$ibt" accept --reference "$reference" --from "$dir/r.h5" --junit "$dir/afolder"
refused "--out under a file (store)" "$dir/afile/x.h5: '$dir/afile' is not a folder: choose another --out" \
  "$ibt" project --model llama3-8b --topology dgx-h100 --gpus 8 --out "$dir/afile/x.h5"
refused "--write under a file" "--write $dir/afile/sub/r.json: a part of folder '$dir/afile/sub' is a file, not a folder" \
  "$ibt" accept --generate-reference dgx-h100 --ranks 16 --write "$dir/afile/sub/r.json"
refused "report --out a file" "--out $dir/afile: is a file, not a folder" "$ibt" report "$dir/r.h5" --out "$dir/afile"
[[ $(cat "$dir/afile") == keep ]] || fail "afile was changed"

# 3. Permission denied.
user=$(id -un)
if [[ $(id -u) -eq 0 ]]; then
  refused "root: --out under /sys" "/sys/x.h5: permission denied: user root (uid 0) cannot create files in folder '/sys'" \
    "$ibt" project --model llama3-8b --topology dgx-h100 --gpus 8 --out /sys/x.h5
  refused "root: --junit under /sys" "--junit /sys/a.xml: permission denied: user root (uid 0) cannot create files" \
    "$ibt" accept --reference "$reference" --from "$dir/r.h5" --junit /sys/a.xml
  refused "root: report --out under /sys" "--out /sys/ibt-report: cannot create the folder" \
    "$ibt" report "$dir/r.h5" --out /sys/ibt-report
fi
# Under /tmp, not the build folder: a checkout inside a closed home folder (or mktemp -d's
# 0700 folder) would refuse the other user a folder above, another reason than this one.
closed_root=$(mktemp -d /tmp/ibt-output-paths.XXXXXX)
closed=$closed_root/closed
trap 'rm -rf "$closed_root"' EXIT
mkdir -p "$closed" && cp "$dir/r.h5" "$reference" "$closed_root/" && chmod 0555 "$closed" && chmod -R a+rX "$closed_root"
readable=$closed_root/r.h5 readable_ref=$closed_root/$(basename "$reference")
as_user=()
if [[ $(id -u) -eq 0 ]]; then
  if command -v setpriv >/dev/null && setpriv --reuid=65534 --regid=65534 --clear-groups true 2>/dev/null; then
    as_user=(setpriv --reuid=65534 --regid=65534 --clear-groups) user=$(id -un 65534)
  else
    echo "output_paths_test: SKIP: running as root without setpriv: a mode-0555 folder is writable to root"
  fi
fi
if [[ $(id -u) -ne 0 || ${#as_user[@]} -gt 0 ]]; then
  uid=$("${as_user[@]}" id -u)
  denied="permission denied: user $user (uid $uid) cannot create files in folder '$closed'"
  refused "unprivileged: --out in a 0555 folder" "$closed/x.h5: $denied" \
    "${as_user[@]}" "$ibt" project --model llama3-8b --topology dgx-h100 --gpus 8 --out "$closed/x.h5"
  refused "unprivileged: --junit in a 0555 folder" "--junit $closed/a.xml: $denied" \
    "${as_user[@]}" "$ibt" accept --reference "$readable_ref" --from "$readable" --junit "$closed/a.xml"
  refused "unprivileged: --write in a 0555 folder" "--write $closed/r.json: $denied" \
    "${as_user[@]}" "$ibt" accept --generate-reference dgx-h100 --ranks 16 --write "$closed/r.json"
  refused "unprivileged: report into a 0555 folder" "--out $closed: $denied" \
    "${as_user[@]}" "$ibt" report "$readable" --out "$closed" --force
fi
rm -rf "$closed_root"

# 4. /proc takes no files: once reported as "disk full" (statvfs says 0 bytes free there).
refused "--out under /proc" "/proc/x.h5: folder '/proc' takes no new files (a virtual file system such as /proc)" \
  "$ibt" scaling --model llama3-8b --topology dgx-h100 --gpus 8,16 --out /proc/x.h5
refused "--junit under /proc" "--junit /proc/a.xml: folder '/proc' takes no new files" \
  "$ibt" accept --reference "$reference" --from "$dir/r.h5" --junit /proc/a.xml

# 5. A read-only file system and a full disk, on small tmpfs mounts.
mnt=$dir/mnt
mkdir -p "$mnt/ro" "$mnt/full"
if [[ $(id -u) -ne 0 ]] || ! mount -t tmpfs -o ro,size=1m ibt-ro "$mnt/ro" 2>"$dir/mount.err"; then
  echo "output_paths_test: SKIP: read-only and full file systems: cannot mount a tmpfs ($(cat "$dir/mount.err" 2>/dev/null || echo not root))"
  exit 0
fi
trap 'umount "$mnt/ro" 2>/dev/null; umount "$mnt/full" 2>/dev/null' EXIT
refused "--out on a read-only file system" "$mnt/ro/x.h5: folder '$mnt/ro' is on a read-only file system: choose another --out on a writable one" \
  "$ibt" project --model llama3-8b --topology dgx-h100 --gpus 8 --out "$mnt/ro/x.h5"
refused "--junit on a read-only file system" "--junit $mnt/ro/a.xml: folder '$mnt/ro' is on a read-only file system" \
  "$ibt" accept --reference "$reference" --from "$dir/r.h5" --junit "$mnt/ro/a.xml"
mount -t tmpfs -o size=4m ibt-full "$mnt/full" || fail "cannot mount the second tmpfs"
head -c 8M /dev/zero > "$mnt/full/filler" 2>/dev/null
refused "--out on a full disk" "$mnt/full/x.h5: disk full: its file system has" \
  "$ibt" project --model llama3-8b --topology dgx-h100 --gpus 8 --out "$mnt/full/x.h5"
refused "--write on a full disk" "--write $mnt/full/r.json: disk full: the file system of folder '$mnt/full' has" \
  "$ibt" accept --generate-reference dgx-h100 --ranks 16 --write "$mnt/full/r.json"
refused "--junit on a full disk: the fix" "free space or choose another --junit" \
  "$ibt" accept --reference "$reference" --from "$dir/r.h5" --junit "$mnt/full/a.xml"
