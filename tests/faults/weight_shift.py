#!/usr/bin/env python3
"""weight_shift.py CLEAN_DIR FAULTY_DIR: how far a fault moved the trained weights.

Both are `ibt train --checkpoint-dir` directories of the same split; the newest complete
checkpoint of each (models/checkpoint/README.md) is read with the HDF5 tools (h5ls,
h5dump: no Python HDF5 module needed). Over every rank's weights (params/..., and with
ZeRO-3 the weight shards .../w; replicas counted on each rank holding one, so a corrupted
replica counts), it prints ||faulty - clean|| / ||clean|| (%.2g), or 0 when they are equal.
"""
import array
import os
import re
import subprocess
import sys
import tempfile


def newest_checkpoint(root):
    steps = sorted(d for d in os.listdir(root) if re.fullmatch(r"step-\d+", d)
                   and os.path.exists(os.path.join(root, d, "manifest.json")))
    if not steps:
        sys.exit(f"weight_shift.py: {root} holds no complete checkpoint (no step-N/manifest.json)")
    return os.path.join(root, steps[-1])


def weight_names(shard):
    listing = subprocess.run(["h5ls", "-r", shard], check=True, capture_output=True, text=True).stdout
    names = [line.split()[0] for line in listing.splitlines() if " Dataset " in line]
    return [n for n in names if n.startswith("/params/") or n.endswith("/w")]


def values(shard, name, scratch):
    subprocess.run(["h5dump", "-d", name, "-b", "LE", "-o", scratch, shard], check=True, capture_output=True)
    a = array.array("f")
    with open(scratch, "rb") as f:
        a.frombytes(f.read())
    if sys.byteorder != "little":
        a.byteswap()
    return a


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    clean, faulty = (newest_checkpoint(d) for d in sys.argv[1:])
    shards = sorted(f for f in os.listdir(clean) if f.endswith(".h5"))
    if shards != sorted(f for f in os.listdir(faulty) if f.endswith(".h5")):
        sys.exit(f"weight_shift.py: {clean} and {faulty} hold different shards")
    diff = norm = 0.0
    with tempfile.TemporaryDirectory() as tmp:
        scratch = os.path.join(tmp, "a.bin")
        for shard in shards:
            a_path, b_path = os.path.join(clean, shard), os.path.join(faulty, shard)
            names = weight_names(a_path)
            if not names or names != weight_names(b_path):
                sys.exit(f"weight_shift.py: {shard}: no weights, or not the same in both")
            for name in names:
                a, b = values(a_path, name, scratch), values(b_path, name, scratch)
                if len(a) != len(b):
                    sys.exit(f"weight_shift.py: {shard} {name}: {len(a)} and {len(b)} elements")
                diff += sum((x - y) ** 2 for x, y in zip(a, b))
                norm += sum(x * x for x in a)
    print(f"{(diff / norm) ** 0.5:.2g}" if diff else "0")


if __name__ == "__main__":
    main()
