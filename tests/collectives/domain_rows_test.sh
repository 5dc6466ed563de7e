#!/usr/bin/env bash
# intra and inter scopes store one row per group (domain, or rail) beside the combined row,
# naming its ranks and hosts; the run records its timing mode.
# Usage: domain_rows_test.sh IBT "MPIRUN WORDS" DIR
set -u
ibt=$1
read -r -a mpirun <<<"$2"
dir=$3
rm -rf "$dir" && mkdir -p "$dir"
file=$dir/domains.h5
fail() { echo "domain_rows_test: $*" >&2; exit 1; }
"${mpirun[@]}" -n 4 "$ibt" collectives -n 2 -w 1 -b 8 -e 1K -f 128 --op all_reduce --placement out \
  --scope intra,inter --domain-size 2 --timing imb --out "$file" > "$dir/out.log" 2>&1 ||
  { cat "$dir/out.log"; fail "ibt collectives failed"; }
dump=$(h5dump -d /runs/000001/collectives_groups "$file") || fail "no collectives_groups table"
# 2 sizes x (intra: 2 domains + inter: 2 rails) = 8 rows.
rows=$(grep -o 'DATASPACE  SIMPLE { ( [0-9]* )' <<<"$dump" | grep -o '[0-9]*' | head -1)
[[ "$rows" == 8 ]] || fail "expected 8 group rows, found '$rows'"
named() { grep -qE "\"$1(\\\\000|\")" <<<"$dump"; }  # fixed-length strings are NUL-padded
named 0-1 || fail "domain 0 (ranks 0-1) not named"
named 2-3 || fail "domain 1 (ranks 2-3) not named"
named 0,2 || fail "rail 0 (ranks 0,2) not named"
named "$(hostname)" || fail "hosts not recorded"
h5dump -a /runs/000001/timing_mode "$file" | grep -q '"imb"' || fail "timing mode not recorded"
# Export without --table gives the run kind's main table (collectives), not an error
# about the second table; --table collectives_groups still reaches the other.
csv=$("$ibt" export "$file" --csv) || fail "ibt export without --table failed"
head -1 <<<"$csv" | grep -q '^run_id,kind,op,scope' || fail "export gave another table: $(head -1 <<<"$csv")"
[[ $(wc -l <<<"$csv") == 5 ]] || fail "expected 4 collectives rows in the CSV: $csv"
"$ibt" export "$file" --csv --table collectives_groups | head -1 | grep -q '^run_id,kind,' ||
  fail "export --table collectives_groups failed"
echo "domain_rows_test: ok"
