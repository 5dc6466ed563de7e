#!/usr/bin/env bash
# import_log_test.sh IBT DIR: `ibt import-log` on a Megatron-LM log excerpt written for
# this test in Megatron's format (import_log/, not a copied log):
#   1. the layout from the arguments block, the median iteration after the warm-up
#      interval (7.1 s of 7.0/7.2/7.1 s), provenance (format, parser version, SHA-256 equal
#      to sha256sum's), one 'steps' row per logged interval;
#   2. the run appears in project-compare beside its projection and in scaling --measured
#      (its row saying it has no breakdown), and the report of both draws no empty
#      breakdown, names the projected system with "with measured runs" and passes the
#      figure layout check (where chromium is installed);
#   3. a truncated log, a model that does not match and an unknown format: exit 2, one line.
set -eu
ibt=$1 dir=$2 here=$(dirname "$0")
py=/usr/bin/python3
rm -rf "$dir" && mkdir -p "$dir"
fail() { echo "import_log_test: FAIL: $*" >&2; exit 1; }
log=$here/import_log/megatron_llama3_8b.log

"$ibt" import-log "$log" --format megatron --model llama3-8b --topology dgx-h100 --out "$dir/m.h5" > "$dir/imp.txt"
grep -q "dp4 tp2 pp2 ep1 vpp1 m16 b1 1f1b sp zero1 recompute=full on 16 x NVIDIA H100" "$dir/imp.txt" ||
  { cat "$dir/imp.txt"; fail "layout not read from the arguments block"; }
grep -q "median iteration 7.1 s" "$dir/imp.txt" || { cat "$dir/imp.txt"; fail "median iteration is not 7.1 s"; }
"$py" - "$dir/m.h5" "$(sha256sum "$log" | cut -d' ' -f1)" <<'PY' || fail "stored run"
import sys, h5py
f = h5py.File(sys.argv[1]); run = f["runs"][sorted(f["runs"])[-1]]
a = run.attrs
assert a["source_sha256"] == sys.argv[2], (a["source_sha256"], sys.argv[2])
assert a["source_format"] == "megatron" and a["parser_version"] == "megatron-2"
assert a["median_step_s"] == 7.1 and a["world_size"] == 16
s = run["steps"][:]
assert list(s["iteration"]) == [10, 20, 30, 40] and list(s["step"]) == [0, 1, 2, 3], s
assert list(s["logged_tflops_per_gpu"]) == [420.0, 546.0, 531.0, 538.0]
print("stored run: ok")
PY
"$ibt" project-compare "$dir/m.h5" --topology dgx-h100 > "$dir/pc.txt" || true
# The measured step of a log is its median timed iteration (7.0, 7.1, 7.2 s), as import-log states it.
grep -Eq "^  step +7\.10000 +[0-9.]+ .*\(a megatron log has no time breakdown\)" "$dir/pc.txt" ||
  { cat "$dir/pc.txt"; fail "no measured step beside its projection"; }
# Priced as the framework trains (bf16 mixed precision on the H100), not as ibt's fp32 CPU
# engine (which projects this split at about 64 s a step).
awk '$1 == "step" { exit !($3 > 1 && $3 < 20) }' "$dir/pc.txt" || { cat "$dir/pc.txt"; fail "not priced in bf16"; }
"$ibt" scaling --model llama3-8b --topology dgx-h100 --gpus 16 --global-batch 64 --measured "$dir/m.h5" > "$dir/sc.txt"
grep -q "measured ($dir/m.h5): 1 point" "$dir/sc.txt" || { cat "$dir/sc.txt"; fail "scaling --measured lacks the run"; }
# The log's point beside the projection of its own split: the difference is project-compare's
# (projected step / measured step - 1), not the gap to ibt's best split.
want=$(awk '$1 == "step" { printf "%+.1f", 100 * ($3 / $2 - 1) }' "$dir/pc.txt")
tr '\n' ' ' < "$dir/sc.txt" | tr -s ' ' | grep -q "its split projected on dgx-h100 [0-9.]*% ($want%)" ||
  { cat "$dir/sc.txt"; fail "the log's point is not beside its own split's projection ($want%)"; }
grep -Eq "^ +16 +64 .* - \(a log has no breakdown\)$" "$dir/sc.txt" || { cat "$dir/sc.txt"; fail "the log's row does not say it has no breakdown"; }
# The report of the projection and the log: figures that pass the layout check (a log has no
# breakdown, so it draws no breakdown bar; an empty panel would fail as 'no data elements').
"$ibt" scaling --model llama3-8b --topology dgx-h100 --gpus 16,32 --global-batch 64 --measured "$dir/m.h5" \
  --out "$dir/sc.h5" > /dev/null
"$ibt" report "$dir/sc.h5" "$dir/m.h5" --out "$dir/report" --force > /dev/null 2>&1 || fail "report of the imported log"
grep -q "with measured runs" "$dir/report/scaling_llama3-8b_strong.svg" || fail "the scaling title does not say it has measured runs"
[[ ! -e $dir/report/breakdown_llama3-8b.svg ]] || fail "a breakdown figure was drawn for a run without a breakdown"
if command -v chromium > /dev/null; then
  "$py" "$here/../reports/html/figure_layout_check.py" "$dir/report" > "$dir/layout.txt" 2>&1 ||
    { cat "$dir/layout.txt"; fail "the report's figures fail the layout check"; }
fi

bad() {  # bad EXPECTED-TEXT ARGS...: exit 2 with the text
  local want=$1; shift
  set +e; "$ibt" import-log "$@" --out "$dir/bad.h5" > "$dir/bad.txt" 2>&1; local rc=$?; set -e
  [[ $rc == 2 ]] && grep -q "$want" "$dir/bad.txt" || { cat "$dir/bad.txt"; fail "expected exit 2 and '$want'"; }
}
bad "no 'iteration N/ M" "$here/import_log/megatron_truncated.log" --format megatron --model llama3-8b --topology dgx-h100
bad "num_layers is 32 but model 'llama3-70b' has 80" "$log" --format megatron --model llama3-70b --topology dgx-h100
bad "the formats read are megatron, nemo and torchtitan" "$log" --format fairseq --model llama3-8b --topology dgx-h100
echo "import_log_test: ok"
