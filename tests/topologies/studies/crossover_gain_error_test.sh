#!/usr/bin/env bash
# `ibt crossover`'s verdict uncertainty is the measured error of the PP gain
# (topologies/validation/pp-gain-error.json, gain_error.hpp): the own-cell line states
# "(gain +X%, uncertainty +-Y points (80% of measured pairs))", the uncertainty line names the pairs,
# the HDF5 table stores u per cell (gain_uncertainty) and the run its source, and every
# stored verdict is the rule's with that u, and the report shows it; a calibrated topology (collective fits) gets
# the calibrated figure. Without the file the MFU band is used and said so; a damaged file
# exits 1 naming it.
# Usage: crossover_gain_error_test.sh IBT SOURCE_DIR WORK_DIR EXPECT_EXIT
set -u
ibt=$1 src=$2 dir=$3 expect=$4
rm -rf "$dir" && mkdir -p "$dir"
fail() { echo "crossover_gain_error_test: $*" >&2; exit 1; }
file="$src/topologies/validation/pp-gain-error.json"
points() { /usr/bin/python3 -c "import json,sys; print('%.1f' % json.load(open('$file'))['kinds'][sys.argv[1]]['abs_err_p80_points'])" "$1"; }
catalog=$(points catalog) calibrated=$(points calibrated)
grid=(--model llama3-8b --gpus 64 --global-batch 64 --domain-sizes 8 --scale-out-Gbps 100,1600 --jobs 2)

# check TOPOLOGY KIND POINTS: the text and the stored cells of one crossover.
check() {
  local h5="$dir/$2.h5"
  out=$("$ibt" crossover "${grid[@]}" --topology "$1" --out "$h5") || fail "crossover on $1 failed"
  printf '%s\n' "$out" >"$dir/$2.txt"
  out=$(tr '\n' ' ' <<<"$out" | tr -s ' ')  # the 120-column wrapping undone
  grep -Eq "own fabric \(domain [0-9]+, [0-9.]+ Gb/s\): (PP needed|PP not needed|within uncertainty) \\(gain [-+][0-9.]+%, uncertainty \+-$3 points \(80% of measured pairs\)\)" \
    <<<"$out" || fail "$1: no '(gain +X%, uncertainty +-$3 points (80% of measured pairs))' on the own-cell line"
  grep -q " uncertainty: +-$3 points of gain: |projected - measured PP gain| of 80% of 122 measured pairs" <<<"$out" ||
    fail "$1: the uncertainty line does not name the measured pairs"
  grep -q "a $2 topology as" <<<"$out" || fail "$1: not taken as a $2 topology"
  /usr/bin/python3 - "$h5" "$3" <<'PY' || fail "$1: stored cells"
import sys, h5py
path, points = sys.argv[1], float(sys.argv[2])
with h5py.File(path, "r") as f:
    run = f["runs"][sorted(f["runs"])[-1]]
    assert "measured pairs" in str(run.attrs["uncertainty"]), run.attrs["uncertainty"]
    for r in run["crossover"][()]:
        u, g = float(r["gain_uncertainty"]), float(r["gain"])
        v = r["verdict"].decode() if isinstance(r["verdict"], bytes) else str(r["verdict"])
        assert abs(100 * u - points) < 1e-9, (u, points)
        want = "PP needed" if g > 0.05 + u else "PP not needed" if g < 0.05 - u else "within uncertainty"
        assert v == want or g >= 1e299 or g == -1, (g, u, v, want)
PY
}
check dgx-h100 catalog "$catalog"
check "$src/topologies/validation/dgx-a100-vtrain-fit.json" calibrated "$calibrated"
# The report shows u beside each gain and says where it came from.
"$ibt" report "$dir/catalog.h5" --out "$dir/report" >/dev/null 2>&1 || fail "ibt report failed"
grep -q "u (gain points)" "$dir/report/index.html" && grep -q "±$catalog" "$dir/report/index.html" &&
  grep -q "uncertainty: +-$catalog points of gain" "$dir/report/index.html" || fail "the report lacks the gain's u"

# Without the file (a validation folder holding only bands.json): the MFU band, said so.
mkdir -p "$dir/nofile" "$dir/bad"
cp "$src/topologies/validation/bands.json" "$dir/nofile/"
IBT_VALIDATION_DIR="$dir/nofile" "$ibt" crossover "${grid[@]}" --topology dgx-h100 |
  tr '\n' ' ' | tr -s ' ' | grep -q "no measured PP gain error for a catalog topology" || fail "no fallback to the MFU band without the file"
# A damaged file: exit 1 naming it and how to rewrite it.
cp "$src/topologies/validation/bands.json" "$dir/bad/"
sed 's/"abs_err_p80_points"/"abs_err_p80"/' "$file" >"$dir/bad/pp-gain-error.json"
IBT_VALIDATION_DIR="$dir/bad" "$expect" 1 "PP gain error $dir/bad/pp-gain-error.json is malformed: .*abs_err_p80_points.*--write-gain-error" \
  "$ibt" crossover "${grid[@]}" --topology dgx-h100 || exit 1
echo '{"coverage": 0.8, "source": "x", "kinds": {"cataloq": {}}}' >"$dir/bad/pp-gain-error.json"
IBT_VALIDATION_DIR="$dir/bad" "$expect" 1 "malformed: unknown kind 'cataloq'" \
  "$ibt" crossover "${grid[@]}" --topology dgx-h100 || exit 1
echo "crossover_gain_error_test: ok"
