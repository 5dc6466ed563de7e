#!/bin/bash
# Projects every published run of topologies/validation/published-runs.csv at its
# published split, batch, precision and framework, and reports ibt's error out of sample
# first: scripts/lofo_fit.py prints the leave-one-family-out (LOFO) median |MFU error|
# (each family at the one fitted constant -- the GEMM efficiency of each device generation,
# catalog model.gemm_efficiency, source ibt-gemm-fit -- refitted without that family), the
# in-sample median beside it (the catalog's values, fitted on these same rows), per family
# and per row both errors, the fitted constants with the rows that fitted them, and the
# uncertainty bands (80% split-conformal intervals of the LOFO errors) with the coverage
# they achieve on held-out families. error = projected / published - 1 of the row's metric:
# tokens_per_s_per_gpu (ibt's FLOP convention turns both into the same MFU, so the error is
# the MFU error), or mfu_percent where the source publishes only an MFU or TFLOP/s under its
# own FLOP convention (the row's source states the convention; the error then also holds
# the difference between the two conventions).
#   scripts/validate_published.sh [BUILD_DIR] [--csv FILE] [--bands FILE] [--errors FILE] [--rows FILE]
#                                 [--check] [--in-sample]
# Recompute "auto" (the source does not state it): the least recompute -- none, selective,
# full -- whose memory fits (ibt project prints neither INFEASIBLE nor DOES NOT FIT); a row
# where none fits is priced at full and reported as not fitting. A stated recompute is
# priced as stated and reported as not fitting when ibt's memory plan rejects it.
# vpp "auto" (the source says the schedule was interleaved but not how many virtual stages,
# e.g. Llama 3 405B, Nemotron-4 340B): of the vpp >= 2 that divide the layers per pipeline
# rank (rounded up where pp does not divide the layers) and that ibt accepts (pp x vpp <=
# layers), the fastest whose memory fits at the recompute chosen (with recompute auto: the
# least recompute at which any of them fits); where none fits, the fastest, reported as not
# fitting. A schedule's chunk count is tuned for speed under the memory limit, as a
# practitioner tunes it; the choice is printed as "v4(auto)".
# Every row is projected at the catalog's values and at each GEMM efficiency of a grid (a
# copy of the catalog with that value, two at a time): about 6x the projections of one
# pass, 1-3 minutes on 2 cores. --in-sample projects the catalog's values only (no LOFO, no
# bands, no check: what scripts/compare_calculon.sh needs).
# --rows FILE writes one CSV line per row (its key, the recompute used, ibt's tokens/s per
# GPU, MFU and error, the vpp used) for other scripts to read (scripts/compare_calculon.sh does).
# --errors FILE writes one line per row ("family topology model gpus error").
# --bands FILE writes the bands `ibt project` prints (topologies/validation/bands.json is
# the committed copy; regenerate it whenever a projection or a row changes).
# --check exits 1 unless every row is priced and fits ibt's memory plan and the targets
# hold: LOFO and in-sample median |error| <= 8%, held-out band coverage >= 80%, every
# family's LOFO signed mean within +-10%; where the project does not meet one today it is
# held to the recorded figure (scripts/lofo_fit.py, RECORDED) and --check prints it.
# The figures of the latest run are in docs/validation.md.
# IBT_VALIDATE_STACKS=1 prices the rows whose framework has a software-stack file with
# --stack (topologies/stacks; bf16 rows on a generation the stack covers): the figures
# then come from the stack's kernel benchmarks instead of the fitted gemm_efficiency.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
build="$here/build"
if [ $# -gt 0 ] && [ "${1#--}" = "$1" ]; then build="$1"; shift; fi
csv="$here/topologies/validation/published-runs.csv"
bands="" rows_out="" check=0 errors="" in_sample=0
while [ $# -gt 0 ]; do
  case "$1" in
    --csv) [ $# -ge 2 ] || { echo "validate_published.sh: --csv needs a file" >&2; exit 2; }; csv="$2"; shift ;;
    --bands) [ $# -ge 2 ] || { echo "validate_published.sh: --bands needs a file" >&2; exit 2; }; bands="$2"; shift ;;
    --rows) [ $# -ge 2 ] || { echo "validate_published.sh: --rows needs a file" >&2; exit 2; }; rows_out="$2"; shift ;;
    --errors) [ $# -ge 2 ] || { echo "validate_published.sh: --errors needs a file" >&2; exit 2; }; errors="$2"; shift ;;
    --check) check=1 ;;
    --in-sample) in_sample=1 ;;
    --lofo) ;;  # the default now
    *) echo "validate_published.sh: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
ibt="$build/ibt"
[ -x "$ibt" ] || { echo "validate_published.sh: $ibt not built (cmake --build $build --target ibt)" >&2; exit 2; }
[ -r "$csv" ] || { echo "validate_published.sh: cannot read $csv" >&2; exit 2; }
catalog="${IBT_TOPOLOGIES_DIR:-$here/topologies/catalog}"
python=python3
command -v "$python" > /dev/null || python=/usr/bin/python3

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# The projections run without bands (an empty validation folder): the bands are what
# this script writes, and a projection's figures do not depend on them.
mkdir -p "$work/no-bands"
export IBT_VALIDATION_DIR="$work/no-bands"

# One `ibt project` of a row at the catalog's values at one recompute and vpp; prints
# "fits tokens_per_s mfu recompute memory|args" (fits 1 or 0), or nothing when ibt prices
# no recompute (INFEASIBLE).
project_once() {
  local model=$1 topo=$2 gpus=$3 tp=$4 pp=$5 vpp=$6 sched=$7 ep=$8 cp=$9 mbs=${10} gb=${11} r=${12} zero=${13} fp8=${14} fw=${15}
  local args=(project --model "$model" --topology "$topo" --gpus "$gpus" --tp "$tp" --pp "$pp" --ep "$ep" --cp "$cp"
              --micro-batch-size "$mbs" --global-batch "$gb" --schedule "$sched" --recompute "$r" --zero "$zero"
              --framework "$fw" --wide)  # --wide: each figure on its own unwrapped line
  [ "$sched" = interleaved ] && args+=(--vpp "$vpp")
  [ "$fp8" = 1 ] && args+=(--fp8)
  # framework "stack:NAME": the row ran on a software stack ibt describes only by its stack
  # file (topologies/stacks/NAME.json; PyTorch-native runs): always priced with --stack.
  if [ "${fw#stack:}" != "$fw" ]; then args=("${args[@]/--framework/--stack}"); args=("${args[@]/#stack:/}"); fi
  local out
  # IBT_VALIDATE_STACKS=1: a row whose framework has a stack file (topologies/stacks) is
  # priced with --stack instead, where the stack covers the device and the row is bf16;
  # the other rows as always. Compares the stacks' sourced figures with the fitted ones.
  if [ "${IBT_VALIDATE_STACKS:-0}" = 1 ] && [ "$fp8" != 1 ] && [ -r "$here/topologies/stacks/$fw.json" ]; then
    local stacked=("${args[@]/--framework/--stack}")
    if out=$("$ibt" "${stacked[@]}" 2>&1); then
      args=("${stacked[@]}")
    elif ! grep -q "has no figures for" <<< "$out"; then
      echo "validate_published.sh: ibt ${stacked[*]} failed:" >&2; echo "$out" >&2; return 1
    fi
  fi
  [ "${args[*]}" = "${stacked[*]:-}" ] ||
    out=$("$ibt" "${args[@]}" 2>&1) || { echo "validate_published.sh: ibt ${args[*]} failed:" >&2; echo "$out" >&2; return 1; }
  grep -q '^INFEASIBLE' <<< "$out" && return 0
  local tps mfu fits=1 mem
  tps=$(awk '/^throughput/ {print $2}' <<< "$out")
  mfu=$(awk '/^MFU/ {sub("%", "", $2); print $2}' <<< "$out")
  mem=$(awk '/^memory/ {print $2 " " $3 " of " $(NF-2) " " $(NF-1)}' <<< "$out")
  grep -q '^DOES NOT FIT' <<< "$out" && fits=0
  echo "$fits $tps $mfu $r $mem|${args[*]}"
}

# The virtual-stage counts vpp "auto" chooses among: every vpp >= 2 that divides the
# layers per pipeline rank (rounded up where pp does not divide the layers: ibt then gives
# the outer virtual stages one layer less, as Llama 3 balances its 126 layers on 16 stages)
# and that ibt accepts (pp x vpp <= layers). Prints them space-separated.
vpp_candidates() {
  local model=$1 pp=$2 file=$1
  [ -r "$file" ] || file="${IBT_MODELS_DIR:-$here/models/catalog}/$model.json"
  [ -r "$file" ] || { echo "validate_published.sh: vpp auto: cannot read model $model ($file)" >&2; return 1; }
  "$python" - "$file" "$pp" <<'PY'
import json, sys
layers, pp = json.load(open(sys.argv[1]))["layers"], int(sys.argv[2])
per_rank = -(-layers // pp)
print(" ".join(str(v) for v in range(2, per_rank + 1) if per_rank % v == 0 and pp * v <= layers))
PY
}

# One row at the catalog's values; prints project_once's line for the recompute and vpp
# chosen, or nothing when ibt prices no recompute. Recompute "auto": the least of none,
# selective, full at which some vpp fits; vpp "auto": of vpp_candidates, the fastest that
# fits at that recompute. Where nothing fits, the fastest at the last recompute tried
# (full for auto, else the stated one), reported as not fitting.
project_row() {
  local model=$1 pp=$5 vpp=$6 sched=$7 rec=${12}
  local recs=("$rec") vpps=("$vpp")
  [ "$rec" = auto ] && recs=(none selective full)
  if [ "$vpp" = auto ]; then
    [ "$sched" = interleaved ] || { echo "validate_published.sh: row $model: vpp auto needs the interleaved schedule (not $sched)" >&2; return 1; }
    read -r -a vpps <<< "$(vpp_candidates "$model" "$pp")" || return 1
    [ ${#vpps[@]} -gt 0 ] || { echo "validate_published.sh: row $model: vpp auto: no vpp >= 2 divides its layers per rank at pp $pp" >&2; return 1; }
  fi
  local r v line best best_tps chosen=""
  for r in "${recs[@]}"; do
    best="" best_tps=""
    for v in "${vpps[@]}"; do
      line=$(project_once "$1" "$2" "$3" "$4" "$pp" "$v" "$sched" "$8" "$9" "${10}" "${11}" "$r" "${13}" "${14}" "${15}") || return 1
      [ -n "$line" ] || continue
      local fits tps
      read -r fits tps _ <<< "${line%%|*}"
      # A fitting line beats any that does not fit; among equals the faster wins.
      if [ -z "$best" ] || [ "$fits" -gt "${best%% *}" ] ||
         { [ "$fits" = "${best%% *}" ] && awk -v a="$tps" -v b="$best_tps" 'BEGIN {exit !(a > b)}'; }; then
        best=$line best_tps=$tps
      fi
    done
    [ -n "$best" ] && chosen=$best
    [ "${chosen%% *}" = 1 ] && break
  done
  [ -z "$chosen" ] || echo "$chosen"
}

rows="$work/rows.tsv" argsf="$work/args"
: > "$rows"; : > "$argsf"
[ -z "$errors" ] || : > "$errors"
[ -z "$rows_out" ] || echo "family,model,topology,gpus,tp,pp,vpp,ep,cp,mbs,global_batch,recompute,ibt_tokens_per_s_per_gpu,ibt_mfu_percent,ibt_error,vpp_used" > "$rows_out"
n=0
while IFS=, read -r family model topo gpus tp pp vpp sched ep cp mbs gb rec zero fp8 fw metric value source; do
  case "$family" in ''|'#'*|family) continue ;; esac
  case "$metric" in
    tokens_per_s_per_gpu|mfu_percent) ;;
    *) echo "validate_published.sh: row $model: unknown metric '$metric' (tokens_per_s_per_gpu or mfu_percent)" >&2; exit 2 ;;
  esac
  n=$((n + 1))
  [ $((n % 10)) = 0 ] && echo "projecting row $n ..." >&2
  res=$(project_row "$model" "$topo" "$gpus" "$tp" "$pp" "$vpp" "$sched" "$ep" "$cp" "$mbs" "$gb" "$rec" "$zero" "$fp8" "$fw")
  # vpp auto: the count chosen is the one in the arguments projected.
  vpp_used=$vpp
  [ "$vpp" != auto ] || [ -z "$res" ] || vpp_used="$(grep -o -- '--vpp [0-9]*' <<< "${res#*|}" | awk '{print $2}')(auto)"
  split="tp$tp pp$pp v$vpp_used ep$ep cp$cp b$mbs"
  case "$sched" in 1f1b|interleaved) ;; *) split="$split $sched" ;; esac
  if [ -z "$res" ]; then
    printf '%s\t%s\t%s\t%s\t%s\t-\t0\t%s\t%s\t-\t-\tNA\tINFEASIBLE\t0\n' "$family" "$model" "$topo" "$gpus" "$split" "$metric" "$value" >> "$rows"
    echo "-" >> "$argsf"
    [ -z "$rows_out" ] || echo "$family,$model,$topo,$gpus,$tp,$pp,$vpp,$ep,$cp,$mbs,$gb,,,,," >> "$rows_out"
    [ -z "$errors" ] || echo "$family $topo $model $gpus NA" >> "$errors"
    continue
  fi
  read -r fits tps mfu used mem <<< "${res%%|*}"
  echo "${res#*|}" >> "$argsf"
  if [ "$metric" = mfu_percent ]; then
    # The source publishes only an MFU under its own FLOP convention (stated in the row's
    # source); compare ibt's MFU with it directly.
    projected="$mfu%"
    err=$(awk -v p="$mfu" -v v="$value" 'BEGIN {printf "%.4f", p / v - 1}')
    shown="$value%"
  else
    # Unrounded for the error (a 1T model runs at ~29 tokens/s per GPU); printed to 3+ digits.
    projected=$(awk -v t="$tps" -v g="$gpus" 'BEGIN {printf (t / g < 100 ? "%.1f" : "%.0f"), t / g}')
    err=$(awk -v t="$tps" -v g="$gpus" -v v="$value" 'BEGIN {printf "%.4f", t / g / v - 1}')
    shown="$value"
  fi
  # by_stack (rows.tsv's 'stacked'): priced with --stack, whose figures are the stack file's; no
  # fitted efficiency enters.
  by_stack=0
  case " ${res#*|} " in *" --stack "*) by_stack=1 ;; esac
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$family" "$model" "$topo" "$gpus" "$split" "$used" "$fits" \
    "$metric" "$shown" "$projected" "$mfu" "$err" "$mem" "$by_stack" >> "$rows"
  [ -z "$rows_out" ] || echo "$family,$model,$topo,$gpus,$tp,$pp,$vpp,$ep,$cp,$mbs,$gb,$used,$(awk -v t="$tps" -v g="$gpus" 'BEGIN {printf "%.6g", t / g}'),$mfu,$err,${vpp_used%(auto)}" >> "$rows_out"
  [ -z "$errors" ] || echo "$family $topo $model $gpus $err" >> "$errors"
done < <(grep -v '^#' "$csv")

if [ "$in_sample" = 1 ]; then
  awk -F'\t' '{printf "%-20s %-16s %-11s %5s %-26s %-10s %10s %10s %6s%% %s%s\n", $1, $2, $3, $4, $5, $6, $9, $10, $11,
               ($12 == "NA" ? "-" : sprintf("%+.1f%%", 100 * $12)), ($7 == "1" ? "" : "  DOES NOT FIT (" $13 ")")}' "$rows"
  awk -F'\t' '$12 != "NA" {a = $12 < 0 ? -$12 : $12; e[++n] = a}
              END {if (!n) exit; for (i = 2; i <= n; i++) {t = e[i]; for (j = i - 1; j >= 1 && e[j] > t; j--) e[j + 1] = e[j]; e[j + 1] = t}
                   printf "in-sample only (no LOFO): %d rows, median |error| %.1f%%\n", n, 100 * (n % 2 ? e[(n + 1) / 2] : (e[n / 2] + e[n / 2 + 1]) / 2)}' "$rows"
  exit 0
fi

# The same rows, at the same recompute, at each GEMM efficiency of the grid: every catalog
# topology's model.gemm_efficiency set to eta. Two at a time (the CI machine has 2 cores).
grid="0.45 0.55 0.65 0.75 0.85"
grid_pass() {
  local eta=$1 dir="$work/catalog-$eta" line
  mkdir -p "$dir"
  "$python" - "$catalog" "$dir" "$eta" <<'PY'
import json, os, sys
src, dst, eta = sys.argv[1], sys.argv[2], float(sys.argv[3])
for name in os.listdir(src):
    if name.endswith(".json"):
        with open(os.path.join(src, name)) as f:
            t = json.load(f)
        t["model"]["gemm_efficiency"]["value"] = eta
        with open(os.path.join(dst, name), "w") as f:
            json.dump(t, f)
PY
  : > "$work/errors-$eta"
  local i=0
  while IFS= read -r line; do
    i=$((i + 1))
    if [ "$line" = - ]; then echo NA >> "$work/errors-$eta"; continue; fi
    local metric value gpus out
    metric=$(awk -F'\t' -v i="$i" 'NR == i {print $8}' "$rows")
    value=$(awk -F'\t' -v i="$i" 'NR == i {sub("%", "", $9); print $9}' "$rows")
    gpus=$(awk -F'\t' -v i="$i" 'NR == i {print $4}' "$rows")
    # shellcheck disable=SC2086  # the arguments were written space-separated, none holds a space
    out=$(IBT_TOPOLOGIES_DIR="$dir" "$ibt" $line 2>&1) || { echo "validate_published.sh: ibt $line failed at eta $eta" >&2; echo NA >> "$work/errors-$eta"; continue; }
    if [ "$metric" = mfu_percent ]; then
      awk -v v="$value" '/^MFU/ {sub("%", "", $2); printf "%.5f\n", $2 / v - 1}' <<< "$out" >> "$work/errors-$eta"
    else
      awk -v v="$value" -v g="$gpus" '/^throughput/ {printf "%.5f\n", $2 / g / v - 1}' <<< "$out" >> "$work/errors-$eta"
    fi
  done < "$argsf"
}
echo "projecting every row at GEMM efficiencies $grid (leave-one-family-out) ..." >&2
pids=()
for eta in $grid; do
  grid_pass "$eta" &
  pids+=($!)
  if [ ${#pids[@]} -ge 2 ]; then wait "${pids[0]}"; pids=("${pids[@]:1}"); fi
done
for p in "${pids[@]}"; do wait "$p"; done

args=(--catalog "$catalog" --rows "$rows" --exceptions "$here/topologies/validation/memory-exceptions.csv")
for eta in $grid; do args+=("$eta=$work/errors-$eta"); done
[ -z "$bands" ] || args+=(--bands "$bands")
[ "$check" = 1 ] && args+=(--check)
"$python" "$here/scripts/lofo_fit.py" "${args[@]}"
