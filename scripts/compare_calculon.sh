#!/bin/bash
# Runs the analytic peer Calculon (https://github.com/calculon-ai/calculon) beside
# `ibt project` on the published runs of topologies/validation/published-runs.csv and
# prints, per row, both tools' figure and error, then per family and overall the median
# |error| and signed mean of each tool on the rows both can express (error = projected /
# published - 1 of the row's metric; MFU rows use ibt's FLOP convention for both tools).
#   scripts/compare_calculon.sh CALCULON_DIR [BUILD_DIR] [--csv FILE] [--out FILE] [--inputs DIR] [--markdown]
# CALCULON_DIR: your own checkout of Calculon (this script neither fetches nor builds it);
# Calculon needs Python 3 with numpy, pandas and psutil (Debian: python3-numpy
# python3-pandas python3-psutil); CALCULON_PYTHON names the interpreter (default
# /usr/bin/python3 where it exists, else python3). Without a checkout the script says so
# and exits 0: it is not part of CI.
# --out FILE writes the side-by-side CSV (topologies/validation/calculon-side-by-side.csv
# is the committed copy); --inputs DIR keeps Calculon's input files, one application,
# execution and system JSON per row, for `calculon llm APP EXE SYS -` by hand; --markdown
# also prints both tables in Markdown (topologies/README.md, "Validation").
# How rows become Calculon inputs, and what Calculon cannot express:
# scripts/calculon_side_by_side.py.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
if [ $# -lt 1 ] || [ "${1#--}" != "$1" ] || [ ! -f "$1/calculon/llm/llm.py" ]; then
  echo "compare_calculon.sh: no Calculon checkout given${1:+ ($1 has no calculon/llm/llm.py)}; nothing compared."
  echo "  Clone https://github.com/calculon-ai/calculon and run: scripts/compare_calculon.sh PATH_TO_IT [BUILD_DIR]"
  exit 0
fi
calculon_dir="$(cd "$1" && pwd)"; shift
build="$here/build"
if [ $# -gt 0 ] && [ "${1#--}" = "$1" ]; then build="$1"; shift; fi
csv="$here/topologies/validation/published-runs.csv"
out="" inputs="" markdown=0
while [ $# -gt 0 ]; do
  case "$1" in
    --csv|--out|--inputs)
      [ $# -ge 2 ] || { echo "compare_calculon.sh: $1 needs a path" >&2; exit 2; }
      case "$1" in --csv) csv="$2" ;; --out) out="$2" ;; --inputs) inputs="$2" ;; esac
      shift ;;
    --markdown) markdown=1 ;;
    *) echo "compare_calculon.sh: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
python="${CALCULON_PYTHON:-}"
if [ -z "$python" ]; then
  if [ -x /usr/bin/python3 ]; then python=/usr/bin/python3; else python=python3; fi
fi

ibt_rows=$(mktemp)
log=$(mktemp)
trap 'rm -f "$ibt_rows" "$log"' EXIT
# ibt's projection of every row, as validate_published.sh makes it (same recompute rule,
# same framework profiles).
if ! "$here/scripts/validate_published.sh" "$build" --csv "$csv" --rows "$ibt_rows" --in-sample > "$log" 2>&1; then
  cat "$log" >&2
  echo "compare_calculon.sh: scripts/validate_published.sh failed" >&2
  exit 2
fi

commit=$(git -C "$calculon_dir" rev-parse HEAD 2>/dev/null || echo unknown)
commit_date=$(git -C "$calculon_dir" log -1 --format=%cs 2>/dev/null || echo unknown)
ibt_commit=$(git -C "$here" rev-parse --short HEAD 2>/dev/null || echo unknown)
csv_commit=$(git -C "$(dirname "$csv")" log -1 --format=%h -- "$(basename "$csv")" 2>/dev/null || true)
header="Calculon (https://github.com/calculon-ai/calculon, commit $commit of $commit_date) beside ibt project (commit $ibt_commit)
on the published runs of ${csv#"$here"/}${csv_commit:+ (commit $csv_commit)}${IBT_MODELS_DIR:+, models from $IBT_MODELS_DIR}; made $(date -u +%Y-%m-%dT%H:%MZ) by
scripts/compare_calculon.sh CALCULON_DIR BUILD_DIR --out FILE (inputs written by scripts/calculon_side_by_side.py).
One line per row both tools express; error = figure / published - 1 of the row's metric (tokens_per_s_per_gpu,
or mfu_percent where the source gives only MFU: Calculon's MFU is its token rate under ibt's FLOPs per token and peak;
ibt's MFU is its model FLOPs over the BF16 peak, fp8 rows included, so an fp8 row can exceed 100%).
calculon_system: calculon:FILE is Calculon's own system file; ibt-catalog:NAME is ibt's catalog figures written in
Calculon's format with Calculon's H100 efficiency curves (Calculon ships no such system).
Rows Calculon cannot express are listed at the end with the reason."
args=(--calculon "$calculon_dir" --commit "$commit" --repo "$here" --csv "$csv" --ibt-rows "$ibt_rows" --header "$header")
[ -z "$out" ] || args+=(--out "$out")
[ -z "$inputs" ] || args+=(--inputs "$inputs")
[ "$markdown" = 0 ] || args+=(--markdown)
"$python" "$here/scripts/calculon_side_by_side.py" "${args[@]}"
