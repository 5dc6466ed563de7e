#!/usr/bin/env bash
# crossover_experiment.sh: the pipeline-parallel crossover, measured. For each link rate,
# an emulated cluster (create.sh) of 2 hosts x PPN ranks runs `ibt sweep` (every split of
# a small dense model, a few training steps each) and `ibt collectives` on the same
# links; then the best split without and with pipeline parallelism is tabulated per rate,
# and the same splits are projected on a topology calibrated from that rate's collectives
# (measured vs projected best split and MFU). Run as root; see --help.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=common.sh
source "$here/common.sh"

usage() {
  cat <<EOF
usage: crossover_experiment.sh --ibt PATH [--rates unshaped,10mbit] [--model crossover-dense]
                               [--ppn 1] [--steps 3] [--microbatches 4] [--out DIR] [--preload LIB]
       crossover_experiment.sh --ibt PATH --project-only DIR [--rates ...]   (default: DIR's rates)

For each rate (tc syntax, or "unshaped" for veth speed; fastest first): create a 2-host
cluster with links shaped to it, run on 2 x PPN ranks
  ibt collectives --scope all (all_reduce, send_recv)   -> DIR/collectives-RATE.h5
  ibt sweep --model MODEL                               -> DIR/sweep-RATE.h5, .txt
tear the cluster down, and write DIR/summary.tsv: per rate, the best split without PP,
the best with PP, their MFU, and which wins. Every sweep uses the same per-rank peak
(the first sweep measures it), so MFU compares across rates.

Then the projected side, per rate (no cluster needed; --project-only DIR redoes just this
from the files an earlier run left in DIR):
  ibt calibrate collectives-RATE.h5 --fit-train sweep-FIRST.h5:RUN -> DIR/cal-RATE.json
    the rate's collectives fits (2 domains of PPN ranks: inter fits price the network)
    and the compute efficiency fitted on ONE run: the best split without PP of the first
    (fastest) rate's sweep;
  ibt project-compare sweep-RATE.h5 --topology DIR/cal-RATE.json -> DIR/compare-RATE.txt
    every sweep run projected with its own split, microbatches and schedule.
DIR/projection.tsv has one line per sweep run: measured s/step and MFU (the sweep's),
the projected step time, and projected MFU = measured MFU x measured s/step / projected
s/step (same model FLOPs and per-rank peak as the sweep; ibt project's own MFU would use
the topology's fp32 peak instead). summary.tsv gains, per rate: the projected step time
and MFU of the measured best splits, the projected best split without and with PP, the
projected winner, and whether it matches the measured one.
Draw it: ibt report DIR/sweep-*.h5 --crossover-experiment DIR --out DIR/report
Defaults: --out results/crossover-<date>, --preload build/scripts/libibt-ucx-yield.so
when it exists and PPN > 1.

Why one rank per host by default: on a 2-core machine, 2 hosts x 2 ranks oversubscribe
the cores, and a pipeline stage waiting in its bubble hands its core to the other rank on
it, so the bubble costs nothing and the fast-link winner flips from run to run. With one
rank per core the bubble is real, as it is on a GPU. The default model (crossover-dense,
4.5 MB of fp32 gradients, 1024 tokens per microbatch) makes the data-parallel gradient
all-reduce cheap on an unshaped link and dominant at 10 Mbit/s.
EOF
}

rates_given=0 ibt="" rates=unshaped,10mbit model=crossover-dense ppn=1 steps=3 microbatches=4 out="" preload="" project_only=""
while (($#)); do
  case $1 in
    --ibt) ibt=${2-}; shift 2 ;;
    --rates) rates=${2-} rates_given=1; shift 2 ;;
    --model) model=${2-}; shift 2 ;;
    --ppn) ppn=${2-}; shift 2 ;;
    --steps) steps=${2-}; shift 2 ;;
    --microbatches) microbatches=${2-}; shift 2 ;;
    --out) out=${2-}; shift 2 ;;
    --preload) preload=${2-}; shift 2 ;;
    --project-only) project_only=${2-}; shift 2 ;;
    -h | --help) usage; exit 0 ;;
    *) die "unknown argument '$1' (see --help)" ;;
  esac
done
[[ -n $ibt && -x $ibt ]] || die "--ibt '$ibt' is not an executable ibt binary"
"$ibt" sweep --help >/dev/null 2>&1 || die "'$ibt sweep' does not run: this build has no sweep command"
# --project-only without --rates: the rates the earlier run measured (its summary.tsv).
if [[ -n $project_only && $rates_given -eq 0 && -r $project_only/summary.tsv ]]; then
  rates=$(awk -F'\t' 'NR > 1 { printf "%s%s", sep, $1; sep = "," }' "$project_only/summary.tsv")
fi
IFS=, read -r -a rate_list <<<"$rates"
((${#rate_list[@]} > 0)) || die "--rates is empty"

# ranked RATE: the sweep's ranking as "run<TAB>split<TAB>PP|-<TAB>s/step<TAB>MFU" lines, read
# from its results file through `ibt export --json` (sweep_ranking.py: the sweep's own figures).
ranked() {
  "$ibt" export "$out/sweep-$1.h5" --json | python3 "$here/sweep_ranking.py" ||
    die "reading the ranking of $out/sweep-$1.h5 failed"
}

# project: calibrate per rate, project every sweep run, write projection.tsv and extend
# summary.tsv (see --help).
project() {
  local first=${rate_list[0]} fit_run rate f
  for rate in "${rate_list[@]}"; do
    for f in "$out/collectives-$rate.h5" "$out/sweep-$rate.h5"; do
      [[ -r $f ]] || die "missing $f (did the measured part run for rate $rate?)"
    done
  done
  fit_run=$(ranked "$first" | awk -F'\t' '$3 == "-" { print $1; exit }')
  [[ -n $fit_run ]] || die "no run without PP in the ranking of $out/sweep-$first.h5: nothing to fit compute on"
  echo "compute efficiency fitted on $out/sweep-$first.h5:$fit_run (the $first sweep's best split without PP)"
  local projection=$out/projection.tsv
  printf 'rate\trun\tsplit\tpp\tmeasured_s_per_step\tmeasured_mfu\tcompare_measured_step_s\tprojected_step_s\tdiff_pct\tprojected_mfu\tdiffers_most\n' >"$projection"
  for rate in "${rate_list[@]}"; do
    "$ibt" calibrate "$out/collectives-$rate.h5" --fit-train "$out/sweep-$first.h5:$fit_run" \
      --out "$out/cal-$rate.json" --force >"$out/calibrate-$rate.txt" 2>&1 ||
      die "ibt calibrate failed at $rate (see $out/calibrate-$rate.txt)"
    grep -q '^scale-up domain: [0-9]* devices (calibration); scale-out: calibrated' "$out/calibrate-$rate.txt" ||
      die "the $rate calibration did not take its domains and scale-out from the measured layout (see $out/calibrate-$rate.txt)"
    # Bound 1e6%: this is a comparison to tabulate, not a pass/fail check.
    "$ibt" project-compare "$out/sweep-$rate.h5" --topology "$out/cal-$rate.json" --bound 1000000 \
      >"$out/compare-$rate.txt" 2>&1 || die "ibt project-compare failed at $rate (see $out/compare-$rate.txt)"
    # compare-RATE.txt: "FILE:RUN (model, split, N timed steps) on T" then its components,
    # ending in "  step  MEASURED PROJECTED DIFF% ... differs most: COMPONENT (...)".
    awk '/^[^ ].*:[0-9]+ \(/ { run = $1; sub(/.*:/, "", run) }
         /^  step / { worst = $0; sub(/.*differs most: /, "", worst); sub(/ \(.*/, "", worst)
                      diff = $4; sub(/%$/, "", diff); printf "%s\t%s\t%s\t%s\t%s\n", run, $2, $3, diff, worst }' \
      "$out/compare-$rate.txt" >"$out/compare-$rate.tsv"
    local n_runs n_compared
    n_runs=$(ranked "$rate" | wc -l) n_compared=$(wc -l <"$out/compare-$rate.tsv")
    ((n_runs > 0 && n_runs == n_compared)) ||
      die "$rate: $n_runs ranked sweep runs but $n_compared projected ones (see $out/compare-$rate.txt)"
    ranked "$rate" | awk -F'\t' -v rate="$rate" -v OFS='\t' '
      NR == FNR { cmp[$1] = $2 OFS $3 OFS $4; proj[$1] = $3; worst[$1] = $5; next }
      !($1 in cmp) { print "no projection of run " $1 > "/dev/stderr"; exit 3 }
      { printf "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%.3f\t%s\n", rate, $1, $2, $3, $4, $5, cmp[$1], $5 * $4 / proj[$1], worst[$1] }' \
      "$out/compare-$rate.tsv" - >>"$projection" || die "$rate: joining the sweep and its projection failed"
  done
  # summary.tsv: the measured columns (first 6) plus the projected ones, per rate.
  local measured
  measured=$(awk -F'\t' -v OFS='\t' '{ print $1, $2, $3, $4, $5, $6 }' "$summary")
  {
    printf '%s\n' "$measured" | head -n 1 | tr -d '\n'
    printf '\tproj_s_without_pp\tproj_mfu_without_pp\tproj_s_with_pp\tproj_mfu_with_pp\tproj_best_without_pp\tproj_best_mfu_without_pp\tproj_best_with_pp\tproj_best_mfu_with_pp\tprojected_winner\tmatches\n'
    printf '%s\n' "$measured" | tail -n +2 | awk -F'\t' -v OFS='\t' '
      NR == FNR { if (FNR > 1) { key = $1 SUBSEP $3; s[key] = $8; m[key] = $10
                    k = $1 SUBSEP ($4 == "PP"); if (!(k in best) || $10 > bm[k]) { best[k] = $3; bm[k] = $10 } }
                  next }
      { a = $1 SUBSEP $2; b = $1 SUBSEP $4
        if (!(a in s) || !(b in s)) { print "no projection of the measured best splits at " $1 > "/dev/stderr"; exit 3 }
        w = (bm[$1 SUBSEP 1] > bm[$1 SUBSEP 0]) ? "PP" : "no PP"
        print $0, s[a], m[a], s[b], m[b], best[$1 SUBSEP 0], bm[$1 SUBSEP 0], best[$1 SUBSEP 1], bm[$1 SUBSEP 1], w,
              (w == $6) ? "yes" : "no" }' "$projection" -
  } >"$summary.new" || die "extending $summary with the projection failed"
  mv "$summary.new" "$summary"
  echo "== projection ($projection)"
  column -t -s $'\t' "$projection"
}

if [[ -n $project_only ]]; then
  out=$project_only
  summary=$out/summary.tsv
  [[ -r $summary ]] || die "--project-only '$out': no summary.tsv there (run the measured part first)"
  project
  echo "== summary ($summary)"
  cat "$summary"
  exit 0
fi

require_netns
out=${out:-results/crossover-$(date -u +%Y%m%dT%H%M%S)}
mkdir -p "$out" || die "--out '$out': cannot create the directory"
[[ $ppn =~ ^[1-9][0-9]*$ ]] || die "--ppn '$ppn' is not a positive integer"
if [[ -z $preload && $ppn -gt 1 && -r $(dirname "$ibt")/scripts/libibt-ucx-yield.so ]]; then
  preload=$(dirname "$ibt")/scripts/libibt-ucx-yield.so
fi
preload_args=()
[[ -z $preload ]] || preload_args=(--preload "$preload")

name=ibt-xo$$
trap '"$here/teardown.sh" --name "$name" >/dev/null' EXIT

summary=$out/summary.tsv
printf 'rate\tbest_without_pp\tmfu_without_pp\tbest_with_pp\tmfu_with_pp\twinner\n' >"$summary"
peak_args=()
for rate in "${rate_list[@]}"; do
  echo "== $rate"
  rate_args=(--rate "$rate")
  [[ $rate != unshaped ]] || rate_args=()
  "$here/create.sh" --name "$name" --hosts 2 "${rate_args[@]}" >/dev/null || die "create.sh failed at $rate"
  run() {  # run FILE ARGS...: ibt on the cluster, 2 ranks per host
    local file=$1
    shift
    "$here/launch.sh" --name "$name" --ppn "$ppn" --timeout 1200 --result "$file" "${preload_args[@]}" -- "$ibt" "$@" --out "$file"
  }
  run "$out/collectives-$rate.h5" collectives --scope all --op all_reduce,send_recv -b 1K -e 1M -f 4 -n 5 -w 1 \
    >"$out/collectives-$rate.txt" 2>&1 || die "ibt collectives failed at $rate (see $out/collectives-$rate.txt)"
  run "$out/sweep-$rate.h5" sweep --model "$model" --steps "$steps" --microbatches "$microbatches" "${peak_args[@]}" \
    >"$out/sweep-$rate.txt" 2>&1 || die "ibt sweep failed at $rate (see $out/sweep-$rate.txt)"
  "$here/teardown.sh" --name "$name" >/dev/null

  if ((${#peak_args[@]} == 0)); then
    peak=$(h5dump -a /runs/000001/peak_gflops_per_rank "$out/sweep-$rate.h5" | sed -n 's/^ *(0): //p')
    [[ -n $peak ]] || die "no peak_gflops_per_rank in $out/sweep-$rate.h5"
    peak_args=(--peak-gflops "$peak")
    echo "per-rank peak for every sweep: $peak GFLOP/s (measured by the $rate sweep)"
  fi
  # best without|with: "<split><TAB><MFU %>" of the sweep's best run without or with PP.
  best() { "$ibt" export "$out/sweep-$rate.h5" --json | python3 "$here/sweep_ranking.py" --best "$1"; }
  without=$(best without) with=$(best with)
  [[ -n $without && -n $with ]] || die "the $rate sweep has no best split without or with PP (see $out/sweep-$rate.txt)"
  winner=$(awk -F'\t' -v a="$without" -v b="$with" 'BEGIN { split(a, x, "\t"); split(b, y, "\t"); print (y[2] > x[2]) ? "PP" : "no PP" }')
  printf '%s\t%s\t%s\t%s\n' "$rate" "$without" "$with" "$winner" >>"$summary"
  tail -n 1 "$summary"
done
project
echo "== summary ($summary)"
cat "$summary"
