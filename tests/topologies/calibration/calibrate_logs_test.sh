#!/usr/bin/env bash
# `ibt calibrate` from imported training logs (docs/calibration.md, "From your own training
# logs"): the compute efficiency is fitted to the fit run's logged median iteration, the
# held-out run is reported with its step error, the written topology keeps the base's
# network and projects the fitted split back to the logged time; and the new input is
# judged like the old ones: no --topology, a topology without the log's dtype or too slow
# for the logged steps, ibt's own runs mixed with logs, an unknown run -- each exit 2 naming
# it, nothing written. The sample logs are format samples: their times measure nothing, so
# this checks the mechanics, not the accuracy.
# Usage: calibrate_logs_test.sh IBT LOG_DIR DIR EXPECT_EXIT
set -u
ibt=$1 logs=$2 dir=$3 expect=$4
rm -rf "$dir" && mkdir -p "$dir"
fail() { echo "calibrate_logs_test: FAIL: $*" >&2; exit 1; }
cd "$dir" || fail "no $dir"

"$ibt" import-log "$logs/megatron_llama3_8b.log" --model llama3-8b --topology dgx-h100 --out logs.h5 >/dev/null ||
  fail "import-log megatron"
"$ibt" import-log "$logs/nemo2_llama3_8b.log" --config "$logs/nemo2_llama3_8b.yaml" --model llama3-8b \
  --topology dgx-h100 --out logs.h5 >/dev/null || fail "import-log nemo2"
median=$("$ibt" show logs.h5 --run 1 | sed -n 's/^ *median_step_s  *//p')
[[ -n $median ]] || fail "run 1 has no median_step_s"

out=$("$ibt" calibrate logs.h5 --topology dgx-h100 --fit-train logs.h5:000001 --out mine.json) ||
  fail "calibrate from logs failed: $out"
echo "$out"
grep -q "no collectives run in the files, so priced by the network figures of 'dgx-h100'" <<<"$out" ||
  fail "the output does not say the network is the base's"
grep -Eq "compute fit: gemm_efficiency 0\.[0-9]+ of bf16 peak 989\.5 TFLOP/s .* from 1 logged run" <<<"$out" ||
  fail "no bf16 compute fit line"
# The fit run: the median iteration, projected back to it (one parameter, one run).
grep -Eq "^fit +logs\.h5:000001 +- +- +- +${median}0* +${median}0* +[-+]0\.0%" <<<"$out" ||
  fail "the fit run's row is not its median $median s, matched"
grep -Eq "^held-out +logs\.h5:000002 " <<<"$out" || fail "the held-out run is not reported"

python3 - mine.json <<'PY' || fail "mine.json"
import json, sys
t = json.load(open(sys.argv[1]))
e = t["model"]["gemm_efficiency"]
assert 0 < e["value"] < 1 and e["source"] == "calibration-train", e
src = [s for s in t["sources"].items() if s[0] == "calibration-train"] if isinstance(t["sources"], dict) else \
      [s for s in t["sources"] if s.get("id") == "calibration-train"]
text = json.dumps(src)
assert "logged step time" in text and "logs.h5:000001" in text, text
assert not t.get("fits"), "a calibration from logs added collective fits"
assert t["scale_out"]["bandwidth_GBps"]["value"] == 50, t["scale_out"]
PY

# The written topology projects the fitted split to the logged median.
proj=$("$ibt" project --model llama3-8b --topology mine.json --gpus 16 --dp 4 --tp 2 --pp 2 --micro-batch-size 1 \
  --global-batch 64 --sp --zero 1 --recompute full) || fail "project with mine.json: $proj"
step=$(sed -n 's/^step time  *\([0-9.]*\) s.*/\1/p' <<<"$proj")
python3 -c "import sys; s, m = float(sys.argv[1]), float(sys.argv[2]); sys.exit(abs(s / m - 1) > 0.005)" \
  "$step" "$median" || fail "project on mine.json gives $step s for the fitted split, logged $median s"

# Bad input, each exit 2 naming it, nothing written.
"$expect" 2 "imported from training logs: give --topology" \
  "$ibt" calibrate logs.h5 --fit-train logs.h5:000001 --out x.json || exit 1
"$expect" 2 "trained in bf16 and the --topology \(one CPU core.*has no bf16 peak" \
  "$ibt" calibrate logs.h5 --topology local-cpu --fit-train logs.h5:000001 --out x.json || exit 1
"$expect" 2 "faster than the --topology \(NVIDIA A100 SXM4 80GB\) allows even at its bf16 peak \(logs.h5:000001 logged" \
  "$ibt" calibrate logs.h5 --topology dgx-a100 --fit-train logs.h5:000001 --out x.json || exit 1
"$expect" 2 "has no run '000042'" \
  "$ibt" calibrate logs.h5 --topology dgx-h100 --fit-train logs.h5:000042 --out x.json || exit 1
"$ibt" train --model tiny-dense --steps 2 --out own.h5 >/dev/null || fail "ibt train"
"$expect" 2 "ibt's own train runs and runs imported from a framework's log are fitted apart" \
  "$ibt" calibrate logs.h5 own.h5 --topology dgx-h100 --fit-train logs.h5:000001 --fit-train own.h5 --out x.json ||
  exit 1
[[ ! -e x.json ]] || fail "a refused calibration wrote x.json"
echo "calibrate_logs_test: ok"
