#!/usr/bin/env bash
# Both timing modes under mpiexec with 2 ranks: each run stores its mode (attribute
# timing_mode and the config's "timing"), every stored time is sane (positive, under a
# second, p50 <= p99, algbw = bytes / time), and an unknown mode is refused on every rank
# with one message naming it and the modes there are, exit status 2, nothing stored.
# Usage: timing_modes_test.sh IBT "MPIRUN WORDS" DIR
set -u
ibt=$1
read -r -a mpirun <<<"$2"
dir=$3
rm -rf "$dir" && mkdir -p "$dir"
file=$dir/modes.h5
fail() { echo "timing_modes_test: $*" >&2; exit 1; }
for mode in imb loop; do
  "${mpirun[@]}" -n 2 "$ibt" collectives -n 4 -w 1 -b 8 -e 64K -f 64 --op ping_pong,all_reduce,broadcast \
    --scope world --timing "$mode" --out "$file" > "$dir/$mode.log" 2>&1 ||
    { cat "$dir/$mode.log"; fail "ibt collectives --timing $mode failed"; }
  grep -q "^# timing $mode:" "$dir/$mode.log" || fail "the header does not name timing $mode"
done
for run in "000001 imb" "000002 loop"; do
  read -r id mode <<<"$run"
  h5dump -a "/runs/$id/timing_mode" "$file" | grep -q "\"$mode\"" || fail "run $id: timing_mode is not $mode"
  h5dump -a "/runs/$id/config" "$file" | grep -q "timing.*$mode" || fail "run $id: config does not say timing $mode"
done

csv=$("$ibt" export "$file" --csv) || fail "ibt export failed"
# 2 runs x 3 sizes (8, 512, 32K) x (ping_pong + all_reduce out and in + broadcast) = 24 rows.
rows=$(($(wc -l <<<"$csv") - 1))
[[ $rows == 24 ]] || fail "expected 24 rows, found $rows: $csv"
awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
  { t = $col["time_us"]; p50 = $col["p50_us"]; p99 = $col["p99_us"]; bw = $col["algbw_GBps"]; b = $col["bytes"]
    if (!(t > 0 && t < 1e6)) { print "run " $1 " " $col["op"] " " b " B: time " t " us is not in (0, 1 s)"; bad = 1 }
    if (!(p50 > 0 && p50 <= p99)) { print "run " $1 " " $col["op"] " " b " B: p50 " p50 " > p99 " p99; bad = 1 }
    want = b / (t * 1e3)
    if (bw < want * 0.99 || bw > want * 1.01) { print "run " $1 " " $col["op"] " " b " B: algbw " bw " != bytes/time " want; bad = 1 } }
  END { exit bad }' <<<"$csv" || fail "insane values (above)"

# A mode that does not exist: refused before anything is measured or stored.
refused=$dir/refused.h5
out=$("${mpirun[@]}" -n 2 "$ibt" collectives --timing per-call --out "$refused" 2>&1)
status=$?
[[ $status == 2 ]] || fail "--timing per-call: exit status $status, expected 2: $out"
grep -q "unknown timing mode 'per-call' (expected loop or imb)" <<<"$out" || fail "--timing per-call: unclear message: $out"
if [[ -e $refused ]] && "$ibt" show "$refused" | grep -q collectives; then fail "--timing per-call stored a run"; fi
echo "timing_modes_test: ok"
