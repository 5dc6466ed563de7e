#!/usr/bin/env bash
# Files a command creates whole are never written over without --force: calibrate's
# topology, export's CSV/JSON, accept's JUnit XML and generated reference, report's
# folder. A refusal exits 2 and leaves the file byte for byte as it was; --force
# replaces it; no command's output is one of its inputs (accept, export, calibrate,
# report, import-log, train), --force or not, through a symlink or a hard link; a write that
# fails (a file-size limit) exits 4 and leaves the old file whole, with no temporary left.
source "$(dirname "$0")/lib.sh"
cd "$dir" || exit 1
"${mpirun[@]}" -n 2 "$ibt" collectives --op all_reduce -b 8 -e 64K -n 2 -w 1 --out r.h5 >/dev/null 2>&1 ||
  fail "no results file made"
cp r.h5 pristine.h5

# refused LABEL FILE PATTERN COMMAND...: exit 2, the message, FILE unchanged.
refused() {
  local label=$1 file=$2 pattern=$3 st=0 out
  shift 3
  cp -r "$file" "$dir/before.copy"
  out=$("$@" 2>&1) || st=$?
  [[ $st -eq 2 ]] || fail "$label: exit status $st (expected 2): $out"
  grep -q -- "$pattern" <<<"$out" || fail "$label: message '$out' lacks '$pattern'"
  diff -r "$file" "$dir/before.copy" >/dev/null || fail "$label: $file was changed"
  rm -rf "$dir/before.copy"
  ok "$label: refused (exit 2), unchanged: $(tail -1 <<<"$out")"
}

# calibrate
refused "calibrate over its input" r.h5 "is the results file r.h5, one of this command's inputs" \
  "$ibt" calibrate r.h5 --out r.h5 --allow-oversubscribed
refused "calibrate over its input, --force" r.h5 "is the results file r.h5, one of this command's inputs" \
  "$ibt" calibrate r.h5 --out r.h5 --allow-oversubscribed --force
echo '{"mine": true}' >topo.json
refused "calibrate over a file" topo.json "the file exists and is left as it is" \
  "$ibt" calibrate r.h5 --out topo.json --allow-oversubscribed
"$ibt" calibrate r.h5 --out topo.json --allow-oversubscribed --force >/dev/null 2>&1 || fail "calibrate --force failed"
grep -q '"fits"' topo.json || fail "calibrate --force did not write the topology"
ok "calibrate --force replaces the file"

# export (--out and its old spelling --output)
cp pristine.h5 other.h5
refused "export --json over a results file" other.h5 "the file exists and is left as it is" \
  "$ibt" export r.h5 --json --output other.h5
refused "export --csv over a file" topo.json "the file exists and is left as it is" \
  "$ibt" export r.h5 --csv --out topo.json
refused "export over its input, --force" r.h5 "is the results file r.h5, one of this command's inputs" \
  "$ibt" export r.h5 --json --out r.h5 --force
mkdir -p afolder
refused "export to a folder" afolder "is a folder" "$ibt" export r.h5 --json --out afolder --force
"$ibt" export r.h5 --json --out other.h5 --force || fail "export --force failed"
grep -q '"schema": "ibt-results"' other.h5 || fail "export --force did not write the JSON"
ok "export --force replaces the file"

# accept: the JUnit report and a generated reference, refused before any measurement
echo '<keep/>' >junit.xml
refused "accept --junit over a file" junit.xml "the file exists and is left as it is" \
  "$ibt" accept --reference "$(dirname "$0")/../../topologies/references/local-cpu.json" --junit junit.xml
refused "accept --write over a file" topo.json "the file exists and is left as it is" \
  "$ibt" accept --generate-reference dgx-h100 --ranks 16 --write topo.json
"$ibt" accept --generate-reference dgx-h100 --ranks 16 --write topo.json --force >/dev/null || fail "accept --write --force"
grep -q '"metrics"' topo.json || fail "accept --write --force did not write the reference"
ok "accept --write --force replaces the file"

# report: a folder that holds files, or a results file as the folder
mkdir -p page && echo mine >page/notes.txt
refused "report into a folder that holds files" page "already holds files" "$ibt" report r.h5 --out page
refused "report over a results file" r.h5 "is a file, not a folder" "$ibt" report r.h5 --out r.h5 --force

# No command writes over one of its own inputs, --force or not (the same file by device and
# inode: a symlink or a hard link to an input is refused too).
ln -sf r.h5 link.h5
ln -f r.h5 hard.h5
refused "accept --generate-reference F.h5 --write F.h5 --force" r.h5 "--write r.h5: is --generate-reference r.h5" \
  "$ibt" accept --generate-reference r.h5 --write r.h5 --force
refused "accept --write over its results file by a symlink" r.h5 "--write link.h5: is --generate-reference r.h5" \
  "$ibt" accept --generate-reference r.h5 --write link.h5 --force
refused "accept --junit over its --from, a hard link" r.h5 "--junit hard.h5: is --from r.h5" \
  "$ibt" accept --reference "$(dirname "$0")/../../topologies/references/local-cpu.json" --from r.h5 \
  --junit hard.h5 --force
cp "$(dirname "$0")/../../topologies/references/local-cpu.json" ref.json
refused "accept --junit over its --reference" ref.json "--junit ref.json: is --reference ref.json" \
  "$ibt" accept --reference ref.json --from r.h5 --junit ref.json --force
refused "accept --out onto its --from" r.h5 "--out r.h5: is --from r.h5" \
  "$ibt" accept --reference ref.json --from r.h5 --out r.h5
refused "export over its input by a symlink, --force" r.h5 "--out link.h5: is the results file r.h5" \
  "$ibt" export r.h5 --csv --table collectives --out link.h5 --force
mkdir -p reportdir && cp pristine.h5 reportdir/in.h5
refused "report into the folder that holds its input, --force" reportdir "--out reportdir: holds the results file" \
  "$ibt" report reportdir/in.h5 --out reportdir --force
refused "report into a folder above its input, --force" reportdir "--out .: holds the results file" \
  "$ibt" report reportdir/in.h5 --out . --force
printf 'not a log\n' > train.log
refused "import-log --out onto its log" train.log "--out train.log: is the log train.log" \
  "$ibt" import-log train.log --format megatron --model llama3-8b --topology dgx-h100 --out train.log
cp "$(dirname "$0")/../../models/catalog/tiny-dense.json" model.json
refused "train --out onto its --model" model.json "--out model.json: is --model model.json" \
  "$ibt" train --model model.json --steps 1 --out model.json
refused "train --dump onto its --model" model.json "--dump model.json: is --model model.json" \
  "$ibt" train --model model.json --steps 1 --dump model.json
rm -f link.h5 hard.h5

# A replacement that cannot be written (file-size limit): exit 4, the old file whole, no temporary.
cp topo.json topo.before
st=0
out=$( (ulimit -f 2; "$ibt" export r.h5 --json --out topo.json --force) 2>&1) || st=$?
[[ $st -eq 4 ]] || fail "export under a file-size limit: exit $st (expected 4): $out"
grep -q "topo.json: not written: file too large" <<<"$out" || fail "export under a file-size limit: message '$out'"
cmp -s topo.json topo.before || fail "export under a file-size limit damaged the old file"
ls -a | grep -q 'ibt-tmp' && fail "a temporary file was left behind"
ok "a failed replacement (EFBIG) exits 4 and keeps the old file whole"
cmp -s r.h5 pristine.h5 || fail "the results file was changed by one of the commands above"
ok "the results file read by every command is unchanged"
