#!/usr/bin/env bash
# crossover_systems_test.sh IBT EXPECT DIR: the PP question for several systems in one run
# (ibt crossover --topology A,B), one sentence each with the deciding term; verdicts forced
# by divisibility or memory saying so in the text, the HDF5 table and the report instead of
# "gain inf"; the atlas refusing the job flags it cannot honour; bad --topology lists exit 2.
set -eu
ibt=$1 expect=$2 dir=$3
rm -rf "$dir" && mkdir -p "$dir"
fail() { echo "crossover_systems_test: FAIL: $*" >&2; exit 1; }
verdict='(PP needed|PP not needed|within uncertainty)'
num='[0-9.e+-]+'
sentence="$verdict \(gain [+-][0-9.]+%, uncertainty \+-[0-9.]+(%| points \(80% of measured pairs\))\): decided by [a-zA-Z /-]+, $num s \([0-9.]+% of the step\) without PP vs $num s \([0-9.]+%\) with PP( \(its first stage\))?"

# Two systems, one sentence each (--wide: unwrapped), and one stored run per system.
"$ibt" crossover --model llama3-8b --gpus 64 --global-batch 64 --topology dgx-h100,gb200-nvl72 --jobs 2 --wide \
  --out "$dir/two.h5" > "$dir/two.txt" 2> "$dir/two.err" || { cat "$dir/two.txt" "$dir/two.err" >&2; fail "two systems"; }
grep -Eq "^dgx-h100 \(NVIDIA H100[^,]*, domain 8, 400 Gb/s\): $sentence$" "$dir/two.txt" \
  || { cat "$dir/two.txt" >&2; fail "no dgx-h100 sentence with verdict, gain, uncertainty and deciding term"; }
grep -Eq "^gb200-nvl72 \(.*, domain 72, [0-9.]+ Gb/s; 64 devices in one domain of 72\): $sentence$" "$dir/two.txt" \
  || { cat "$dir/two.txt" >&2; fail "no gb200-nvl72 sentence saying the job holds part of one domain"; }
[[ $(grep -c "decided by" "$dir/two.txt") -eq 2 ]] || fail "not one sentence per system"
/usr/bin/python3 - "$dir/two.h5" <<'PY' || fail "two.h5: not one crossover run per system"
import sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    systems = sorted(f["runs"][r].attrs["topology"] for r in f["runs"])
    assert systems == ["dgx-h100", "gb200-nvl72"], systems
    for r in f["runs"]:
        t = f["runs"][r]["crossover"][:]
        assert len(t) == 1 and t["decided_by"][0] in (b"gain", "gain"), t
PY

# A size that leaves a partial domain says so (1,024 devices on 72-device NVL72 racks).
"$ibt" crossover --model llama3-8b --gpus 1024 --global-batch 1024 --topology gb200-nvl72,dgx-h100 --jobs 2 --wide \
  > "$dir/1024.txt" 2> /dev/null || { cat "$dir/1024.txt" >&2; fail "1024 devices"; }
grep -Eq "^gb200-nvl72 \(.*; 1024 devices fill 14 domains of 72 and 16 devices of a 15th\): $verdict" "$dir/1024.txt" \
  || { cat "$dir/1024.txt" >&2; fail "no partial-rack note for 1024 devices on gb200-nvl72"; }
grep -Eq "^dgx-h100 \([^;]*\): $verdict" "$dir/1024.txt" || fail "a note where 1024 fills whole dgx-h100 domains"

# Forced by divisibility: no split without PP divides 1536 sequences over 7 devices.
why7="no split without PP divides global batch 1536 over 7 devices"
"$ibt" crossover --model llama3-8b --gpus 7 --global-batch 1536 --domain-sizes 8 --scale-out-Gbps 100,400 --jobs 2 \
  --wide --out "$dir/seven.h5" > "$dir/seven.txt" 2> /dev/null || { cat "$dir/seven.txt" >&2; fail "--gpus 7"; }
grep -q "^dgx-h100's own fabric (domain 8, 400 Gb/s): PP needed: $why7; marked" "$dir/seven.txt" \
  || { cat "$dir/seven.txt" >&2; fail "the own-fabric line does not name divisibility"; }
grep -q "^gain '-' at domain 8 (every Gb/s): PP needed: $why7$" "$dir/seven.txt" || fail "no reason under the grid"
! grep -qw "inf" "$dir/seven.txt" || { cat "$dir/seven.txt" >&2; fail "--gpus 7 still prints inf"; }
"$ibt" crossover --model llama3-8b --gpus 7 --global-batch 1536 --topology dgx-h100,dgx-a100 --jobs 2 --wide \
  > "$dir/seven2.txt" 2> /dev/null || fail "--gpus 7 on two systems"
[[ $(grep -c ": PP needed: $why7$" "$dir/seven2.txt") -eq 2 ]] || { cat "$dir/seven2.txt" >&2; fail "--gpus 7, a list"; }
/usr/bin/python3 - "$dir/seven.h5" "$why7" <<'PY' || fail "seven.h5: the stored cells do not say divisibility"
import math, sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    (run,) = f["runs"].values()
    t = run["crossover"][:]
    for row in t:
        text = lambda c: row[c].decode() if isinstance(row[c], bytes) else row[c]
        assert text("decided_by") == "divisibility" and text("verdict_reason") == sys.argv[2], row
        assert math.isnan(row["gain"]), row["gain"]
PY
"$ibt" report "$dir/seven.h5" --out "$dir/html" > /dev/null
grep -q "$why7" "$dir/html/index.html" || fail "the report does not show the reason"

# Forced by memory: no ZeRO, 70B on 16 H100s: nothing without PP fits.
"$ibt" crossover --model llama3-70b --gpus 16 --global-batch 16 --zero 0 --domain-sizes 8 --scale-out-Gbps 400 --jobs 2 \
  --wide > "$dir/memory.txt" 2> /dev/null || { cat "$dir/memory.txt" >&2; fail "memory case"; }
grep -Eq "^dgx-h100's own fabric \(domain 8, 400 Gb/s\): PP needed: no split without PP fits in [0-9.]+ GB;" \
  "$dir/memory.txt" || { cat "$dir/memory.txt" >&2; fail "the own-fabric line does not name memory"; }

# The atlas runs its cells' own jobs: a flag naming another job is refused, not ignored.
"$expect" 2 "error: --gpus does not apply to --atlas: .*--topology A,B" "$ibt" crossover --atlas --gpus 2048
"$expect" 2 "--model does not apply to --atlas" "$ibt" crossover --atlas --model llama3-8b
"$expect" 2 "--topology does not apply to --atlas" "$ibt" crossover --atlas --topology dgx-h100

# Bad lists, refused before anything is priced.
"$expect" 2 "--topology 'dgx-h100,,gb200-nvl72': an empty name in the list" \
  "$ibt" crossover --model llama3-8b --gpus 64 --topology dgx-h100,,gb200-nvl72
"$expect" 2 "--topology 'dgx-h100,': an empty name" "$ibt" crossover --model llama3-8b --gpus 64 --topology dgx-h100,
"$expect" 2 "unknown topology 'nope'" "$ibt" crossover --model llama3-8b --gpus 64 --topology dgx-h100,nope
"$expect" 2 "'dgx-h100' is listed twice; name each system once" \
  "$ibt" crossover --model llama3-8b --gpus 64 --topology dgx-h100,gb200-nvl72,dgx-h100
"$expect" 2 "--domain-sizes and --scale-out-Gbps make a grid around one --topology" \
  "$ibt" crossover --model llama3-8b --gpus 64 --topology dgx-h100,gb200-nvl72 --domain-sizes 8,72
echo "crossover_systems_test: ok"
