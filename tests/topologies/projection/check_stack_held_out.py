#!/usr/bin/python3
"""check_stack_held_out.py SOURCE_DIR BUILD_DIR STACK: the held-out figures a stack file
carries (topologies/stacks/STACK.json, "held_out") are what scripts/validate_published.sh
computes today on the published runs its source file lists: the same row count and the
least, median and greatest error within 0.5 points. A pricing change that moves them
fails here until the stack file says the new figures, so `project --stack` never quotes
stale ones."""
import csv as csv_module
import json
import os
import statistics
import subprocess
import sys
import tempfile

src, build, name = sys.argv[1:4]
with open(os.path.join(src, "topologies", "stacks", name + ".json")) as f:
    stack = json.load(f)
held = stack.get("held_out")
if not held:
    sys.exit(f"check_stack_held_out: FAIL: {name}.json has no held_out block")
csv = stack["sources"][held["source"]].split(": ")[0]
with tempfile.TemporaryDirectory() as d:
    rows = os.path.join(d, "rows.csv")
    p = subprocess.run([os.path.join(src, "scripts", "validate_published.sh"), build, "--csv", os.path.join(src, csv),
                        "--rows", rows], capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"check_stack_held_out: FAIL: validate_published.sh exited {p.returncode}:\n{p.stdout}{p.stderr}")
    with open(rows) as f:
        errors = [float(r["ibt_error"]) for r in csv_module.DictReader(f)]
if len(errors) != held["rows"]:
    sys.exit(f"check_stack_held_out: FAIL: {csv} priced {len(errors)} rows, {name}.json says {held['rows']}")
measured = {"min_error": min(errors), "median_error": statistics.median(errors), "max_error": max(errors)}
bad = [f"{k} {v:+.3f} measured, {held[k]:+.3f} in {name}.json" for k, v in measured.items() if abs(v - held[k]) > 0.005]
if bad:
    sys.exit("check_stack_held_out: FAIL: " + "; ".join(bad) + " (update the held_out block)")
print(f"check_stack_held_out: ok ({name}: {len(errors)} held-out runs, errors "
      f"{measured['min_error']:+.3f} .. {measured['max_error']:+.3f}, median {measured['median_error']:+.3f})")
