#!/usr/bin/env bash
# import_log_detect_test.sh IBT DIR: `ibt import-log` without --format, on the excerpts in
# import_log/ (written for the tests in each framework's format):
#   1. each format told from its own lines: Megatron-LM by its arguments banner, NeMo 1.x
#      by its configuration dump, NeMo 2.0 by train_step_timing (its "iteration 10/99 |"
#      is not Megatron's), torchtitan by its metrics line; the import says so (format and
#      line) and stores where the format came from (source_format_from), the same steps as
#      with --format;
#   2. a log with no framework's lines (exit 2), one with two frameworks' (a Megatron and a
#      NeMo log in one file: exit 2 naming both with their lines and the --format to give),
#      --config on a log detected as Megatron (exit 2): nothing appended, the results file
#      byte for byte as it was;
#   3. --format overrides the detection (the two-framework file imports as nemo), and a
#      misspelt --format is refused before the log is read;
#   4. help and the command list say which formats it reads.
set -u
ibt=$1 dir=$2 here=$(dirname "$0")
rm -rf "$dir" && mkdir -p "$dir"
fail() { echo "import_log_detect_test: FAIL: $*" >&2; exit 1; }
ok() { echo "import_log_detect_test: ok: $*"; }
data=$here/import_log
common=(--model llama3-8b --topology dgx-h100)
attr() { /usr/bin/python3 -c "import h5py,sys; f=h5py.File(sys.argv[1]); r=f['runs'][sorted(f['runs'])[-1]]; print(r.attrs[sys.argv[2]])" "$@"; }
steps() { /usr/bin/python3 -c "import h5py,sys; f=h5py.File(sys.argv[1]); r=f['runs'][sorted(f['runs'])[-1]]; print(list(r['steps']['step_time']))" "$1"; }

# detected NAME FORMAT LINE LOG ARGS...: imports LOG without --format into NAME.h5 and with
# --format FORMAT into NAME-f.h5: exit 0, "(FORMAT detected from line LINE", the attribute,
# and the same step times either way.
detected() {
  local name=$1 format=$2 line=$3 log=$4 out
  shift 4
  out=$("$ibt" import-log "$log" "$@" "${common[@]}" --out "$dir/$name.h5" 2>&1) || fail "$name: exit $?: $out"
  grep -q "^ibt import-log: $log ($format detected from line $line, " <<<"$out" || fail "$name: output '$out'"
  [[ $(attr "$dir/$name.h5" source_format) == "$format" ]] || fail "$name: source_format"
  [[ $(attr "$dir/$name.h5" source_format_from) == "detected from line $line: "* ]] ||
    fail "$name: source_format_from '$(attr "$dir/$name.h5" source_format_from)'"
  "$ibt" import-log "$log" --format "$format" "$@" "${common[@]}" --out "$dir/$name-f.h5" >/dev/null 2>&1 ||
    fail "$name: --format $format failed"
  [[ $(attr "$dir/$name-f.h5" source_format_from) == "--format" ]] || fail "$name: --format not recorded"
  [[ $(steps "$dir/$name.h5") == "$(steps "$dir/$name-f.h5")" ]] || fail "$name: other steps than with --format"
  ok "$name: $format from line $line: $(head -1 <<<"$out")"
}
detected megatron megatron 2 "$data/megatron_llama3_8b.log"
[[ $(attr "$dir/megatron.h5" source_format_from) == "detected from line 2: the arguments banner" ]] ||
  fail "megatron: source_format_from does not name the banner"
detected nemo1 nemo 4 "$data/nemo1_llama3_8b.log"
detected nemo2 nemo 3 "$data/nemo2_llama3_8b.log" --config "$data/nemo2_llama3_8b.yaml"
detected torchtitan torchtitan 3 "$data/torchtitan_llama3_8b.log" --config "$data/torchtitan_llama3_8b.toml" \
  --world-size 16

# refused LABEL PATTERN ARGS...: exit 2, the message, the results file unchanged.
cp "$dir/megatron.h5" "$dir/kept.h5"
cp "$dir/kept.h5" "$dir/before.h5"
refused() {
  local label=$1 pattern=$2 st=0 out
  shift 2
  out=$("$ibt" import-log "$@" "${common[@]}" --out "$dir/kept.h5" 2>&1) || st=$?
  [[ $st -eq 2 ]] || fail "$label: exit status $st (expected 2): $out"
  grep -qF -- "$pattern" <<<"$out" || fail "$label: message '$out' lacks '$pattern'"
  cmp -s "$dir/kept.h5" "$dir/before.h5" || fail "$label: the results file was changed"
  ok "$label: exit 2, file unchanged: $out"
}
printf 'epoch 1 done\nloss went down\n' > "$dir/plain.log"
refused "no framework's lines" "$dir/plain.log: no line shows which framework wrote this log (megatron by the arguments banner" \
  "$dir/plain.log"
refused "no framework's lines: the fix" "say which with --format megatron|nemo|torchtitan" "$dir/plain.log"
cat "$data/megatron_llama3_8b.log" "$data/nemo2_llama3_8b.log" > "$dir/two.log"
nemo_line=$(($(wc -l < "$data/megatron_llama3_8b.log") + 3))
refused "two frameworks' lines" \
  "two.log: the log has the marks of 2 formats, megatron (line 2: the arguments banner) and nemo (line $nemo_line: a 'train_step_timing in s' metric)" \
  "$dir/two.log"
refused "two frameworks' lines: the fix" "say which wrote the run to import with --format megatron or --format nemo" \
  "$dir/two.log"
refused "--config on a detected megatron log" "--config: this megatron log (detected) carries its own layout" \
  "$data/megatron_llama3_8b.log" --config "$data/nemo2_llama3_8b.yaml"
refused "a misspelt --format" "--format 'megatorn': the formats read are megatron, nemo and torchtitan" \
  /nonexistent.log --format megatorn

# --format overrides: the two-framework file read as the NeMo run in it.
out=$("$ibt" import-log "$dir/two.log" --format nemo --config "$data/nemo2_llama3_8b.yaml" "${common[@]}" \
  --out "$dir/two.h5" 2>&1) || fail "--format nemo on the two-framework log: exit $?: $out"
grep -q "^ibt import-log: $dir/two.log (nemo, " <<<"$out" || fail "--format nemo: output '$out'"
[[ $(steps "$dir/two.h5") == "$(steps "$dir/nemo2.h5")" ]] || fail "--format nemo: not the NeMo run's steps"
ok "--format overrides the detection: $(head -1 <<<"$out")"

# Help and the command list name the formats.
"$ibt" import-log --help > "$dir/help.txt" || fail "import-log --help: exit $?"
grep -q "Without --format the format is" "$dir/help.txt" || fail "help does not say the format is detected"
grep -q "(default: the one its lines show)" "$dir/help.txt" || fail "help: --format"
"$ibt" --help --wide | grep -q "import-log .*Megatron-LM, NeMo or torchtitan training log" ||
  fail "ibt --help: import-log's summary does not name the formats"
ok "help names the formats and the detection"
