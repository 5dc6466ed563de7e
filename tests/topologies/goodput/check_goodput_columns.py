#!/usr/bin/env python3
"""check_goodput_columns.py FILE: the projection runs in FILE carry the goodput columns;
the first run (dgx-h100, reliability section) has them computed, the second (dgx-a100,
no failure figures) has NaN and says why in its attributes."""
import math
import sys

import h5py


def runs(f):
    out = []
    def visit(name, obj):
        if isinstance(obj, h5py.Dataset) and name.endswith("projections"):
            out.append((obj.parent, obj[:]))
    f.visititems(visit)
    return out


with h5py.File(sys.argv[1], "r") as f:
    found = runs(f)
    if len(found) != 2:
        sys.exit(f"expected 2 projection runs, found {len(found)}")
    def topology(run):
        v = run[0].attrs.get("topology", b"")
        return v.decode() if isinstance(v, bytes) else str(v)
    by_topology = {topology(r): r for r in found}
    if set(by_topology) != {"dgx-h100", "dgx-a100"}:
        sys.exit(f"expected runs on dgx-h100 and dgx-a100, found {sorted(by_topology)}")
    g1, t1 = by_topology["dgx-h100"]
    g2, t2 = by_topology["dgx-a100"]
    for col in ("job_mtbf_s", "checkpoint_bytes", "checkpoint_s", "restart_s", "interval_young_s",
                "interval_daly_s", "interval_steps", "goodput", "goodput_mfu"):
        if col not in t1.dtype.names:
            sys.exit(f"column {col} missing")
    r = t1[0]
    if not (0.5 < r["goodput"] < 1 and abs(r["goodput_mfu"] - r["goodput"] * r["mfu"]) < 1e-12):
        sys.exit(f"dgx-h100 goodput wrong: {r['goodput']} {r['goodput_mfu']} {r['mfu']}")
    if abs(r["restart_s"] - 600) > 1e-9 or r["interval_steps"] < 1:
        sys.exit(f"dgx-h100 restart/interval wrong: {r['restart_s']} {r['interval_steps']}")
    if not math.isnan(t2[0]["goodput"]):
        sys.exit("dgx-a100 (no failure figures) has a goodput")
    text = g2.attrs["failure_assumptions"]
    text = text.decode() if isinstance(text, bytes) else str(text)
    if "not given" not in text:
        sys.exit("dgx-a100 run does not say the failure figures were not given: " + text)
print("check_goodput_columns: ok")
