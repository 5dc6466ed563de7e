#!/usr/bin/env python3
"""atlas_before_after.py RECORDED.md NOW.txt: the atlas before and after, cell by cell.

RECORDED.md is a file whose FIRST markdown table is a recorded atlas in the layout of
docs/measurements/atlas.md (model | system | devices x batch | with PP | without PP | gain |
verdict | practice | agreement | term); NOW.txt is the stdout of `ibt crossover --atlas --wide`
(the Markdown table: model | system | devices x batch | scale | with PP | split | without PP | split | gain |
verdict | practice | agreement | term). Prints one markdown row per cell of NOW (its MFU
bands, gain, verdict and agreement beside the recorded gain and verdict, "**verdict**"
where the verdict changed) and a count line. A record, not a check: exit 0 whatever changed.
"""
import sys
from collections import Counter


def table_rows(path, first_only):
    rows, tables = [], 0
    for line in open(path):
        if line.startswith("| model"):
            tables += 1
            continue
        if line.startswith("| ") and not line.startswith("|---") and (tables == 1 or not first_only):
            rows.append([c.strip() for c in line.strip().strip("|").split("|")])
    return rows


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: atlas_before_after.py RECORDED.md NOW.txt")
    before = {(c[0], c[1]): {"gain": c[5], "verdict": c[6], "agreement": c[8]}
              for c in table_rows(sys.argv[1], True)}
    now = {(c[0], c[1]): {"with": c[4], "without": c[6], "gain": c[8], "verdict": c[9], "agreement": c[11]}
           for c in table_rows(sys.argv[2], False)}
    if not before or not now:
        sys.exit("atlas_before_after: no atlas rows in " + (sys.argv[1] if not before else sys.argv[2]))
    print("| model | system | recorded gain | recorded verdict | now: with PP (band) | without PP (band) | gain | "
          "verdict | agreement | changed |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    changed = 0
    for key, x in now.items():
        o = before.get(key)
        flag = "" if o and o["verdict"] == x["verdict"] else "**verdict**"
        changed += bool(flag)
        print(f"| {key[0]} | {key[1]} | {o['gain'] if o else '-'} | {o['verdict'] if o else '(no cell)'} | "
              f"{x['with']} | {x['without']} | {x['gain']} | {x['verdict']} | {x['agreement']} | {flag} |")
    count = lambda rows: ", ".join(f"{n} {a}" for a, n in Counter(r["agreement"] for r in rows.values()).most_common())
    print(f"\n{changed} of {len(now)} cells changed verdict. Agreement now: {count(now)}; recorded: {count(before)}.")


if __name__ == "__main__":
    main()
