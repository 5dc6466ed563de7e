#!/usr/bin/python3
"""check_p2p_file.py FILE.h5 UNITS SIZES: the newest run of FILE is a p2p_matrix run whose
table holds every pair of UNITS units exactly once per size, rounds that never use a
rank twice, positive times and no wrong bytes."""
import sys
from collections import defaultdict

import h5py

path, units, sizes = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])


def fail(message):
    print(f"check_p2p_file: FAIL: {message}", file=sys.stderr)
    sys.exit(1)


with h5py.File(path, "r") as f:
    run = f["runs"][sorted(f["runs"])[-1]]
    if run.attrs["kind"] != "p2p_matrix" or run.attrs["status"] != "complete":
        fail(f"newest run is {run.attrs['kind']} / {run.attrs['status']}")
    rows = run["p2p_matrix"][:]
pairs = defaultdict(int)
busy = defaultdict(list)
for r in rows:
    pairs[(int(r["unit_a"]), int(r["unit_b"]), int(r["bytes"]))] += 1
    busy[(int(r["round"]), int(r["bytes"]))] += [int(r["rank_a"]), int(r["rank_b"])]
    if not r["time_us"] > 0 or r["wrong"] != 0:
        fail(f"row {r}")
expected = units * (units - 1) // 2 * sizes
if len(rows) < expected or len(pairs) != expected or any(a >= b for a, b, _ in pairs):
    fail(f"{len(pairs)} distinct (pair, size), expected {expected}")
for key, ranks in busy.items():
    if len(ranks) != len(set(ranks)):
        fail(f"round {key[0]} uses a rank twice: {ranks}")
print(f"check_p2p_file: ok ({len(rows)} rows, {len(busy)} round/size groups)")
