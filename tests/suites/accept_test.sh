#!/usr/bin/env bash
# accept_test.sh IBT "MPIRUN" REFERENCE DIR pass|doctored
#   pass:     `ibt accept` against the shipped reference exits 0, JUnit has no failures,
#             and every metric is stored (HDF5 table "accept").
#   doctored: one metric of the reference is made impossible (a bandwidth target of
#             1,000,000 GB/s, at most 10% below it): the run exits 1, the table, the summary
#             and the JUnit XML name exactly that metric, and the others still pass.
set -u
ibt=$1 mpirun=$2 reference=$3 dir=$4 mode=$5
rm -rf "$dir" && mkdir -p "$dir"
fail() { echo "accept_test: FAIL: $*" >&2; exit 1; }
if [[ $mode == doctored ]]; then
  victim=$(/usr/bin/python3 - "$reference" "$dir/doctored.json" <<'PY'
import json, sys
ref = json.load(open(sys.argv[1]))
m = next(m for m in ref["metrics"] if m["quantity"].endswith("GBps") and m["op"] != "p2p")
m["target"], m["lower"], m["upper"] = 1e6, -0.1, None
json.dump(ref, open(sys.argv[2], "w"), indent=1)
print(m["name"])
PY
)
  [[ -n $victim ]] || fail "could not doctor $reference"
  reference=$dir/doctored.json
fi
$mpirun -n 2 "$ibt" accept --reference "$reference" --junit "$dir/junit.xml" --out "$dir/accept.h5" > "$dir/out.log" 2>&1
status=$?
cat "$dir/out.log"
metrics=$(/usr/bin/python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["metrics"]))' "$reference")
stored=$("$ibt" export "$dir/accept.h5" --csv --table accept | tail -n +2 | wc -l)
[[ $stored -eq $metrics ]] || fail "$stored rows in the accept table, expected $metrics"
[[ -s $dir/junit.xml ]] || fail "no JUnit XML"
if [[ $mode == pass ]]; then
  [[ $status -eq 0 ]] || fail "exit status $status against the shipped reference"
  grep -q 'failures="0"' "$dir/junit.xml" || fail "JUnit XML reports failures"
  grep -q '# verdict: PASS' "$dir/out.log" || fail "no PASS verdict"
else
  [[ $status -eq 1 ]] || fail "exit status $status against the doctored reference, expected 1"
  grep -Eq "^  $victim +.* FAIL" "$dir/out.log" || fail "the table does not mark $victim FAIL"
  grep -q "verdict: FAIL (.* 1 failed: $victim)" "$dir/out.log" || fail "the verdict does not name only $victim"
  grep -q "<failure message=\"$victim: measured" "$dir/junit.xml" || fail "JUnit XML does not name $victim"
  [[ $(grep -c '<failure' "$dir/junit.xml") -eq 1 ]] || fail "more than one JUnit failure"
fi
echo "accept_test: ok ($mode)"
