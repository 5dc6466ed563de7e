#!/usr/bin/env bash
# column_units_test.sh IBT DIR: one meaning per unit word in stored column names.
#   1. What ibt writes now: crossover's scale-out rate is scale_out_Gbps (unit Gb/s), the
#      checkpoint tables' rates *_GBps (GB/s), and no column anywhere is named with the
#      old, two-meaning `gbps`; every column whose name carries GBps/Gbps has that unit.
#   2. Files written before the rename (crossover's scale_out_gbps, checkpoint_ranks'
#      gbps) are read by the report under today's names with their units.
set -eu
ibt=$1 dir=$2 here=$(cd "$(dirname "$0")" && pwd)
py=/usr/bin/python3
rm -rf "$dir" && mkdir -p "$dir"
"$ibt" crossover --model tiny-dense --gpus 4 --global-batch 8 --domain-sizes 2 --scale-out-Gbps 100 \
  --topology local-cpu --out "$dir/new.h5" > /dev/null
"$ibt" checkpoint-bench --state-bytes 64K --repeats 1 --dir "$dir/ckpt" --out "$dir/new.h5" > /dev/null
"$py" - "$dir" "$here/../../reports/html" <<'PY'
import sys
import h5py
import numpy as np
d, scripts = sys.argv[1], sys.argv[2]
sys.path.insert(0, scripts)
import ibt_h5

seen = {}
with h5py.File(f"{d}/new.h5", "r") as f:
    for run in f["runs"].values():
        for name, t in run.items():
            if isinstance(t, h5py.Dataset) and t.dtype.names:
                for col in t.dtype.names:
                    unit = t.attrs.get(f"unit:{col}", "")
                    seen[col] = unit.decode() if isinstance(unit, bytes) else str(unit)
assert seen.get("scale_out_Gbps") == "Gb/s", seen
assert any(c.endswith("_GBps") for c in seen), seen
for col, unit in seen.items():
    assert "gbps" not in col, f"column {col} uses the old unit word gbps"
    if "GBps" in col:
        assert unit == "GB/s", (col, unit)
    if "Gbps" in col:
        assert unit == "Gb/s", (col, unit)

# A file as ibt wrote it before: old names, read under today's.
old = f"{d}/old.h5"
with h5py.File(old, "w") as f:
    f.attrs["ibt_schema"] = "ibt-results"
    f.attrs["ibt_schema_version"] = 1
    run = f.create_group("runs/000001")
    run.attrs["kind"] = "crossover"
    run.attrs["status"] = "complete"
    t = run.create_dataset("crossover", data=np.array([(8, 400.0)], dtype=[("domain_size", "<i8"), ("scale_out_gbps", "<f8")]))
    t.attrs["unit:scale_out_gbps"] = "Gb/s"
    t = run.create_dataset("checkpoint_ranks", data=np.array([(0, 2.5)], dtype=[("rank", "<i8"), ("gbps", "<f8")]))
    t.attrs["unit:gbps"] = "GB/s"
(r,) = ibt_h5.load_runs(old)
x, c = r.tables["crossover"], r.tables["checkpoint_ranks"]
assert float(x["scale_out_Gbps"][0]) == 400.0 and x.units["scale_out_Gbps"] == "Gb/s", (x.columns, x.units)
assert float(c["write_GBps"][0]) == 2.5 and c.units["write_GBps"] == "GB/s", (c.columns, c.units)
print("column units: ok", sorted(k for k in seen if "bps" in k.lower()))
PY
