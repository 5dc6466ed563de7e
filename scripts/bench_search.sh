#!/usr/bin/env bash
# The search-speed table: CPU time (user + sys, one core: --jobs 1) of
# `ibt project --all` per catalog model x topology, the worst over the device counts,
# and of the crossover grid of docs/measurements/search-speed.md (serial, and with --jobs N).
# CPU time, not wall time: these machines are shared, and a loaded core stretches the
# wall clock but not the CPU time. Targets: project --all < 5 s, the grid < 60 s.
#
#   scripts/bench_search.sh [IBT]            every catalog pair at 1,024-16,384 devices
#   MODELS="deepseek-v3 kimi-k2" TOPOLOGIES="tpu-v5p gb200-nvl72" DEVICES="2048 16384" \
#     GRID=0 scripts/bench_search.sh         a subset; GRID=0 skips the crossover grid
#   JOBS=2                                   the threads of the parallel grid run
set -euo pipefail
cd "$(dirname "$0")/.."
ibt=${1:-build/ibt}
[[ -x $ibt ]] || { echo "bench_search.sh: $ibt is not an executable (build the ibt target)" >&2; exit 2; }
catalog_names() { ls "$1" | sed -n 's/\.json$//p'; }
# The training models of the catalog (the tiny/small/crossover ones are test fixtures).
models=${MODELS:-$(catalog_names models/catalog | grep -v -e '^tiny-' -e '^small-' -e '^crossover-')}
topologies=${TOPOLOGIES:-$(catalog_names topologies/catalog | grep -v '^local-cpu$')}
devices=${DEVICES:-"1024 2048 4096 8192 16384"}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

cpu_seconds() {  # command...: runs it, prints user+sys seconds (its output discarded)
  /usr/bin/time -f '%U %S' -o "$tmp/t" "$@" > "$tmp/out" 2> /dev/null || { echo "failed"; return; }
  awk '{ printf "%.2f", $1 + $2 }' "$tmp/t"
}

echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores"
printf '%-16s %-14s %8s %8s  %s\n' model topology "worst s" devices "all (devices:s)"
for m in $models; do
  for t in $topologies; do
    worst=0 at=- all=""
    for n in $devices; do
      s=$(cpu_seconds "$ibt" project --model "$m" --topology "$t" --gpus "$n" --all --jobs 1)
      all+="$n:$s "
      [[ $s == failed ]] && continue
      if awk -v a="$s" -v b="$worst" 'BEGIN { exit !(a > b) }'; then worst=$s at=$n; fi
    done
    printf '%-16s %-14s %8s %8s  %s\n' "$m" "$t" "$worst" "$at" "$all"
  done
done

if [[ ${GRID:-1} != 0 ]]; then
  grid=(crossover --model deepseek-v3 --gpus 8192 --domain-sizes 8,16,32,64,72,128,256
        --scale-out-gbps 100,200,400,800,1600)
  echo "crossover grid (README): ibt ${grid[*]}"
  serial=$(cpu_seconds "$ibt" "${grid[@]}" --jobs 1)
  cp "$tmp/out" "$tmp/serial"
  echo "  --jobs 1: $serial s CPU"
  jobs=${JOBS:-$(nproc)}
  start=$(date +%s.%N)
  parallel=$(cpu_seconds "$ibt" "${grid[@]}" --jobs "$jobs")
  wall=$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }')
  echo "  --jobs $jobs: $parallel s CPU, $wall s wall"
  if cmp -s "$tmp/serial" "$tmp/out"; then echo "  cells identical to --jobs 1"; else echo "  CELLS DIFFER from --jobs 1"; exit 1; fi
fi
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
