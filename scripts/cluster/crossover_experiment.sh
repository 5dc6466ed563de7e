#!/usr/bin/env bash
# crossover_experiment.sh: the pipeline-parallel crossover, measured. For each link rate,
# an emulated cluster (create.sh) of 2 hosts x 2 ranks runs `ibt sweep` (every split of
# a small dense model, a few training steps each) and `ibt collectives` on the same
# links; then the best split without and with pipeline parallelism is tabulated per rate.
# Run as root; see --help.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=common.sh
source "$here/common.sh"

usage() {
  cat <<EOF
usage: crossover_experiment.sh --ibt PATH [--rates unshaped,10mbit] [--model crossover-dense]
                               [--ppn 1] [--steps 3] [--microbatches 4] [--out DIR] [--preload LIB]

For each rate (tc syntax, or "unshaped" for veth speed; fastest first): create a 2-host
cluster with links shaped to it, run on 2 x PPN ranks
  ibt collectives --scope all (all_reduce, send_recv)   -> DIR/collectives-RATE.h5
  ibt sweep --model MODEL                               -> DIR/sweep-RATE.h5, .txt
tear the cluster down, and write DIR/summary.tsv: per rate, the best split without PP,
the best with PP, their MFU, and which wins. Every sweep uses the same per-rank peak
(the first sweep measures it), so MFU compares across rates. The collectives files are
the calibration input for projecting the same splits (ibt calibrate, then ibt project).
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

ibt="" rates=unshaped,10mbit model=crossover-dense ppn=1 steps=3 microbatches=4 out="" preload=""
while (($#)); do
  case $1 in
    --ibt) ibt=${2-}; shift 2 ;;
    --rates) rates=${2-}; shift 2 ;;
    --model) model=${2-}; shift 2 ;;
    --ppn) ppn=${2-}; shift 2 ;;
    --steps) steps=${2-}; shift 2 ;;
    --microbatches) microbatches=${2-}; shift 2 ;;
    --out) out=${2-}; shift 2 ;;
    --preload) preload=${2-}; shift 2 ;;
    -h | --help) usage; exit 0 ;;
    *) die "unknown argument '$1' (see --help)" ;;
  esac
done
[[ -n $ibt && -x $ibt ]] || die "--ibt '$ibt' is not an executable ibt binary"
"$ibt" sweep --help >/dev/null 2>&1 || die "'$ibt sweep' does not run: this build has no sweep command"
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
IFS=, read -r -a rate_list <<<"$rates"
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
  run "$out/collectives-$rate.h5" collectives --scope all -t all_reduce,send_recv -b 1K -e 1M -f 4 -n 5 -w 1 \
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
  # "# best without PP: <split>, MFU 7.684%" and "# best with PP: ..." from the sweep.
  best() { sed -n "s/^# best $1 PP: \(.*\), MFU \([0-9.]*\)%$/\1\t\2/p" "$out/sweep-$rate.txt"; }
  without=$(best without) with=$(best with)
  [[ -n $without && -n $with ]] || die "the $rate sweep did not name both best splits (see $out/sweep-$rate.txt)"
  winner=$(awk -F'\t' -v a="$without" -v b="$with" 'BEGIN { split(a, x, "\t"); split(b, y, "\t"); print (y[2] > x[2]) ? "PP" : "no PP" }')
  printf '%s\t%s\t%s\t%s\n' "$rate" "$without" "$with" "$winner" >>"$summary"
  tail -n 1 "$summary"
done
echo "== summary ($summary)"
cat "$summary"
