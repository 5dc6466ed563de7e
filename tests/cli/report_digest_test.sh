#!/usr/bin/env bash
# report_digest_test.sh IBT SOURCE DIR: every reader honours the table digests
# (reports/store/table_digest.hpp), the HTML report included. One cell is edited with
# h5py, as a hand or a tool outside ibt would: a crossover verdict changed to another (a
# string), and one step time of an imported log (a number). Then `ibt report`,
# the renderer run directly (reports/html/render_report.py, whose reader ibt_h5.py checks
# the digests itself), `ibt show` and `ibt export` each exit 2 naming the damaged table,
# and the file is left as it was. The same files before the edit report with exit 0.
set -eu
ibt=$1 src=$2 dir=$3
py=/usr/bin/python3
rm -rf "$dir" && mkdir -p "$dir"
fail() { echo "report_digest_test: FAIL: $*" >&2; exit 1; }

"$ibt" crossover --model llama3-8b --gpus 64 --domain-sizes 8,64 --scale-out-Gbps 100,400 --global-batch 64 \
  --out "$dir/x.h5" > /dev/null
"$ibt" import-log "$src/tests/cli/import_log/megatron_llama3_8b.log" --format megatron --model llama3-8b \
  --topology dgx-h100 --out "$dir/m.h5" > /dev/null
"$ibt" report "$dir/x.h5" "$dir/m.h5" --out "$dir/clean" > "$dir/clean.txt" 2>&1 ||
  { cat "$dir/clean.txt"; fail "the undamaged files do not report"; }
"$py" "$src/reports/html/render_report.py" --out "$dir/clean-direct" "$dir/x.h5" "$dir/m.h5" > "$dir/direct.txt" 2>&1 ||
  { cat "$dir/direct.txt"; fail "the renderer refuses the undamaged files"; }

# edit FILE TABLE COLUMN: changes row 0's cell and prints the table's path in the file.
edit() {
  "$py" - "$@" <<'PY'
import sys, h5py
path, table, column = sys.argv[1:4]
with h5py.File(path, "r+") as f:
    run = sorted(f["runs"])[-1]
    ds = f["runs"][run][table]
    rows = ds[0:1]
    value = rows[0][column]
    if isinstance(value, bytes):
        # The campaign's edit: a verdict turned into another ("PP needed" <-> "PP not needed";
        # "within uncertainty", what the catalog's measured gain error makes most cells, -> "PP needed").
        assert value in (b"PP needed", b"PP not needed", b"within uncertainty"), value
        rows[0][column] = b"PP not needed" if value == b"PP needed" else b"PP needed"
    else:
        rows[0][column] = value * 0.5
    ds[0:1] = rows
    print(f"/runs/{run}/{table}")
PY
}
damaged_x=$(edit "$dir/x.h5" crossover verdict)
damaged_m=$(edit "$dir/m.h5" steps step_time)
cp "$dir/x.h5" "$dir/x.before" && cp "$dir/m.h5" "$dir/m.before"

refused() {  # refused FILE TABLE COMMAND...: exit 2 naming FILE's TABLE, FILE unchanged
  local file=$1 table=$2; shift 2
  set +e; "$@" > "$dir/out.txt" 2>&1; local rc=$?; set -e
  [[ $rc == 2 ]] && grep -qF "$file: $table is damaged" "$dir/out.txt" ||
    { cat "$dir/out.txt"; fail "exit $rc, expected 2 naming $file: $table: $*"; }
}
for f in x m; do
  eval "table=\$damaged_$f"
  refused "$dir/$f.h5" "$table" "$ibt" report "$dir/$f.h5" --out "$dir/report-$f"
  refused "$dir/$f.h5" "$table" "$py" "$src/reports/html/render_report.py" --out "$dir/direct-$f" "$dir/$f.h5"
  refused "$dir/$f.h5" "$table" "$ibt" show "$dir/$f.h5" --run last
  refused "$dir/$f.h5" "$table" "$ibt" export "$dir/$f.h5" --json
  cmp -s "$dir/$f.h5" "$dir/$f.before" || fail "$f.h5 was changed by a reader"
done
[[ ! -e $dir/report-x/index.html && ! -e $dir/direct-x/index.html ]] || fail "a report page was drawn from a damaged table"
echo "report_digest_test: ok"
