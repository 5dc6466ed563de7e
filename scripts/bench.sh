#!/usr/bin/env bash
# Runs the Google Benchmark targets (performance claims live here, not in unit tests).
# Medians over repetitions: these machines are shared and noisy.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
for b in build/bench/ibt_bench_*; do
  [[ -x $b ]] || continue
  echo "== $b"
  "$b" --benchmark_repetitions="${IBT_BENCH_REPETITIONS:-5}" --benchmark_report_aggregates_only=true "$@"
done
