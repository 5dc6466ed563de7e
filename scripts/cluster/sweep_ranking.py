#!/usr/bin/env python3
"""The ranking of an `ibt sweep` results file, read from `ibt export FILE --json` (stdin).

Prints one line per sweep run, best MFU first, as "run<TAB>split<TAB>PP|-<TAB>s/step<TAB>MFU%"
(s/step to 4 decimals, MFU in percent to 3, as `ibt sweep` prints them); with --best
without|with, only "split<TAB>MFU%" of the best run without or with pipeline parallelism.

The figures are the sweep's own (models/training/train_runner.cpp), medians over the timed steps
(every recorded step after the first, or the first alone) as in `ibt report`: s/step is the
median step_time, MFU the median of each step's model_flops_per_step / (step_time * world_size *
peak_gflops_per_rank * 1e9); runs of equal
MFU keep their sweep order (sweep_index). Only the json module is needed, so any python3 runs it.
"""
import json
import sys


def median(xs):
    """The middle value, or the mean of the two middle ones (as core/stats.cpp and numpy)."""
    v = sorted(xs)
    n = len(v)
    return v[n // 2] if n % 2 else 0.5 * (v[n // 2 - 1] + v[n // 2])


def ranking(export):
    runs = []
    for run in export["runs"]:
        attrs = run["attributes"]
        if "sweep_index" not in attrs:
            continue
        rows = sorted(run["tables"].get("steps", {}).get("rows", []), key=lambda r: r["step"])
        timed = rows[1:] if len(rows) > 1 else rows
        if not timed:
            continue  # a run that recorded no step is not in the sweep's ranking either
        times = [r["step_time"] for r in timed]
        mfus = [attrs["model_flops_per_step"] / (t * attrs["world_size"] * attrs["peak_gflops_per_rank"] * 1e9)
                for t in times]
        runs.append((attrs["sweep_index"], run["id"], attrs["split"], "PP" if attrs["uses_pp"] else "-",
                     median(times), median(mfus)))
    runs.sort(key=lambda r: r[0])
    runs.sort(key=lambda r: -r[5])  # stable: equal MFU keeps the sweep order
    return runs


def main():
    args = sys.argv[1:]
    best = None
    if args[:1] == ["--best"] and len(args) == 2 and args[1] in ("with", "without"):
        best = args[1]
    elif args:
        sys.exit("usage: ibt export FILE.h5 --json | sweep_ranking.py [--best with|without]")
    runs = ranking(json.load(sys.stdin))
    for _, run_id, split, pp, step_s, mfu in runs:
        if best is None:
            print("%s\t%s\t%s\t%.4f\t%.3f" % (run_id, split, pp, step_s, 100 * mfu))
        elif (pp == "PP") == (best == "with"):
            print("%s\t%.3f" % (split, 100 * mfu))
            break


if __name__ == "__main__":
    main()
