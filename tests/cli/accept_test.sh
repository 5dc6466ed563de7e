#!/usr/bin/env bash
# accept_test.sh IBT "MPIRUN" REFERENCE DIR pass|doctored|from|timeout|baseline|wrong|stall
#   pass:     `ibt accept` against the shipped reference exits 0, JUnit has no failures,
#             and every metric is stored (HDF5 table "accept").
#   doctored: one metric of the reference is made impossible (a bandwidth target of
#             1,000,000 GB/s, at most 10% below it): the run exits 1, the table, the summary
#             and the JUnit XML name exactly that metric, and the others still pass.
#   from:     `ibt collectives` and `ibt p2p-matrix` write a file; `ibt accept --from` judges
#             it as one process (no MPI job): exit 0, JUnit without failures, every metric
#             judged from the file (intra read from world: one domain), signed margins.
#   baseline: `ibt accept --generate-reference FILE.h5` makes a reference from a measured
#             file (collectives + p2p matrix): every op and the p2p pairs get a bandwidth
#             and a latency target, the file passes its own reference, a run measuring half
#             the bandwidth fails it, and --ranks with a results file is refused.
#   timeout:  a reference whose one metric cannot finish within -T 0.01 s: exit 3, and the
#             JUnit file holds a failed testcase "run" with the timeout message.
#   wrong:    rank 1's checked result perturbed (--inject-wrong 1): exit 1, and the verdict
#             and the JUnit correctness failure name the op, size, rank 1 and its host.
#   stall:    rank 1 stops before the first measurement (--inject-stall 1:0, -T 2): exit 3,
#             and the JUnit "run" failure names rank 1 as not arriving, with its host.
set -u
ibt=$1 mpirun=$2 reference=$3 dir=$4 mode=$5
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$dir" && mkdir -p "$dir"
fail() { echo "accept_test: FAIL: $*" >&2; exit 1; }
if [[ $mode == from ]]; then
  $mpirun -n 2 "$ibt" collectives -b 8 -e 1M -n 5 -w 1 --out "$dir/cluster.h5" > "$dir/collectives.log" 2>&1 ||
    { cat "$dir/collectives.log"; fail "collectives failed"; }
  grep -q "scope intra skipped: the job has one domain, so intra is the same ranks as world" "$dir/collectives.log" ||
    fail "collectives --scope all did not skip the duplicate intra scope"
  $mpirun -n 2 "$ibt" p2p-matrix --out "$dir/cluster.h5" > "$dir/p2p.log" 2>&1 || { cat "$dir/p2p.log"; fail "p2p failed"; }
  "$ibt" accept --reference "$reference" --from "$dir/cluster.h5" --junit "$dir/junit.xml" > "$dir/out.log" 2>&1
  status=$?
  cat "$dir/out.log"
  [[ $status -eq 0 ]] || fail "exit status $status judging the file"
  grep -q '# judging .*cluster.h5 run 000001' "$dir/out.log" || fail "does not say which run it judged"
  grep -q 'intra = world (one domain)' "$dir/out.log" || fail "the intra metric does not say it read world rows"
  # The margin is the signed fraction of the target in the good direction: for a latency
  # 1 - measured/target (positive when faster). Checked against the measured value printed
  # on the same line, so a loaded machine (milliseconds at 8 B) does not decide the test.
  awk '$1 == "allreduce-world-8B-latency" && $2 == "p50_us" && $4 == 160 {
         want = 1 - $3 / $4; got = $(NF - 1); found = 1
         if (got !~ /^[+-][0-9]+\.[0-9][0-9][0-9]$/ || (got - want) > 0.0006 || (want - got) > 0.0006) bad = 1 }
       END { exit !found || bad }' "$dir/out.log" ||
    fail "the 8-byte latency's margin is not 1 - measured/target as a signed fraction to 3 decimals"
  grep -q 'failures="0"' "$dir/junit.xml" || fail "JUnit XML reports failures"
  # A reference for another job size is refused against the file too.
  /usr/bin/python3 - "$reference" "$dir/four.json" <<'PY'
import json, sys
ref = json.load(open(sys.argv[1])); ref["job"]["ranks"] = 4; json.dump(ref, open(sys.argv[2], "w"))
PY
  "$ibt" accept --reference "$dir/four.json" --from "$dir/cluster.h5" > "$dir/four.log" 2>&1
  [[ $? -eq 2 ]] || fail "a 4-rank reference against a 2-rank file was not refused"
  grep -q "the reference is for 4 ranks; run 000001 of .* had 2" "$dir/four.log" || fail "no reason for the refusal"
  echo "accept_test: ok ($mode)"
  exit 0
fi
if [[ $mode == baseline ]]; then
  $mpirun -n 2 "$ibt" collectives --op all_reduce,all_gather -b 8 -e 1M -f 4 -n 5 -w 1 --out "$dir/good.h5" \
    > "$dir/collectives.log" 2>&1 || { cat "$dir/collectives.log"; fail "collectives failed"; }
  $mpirun -n 2 "$ibt" p2p-matrix --out "$dir/good.h5" > "$dir/p2p.log" 2>&1 || { cat "$dir/p2p.log"; fail "p2p failed"; }
  "$ibt" accept --generate-reference "$dir/good.h5" --write "$dir/mine.json" > "$dir/gen.log" 2>&1 ||
    { cat "$dir/gen.log"; fail "--generate-reference from a results file failed"; }
  grep -q "wrote .*mine.json (6 metrics) from results file .*good.h5" "$dir/gen.log" || { cat "$dir/gen.log"; fail "not 6 metrics"; }
  /usr/bin/python3 - "$dir/mine.json" <<'PY' || fail "the generated reference is not what the file measured"
import json, sys
ref = json.load(open(sys.argv[1]))
names = sorted(m["name"] for m in ref["metrics"])
assert names == ["all_gather-world-float32-8B-latency", "all_gather-world-float32-busbw",
                 "all_reduce-world-float32-8B-latency", "all_reduce-world-float32-busbw",
                 "p2p-worst-pair-bandwidth", "p2p-worst-pair-latency"], names
assert ref["job"] == {"ranks": 2, "domain_size": 0, "iters": 5, "warmup_iters": 1}, ref["job"]
for m in ref["metrics"]:
    assert m["target"] > 0 and m["note"].startswith("measured "), m
    assert (m["lower"], m["upper"]) == ((-0.2, None) if m["unit"] == "GB/s" else (None, 2.0)), m
PY
  "$ibt" accept --reference "$dir/mine.json" --from "$dir/good.h5" --junit "$dir/junit.xml" > "$dir/own.log" 2>&1 ||
    { cat "$dir/own.log"; fail "the file does not pass its own reference"; }
  # The same targets doubled: the file now measures half of what the reference asks.
  /usr/bin/python3 - "$dir/mine.json" "$dir/doubled.json" <<'PY'
import json, sys
ref = json.load(open(sys.argv[1]))
for m in ref["metrics"]:
    if m["unit"] == "GB/s": m["target"] *= 2
json.dump(ref, open(sys.argv[2], "w"))
PY
  "$ibt" accept --reference "$dir/doubled.json" --from "$dir/good.h5" > "$dir/half.log" 2>&1
  [[ $? -eq 1 ]] || { cat "$dir/half.log"; fail "half the baseline bandwidth was not a FAIL"; }
  grep -q "verdict: FAIL (6 metrics, 3 failed" "$dir/half.log" || { cat "$dir/half.log"; fail "not the 3 bandwidths failed"; }
  "$ibt" accept --generate-reference "$dir/good.h5" --ranks 4 > "$dir/ranks.log" 2>&1
  [[ $? -eq 2 ]] && grep -q "a results file gives the job and the targets itself; drop --ranks" "$dir/ranks.log" ||
    { cat "$dir/ranks.log"; fail "--ranks with a results file not refused"; }
  # Several known-good runs: each target is their median, the note says so.
  $mpirun -n 2 "$ibt" collectives --op all_reduce,all_gather -b 8 -e 1M -f 4 -n 5 -w 1 --out "$dir/good.h5" \
    > "$dir/collectives2.log" 2>&1 || { cat "$dir/collectives2.log"; fail "second collectives run failed"; }
  "$ibt" accept --generate-reference "$dir/good.h5" --run all --write "$dir/median.json" > "$dir/gen2.log" 2>&1 ||
    { cat "$dir/gen2.log"; fail "--run all failed"; }
  /usr/bin/python3 - "$dir/median.json" <<'PY' || { cat "$dir/gen2.log"; fail "the reference of two runs is not their median"; }
import json, sys
ref = json.load(open(sys.argv[1]))
collective = [m for m in ref["metrics"] if m["op"] != "p2p"]
assert len(collective) == 4, ref["metrics"]
for m in collective:
    assert m["note"].startswith("median of 2 runs: "), m
assert "; " in ref["description"] and ref["description"].endswith("(runs taken as known good)."), ref["description"]
PY
  for bad in "1,1|is named twice; each run counts once in the median" "1,,3|an empty run name" \
             "all,1|all stands alone"; do
    "$here/../expect_exit.sh" 2 "${bad#*|}" "$ibt" accept --generate-reference "$dir/good.h5" --run "${bad%%|*}" ||
      fail "--run ${bad%%|*} not refused"
  done
  # Only small sizes: no bandwidth target at all (an 8-byte busbw is a latency).
  $mpirun -n 2 "$ibt" collectives --op all_reduce -b 8 -e 64K -f 4 -n 5 -w 1 --out "$dir/small.h5" \
    > "$dir/collectives3.log" 2>&1 || { cat "$dir/collectives3.log"; fail "small collectives run failed"; }
  "$ibt" accept --generate-reference "$dir/small.h5" --write "$dir/small.json" > "$dir/gen3.log" 2>&1 ||
    { cat "$dir/gen3.log"; fail "--generate-reference of small sizes failed"; }
  grep -q '"quantity": "busbw_GBps"' "$dir/small.json" &&
    { cat "$dir/small.json"; fail "a bandwidth target from sizes below 256 KiB"; }
  grep -q "all_reduce-world-float32-8B-latency" "$dir/small.json" || { cat "$dir/small.json"; fail "no latency target"; }
  # A run that started on a busy host is said to have (the load average its job recorded).
  /usr/bin/python3 - "$dir/small.h5" <<'PY' || fail "could not set the recorded load average"
import h5py, sys
with h5py.File(sys.argv[1], "r+") as f:
    run = f["runs"][sorted(f["runs"])[0]]
    assert "load_average_1m" in run.attrs, dict(run.attrs)
    run.attrs["load_average_1m"] = 99.0
PY
  "$ibt" accept --generate-reference "$dir/small.h5" > "$dir/gen4.log" 2>&1 || { cat "$dir/gen4.log"; fail "busy run"; }
  grep -q "started with a load average of 99.0 on a [0-9]*-core host: other work shared the machine" "$dir/gen4.log" ||
    { cat "$dir/gen4.log"; fail "a busy host's run was not warned about"; }
  # Runs of two job sizes make no reference.
  $mpirun -n 1 "$ibt" collectives --op all_reduce -b 8 -e 1M -f 4 -n 5 -w 1 --out "$dir/small.h5" \
    > "$dir/collectives4.log" 2>&1 || { cat "$dir/collectives4.log"; fail "1-rank collectives run failed"; }
  "$here/../expect_exit.sh" 2 "has 1 ranks, .* 2; a reference is for one job size" \
    "$ibt" accept --generate-reference "$dir/small.h5" --run all || fail "runs of two job sizes not refused"
  echo "accept_test: ok ($mode)"
  exit 0
fi
if [[ $mode == wrong || $mode == stall ]]; then
  host=$(hostname)
  cat > "$dir/one.json" <<'JSON'
{"system": "one", "job": {"ranks": 2, "iters": 5, "warmup_iters": 1},
 "metrics": [{"name": "allreduce-1K", "op": "all_reduce", "scope": "world", "bytes": 1024,
              "quantity": "busbw_GBps", "unit": "GB/s", "target": 1e-6, "lower": -0.9, "upper": null}]}
JSON
  if [[ $mode == wrong ]]; then
    $mpirun -n 2 "$ibt" accept --reference "$dir/one.json" --inject-wrong 1 --junit "$dir/junit.xml" > "$dir/out.log" 2>&1
    status=$?
    cat "$dir/out.log"; cat "$dir/junit.xml"
    [[ $status -eq 1 ]] || fail "exit status $status with a wrong value, expected 1"
    where="all_reduce world float32 1024 B: 1 wrong value on rank 1 (host $host)"
    grep -qF "#   $where" "$dir/out.log" || fail "the verdict does not name the rank and host of the wrong value"
    grep -qF "<failure message=\"1 wrong values in collectives or p2p transfers: $where\" type=\"wrong\"/>" \
      "$dir/junit.xml" || fail "the JUnit correctness failure does not name the rank and host"
  else
    $mpirun -n 2 "$ibt" accept --reference "$dir/one.json" --inject-stall 1:0 -T 2 --junit "$dir/junit.xml" \
      > "$dir/out.log" 2>&1
    status=$?
    cat "$dir/out.log"; cat "$dir/junit.xml"
    [[ $status -eq 3 ]] || fail "exit status $status with a stalled rank, expected 3"
    grep -Eq '<failure message="timed out after 2 s before all_reduce .*: rank 1 did not arrive \(pid [0-9]+ on host '"$host"'\)" type="run"/>' \
      "$dir/junit.xml" || fail "the JUnit run failure does not name the stalled rank and its host"
  fi
  "$here/../expect_exit.sh" 2 "--inject-stall expects RANK:K \\(got 'one'\\)" \
    $mpirun -n 2 "$ibt" accept --reference "$dir/one.json" --inject-stall one || fail "a bad --inject-stall not refused"
  "$here/../expect_exit.sh" 2 "--inject-stall and --inject-wrong act on a measurement: not with --from" \
    "$ibt" accept --reference "$dir/one.json" --from "$dir/x.h5" --inject-wrong 1 || fail "--inject-wrong with --from"
  echo "accept_test: ok ($mode)"
  exit 0
fi
if [[ $mode == timeout ]]; then
  cat > "$dir/slow.json" <<'JSON'
{"system": "slow", "job": {"ranks": 2, "iters": 20, "warmup_iters": 5},
 "metrics": [{"name": "allreduce-64M", "op": "all_reduce", "scope": "world", "bytes": 67108864,
              "quantity": "busbw_GBps", "unit": "GB/s", "target": 1, "lower": -0.9, "upper": null}]}
JSON
  $mpirun -n 2 "$ibt" accept --reference "$dir/slow.json" -T 0.01 --junit "$dir/junit.xml" > "$dir/out.log" 2>&1
  status=$?
  cat "$dir/out.log"; cat "$dir/junit.xml"
  [[ $status -eq 3 ]] || fail "exit status $status, expected 3 (timeout)"
  grep -q '<testcase classname="ibt.accept.slow" name="run">' "$dir/junit.xml" || fail "no testcase for the run"
  grep -q '<failure message="timed out after 0.01 s' "$dir/junit.xml" || fail "the JUnit failure does not say it timed out"
  grep -q 'raise -T/--timeout' "$dir/junit.xml" || fail "the timeout message does not name -T"
  grep -q '<skipped message="not judged' "$dir/junit.xml" || fail "the metric is not listed as not judged"
  echo "accept_test: ok ($mode)"
  exit 0
fi
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
