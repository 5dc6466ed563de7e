#!/usr/bin/env python3
"""ibt's `--timing imb` beside the in-repo reference, a plain MPI loop per op (issue 41).

plain_mpi_loop.c makes IMB-MPI1's calls in IMB's pattern with no harness around them, so
the ratio ibt / plain isolates what ibt's harness adds or removes. Both tools run one
process per op over all sizes, in alternating order, REPS times, under the same launcher;
the table gives per op and size each tool's median time and the median of the
repetitions' own ratios (ibt over plain), with each range as a share of its median.

It is the benchmark for any change to the harness's timing: on a quiet machine with ranks
bound to cores, the ratio should sit in 0.95-1.05 (docs/measurements/imb-agreement.md). On
a shared machine single cells swing by tens of percent, so --gross LO:HI (default 0.5:2)
is the only thing it fails on: exit 1 when, in some cell, every repetition's ratio lies
outside it on the same side. That catches a harness that times the wrong thing (a lost
barrier, a doubled call, a missing untimed pass), which is off in every repetition; a
burst of load from another tenant moves one repetition, not all of them alternately
(CI once saw one all_gather cell's repetitions spread over 132% of their median).

usage: compare_reference.py IBT PLAIN [--ranks N] [--reps R] [--iters N] [--lo LOG2] [--hi LOG2]
                            [--step LOG2] [--ops OPS] [--mpiexec CMD] [--bind-to core] [--gross LO:HI]
                            [--plain-args KNOBS]
"""
import argparse
import csv
import io
import os
import shlex
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare_imb import OPS, add_run_args, check_run_args, ibt_collectives_args  # noqa: E402  one definition each

# ibt op -> plain_mpi_loop's name for it
PLAIN = {"ping_pong": "pingpong", "send_recv": "sendrecv", "all_reduce": "allreduce", "broadcast": "bcast",
         "all_gather": "allgather", "all_to_all": "alltoall", "reduce_scatter": "reduce_scatter_block"}


def band(text):
    try:
        lo, hi = (float(x) for x in text.split(":"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not LO:HI (e.g. 0.5:2)")
    if not 0 < lo < 1 < hi:
        raise argparse.ArgumentTypeError(f"'{text}': need 0 < LO < 1 < HI")
    return lo, hi


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("ibt", help="path of the ibt executable")
    p.add_argument("plain", help="path of plain_mpi_loop (build target ibt_plain_mpi_loop)")
    add_run_args(p, hi_default=22)
    p.add_argument("--step", type=int, default=1, help="log2 step between sizes")
    p.add_argument("--mpiexec", default="mpiexec.mpich", help="launcher command line, options included")
    p.add_argument("--plain-args", default="", help="knobs for plain_mpi_loop, e.g. '--fresh --alloc aligned' "
                                                     "(its usage lists them): vary one thing at a time")
    p.add_argument("--gross", type=band, default=(0.5, 2.0),
                   help="fail when every repetition of a cell lies outside LO:HI on one side")
    a = p.parse_args(argv)
    for path, what in ((a.ibt, "ibt"), (a.plain, "plain_mpi_loop")):
        if not os.access(path, os.X_OK):
            p.error(f"{what} executable not found or not executable: {path}")
    if a.step < 1:
        p.error("--step must be at least 1")
    check_run_args(p, a)
    a.sizes = [1 << e for e in range(a.lo, a.hi + 1, a.step)]
    return a


def launcher(a):
    cmd = shlex.split(a.mpiexec) + ["-n", str(a.ranks)]
    return cmd + (["-bind-to", a.bind_to] if a.bind_to else [])


def run(cmd):
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"compare_reference: {shlex.join(cmd)} exited {done.returncode}:\n{done.stderr[-2000:]}")
    return done.stdout


def run_plain(a, op):
    out = run(launcher(a) + [a.plain, PLAIN[op], str(a.iters)] + [str(s) for s in a.sizes] + shlex.split(a.plain_args))
    return {int(f[1]): float(f[2]) for f in (line.split() for line in out.splitlines()) if len(f) == 3}


def run_ibt(a, op, scratch):
    scale = a.ranks if OPS[op][1] else 1  # ibt's size is the whole buffer, IMB's per rank
    out = os.path.join(scratch, f"{op}.h5")
    if os.path.exists(out):
        os.remove(out)
    run(launcher(a) + ibt_collectives_args(a.ibt, "imb", a.iters, op, a.sizes[0] * scale, a.sizes[-1] * scale,
                                           1 << a.step, out))
    rows = csv.DictReader(io.StringIO(run([a.ibt, "export", out, "--csv"])))
    return {int(r["bytes"]) // scale: float(r["time_us"]) for r in rows}


def spread(xs):
    m = statistics.median(xs)
    return 100 * (max(xs) - min(xs)) / m if m > 0 else 0.0


def main(argv=None):
    a = parse_args(argv)
    times = {(op, s): {"ibt": [], "plain": []} for op in a.ops for s in a.sizes}
    with tempfile.TemporaryDirectory(prefix="ibt-compare-reference-") as scratch:
        for r in range(a.reps):
            for op in a.ops:
                order = ("plain", "ibt") if r % 2 == 0 else ("ibt", "plain")
                for tool in order:
                    got = run_plain(a, op) if tool == "plain" else run_ibt(a, op, scratch)
                    for s in a.sizes:
                        if s not in got:
                            sys.exit(f"compare_reference: {tool} printed no time for {op} at {s} B")
                        times[(op, s)][tool].append(got[s])
            print(f"rep {r + 1}/{a.reps} done", file=sys.stderr)
    lo, hi = a.gross
    print(f"{a.ranks} ranks, {a.iters} iterations, medians of {a.reps} alternating repetitions; "
          f"launcher: {shlex.join(launcher(a))}; plain_mpi_loop knobs: {a.plain_args or 'none, IMB conditions'}\n")
    print("| op | bytes (IMB) | plain us (r%) | ibt imb us (r%) | ibt/plain (r%) |")
    print("|---|---:|---:|---:|---:|")
    ratios, gross = [], []
    for (op, s), t in times.items():
        per_rep = [i / p for i, p in zip(t["ibt"], t["plain"]) if p > 0]
        ratio = statistics.median(per_rep)
        ratios.append(ratio)
        if all(x < lo for x in per_rep) or all(x > hi for x in per_rep):
            gross.append(f"{op} {s} B: {', '.join(f'{x:.2f}' for x in per_rep)}")
        print(f"| {op} | {s} | {statistics.median(t['plain']):.2f} ({spread(t['plain']):.0f}) | "
              f"{statistics.median(t['ibt']):.2f} ({spread(t['ibt']):.0f}) | {ratio:.3f} ({spread(per_rep):.0f}) |")
    within = sum(0.95 <= x <= 1.05 for x in ratios)
    print(f"\n{within}/{len(ratios)} cells within 0.95-1.05; median ratio {statistics.median(ratios):.3f}, "
          f"range {min(ratios):.3f}-{max(ratios):.3f}")
    if gross:
        print(f"FAILED: {len(gross)} cell(s) outside the gross band {lo:g}-{hi:g} in every repetition: "
              f"{'; '.join(gross)}")
        return 1
    print(f"no cell outside the gross band {lo:g}-{hi:g} in every repetition")
    return 0


if __name__ == "__main__":
    sys.exit(main())
