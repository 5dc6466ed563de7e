#!/usr/bin/env python3
"""ibt against Intel MPI Benchmarks (IMB-MPI1) on one machine, side by side.

Runs IMB-MPI1 and `ibt collectives` in alternating order, REPS times, on the same MPI and
the same ranks, and prints per benchmark and size the median IMB t_avg, the median ibt time
in each timing mode, and their ratio, as a Markdown table. `--timing imb` is the mode meant
to match IMB (target: ratio 0.95-1.05); `--timing loop` (nccl-tests' timing) is shown
beside it for reference.

IMB is not part of ibt: build IMB-MPI1 yourself from its public source
(https://github.com/intel/mpi-benchmarks), outside this tree, and pass its path.

What is held equal: iterations (IMB's -iter N with -iter_policy off; ibt's -n N), IMB's
warm-up count (N/10, at least min(10, N)) as ibt's -w, IMB's untimed pass of N calls
before that warm-up (IMB_init_buffers_iter; `--timing imb` makes the same pass itself),
no result checks (ibt -c 0), the
time averaged over ranks (IMB's t_avg; ibt -a avg), float32 reductions, out-of-place
buffers (broadcast is in place in both), fixed root 0, where the buffers sit in their pages
(--imb-buffers page+16, the default: a preloaded shim, alloc_mem_offset.c, puts IMB's
MPI_Alloc_mem buffers 16 bytes past a page, where ibt's imb timing puts its own; left to
IMB's heap, a 32 KiB Allreduce on 2 ranks read 28-30 us from IMB's buffers and 19-21 us from
page + 16 in both tools), and one process per benchmark in
both tools: IMB's Bcast run after PingPong, Sendrecv and Allreduce in one IMB process read
17% slower at 2 MiB and 1.1-3x slower at 4-8 MiB than Bcast alone in one check (3
alternations, SCHED_FIFO, a 2-core machine; a second check of 2 was within noise), so one
multi-benchmark IMB process against single-op ibt processes compares process histories,
not harnesses. Sizes: IMB's Allgather, Alltoall and Reduce_scatter_block sizes are per
rank, ibt's the whole buffer, so ibt runs those three at ranks x IMB's size; the table
shows IMB's size.

--pair cell runs every (benchmark, size) as its own pair of launches, the tools back to
back, and reports the median of each repetition's own ratio: on a shared machine the speed
of the host drifts over seconds to minutes (the same plain MPI loop read 0.44 us and then
1.0 us for an 8-byte Allgather a few minutes apart), and pairing cancels what a whole-range
run per tool cannot.

Below the table, each mode's cells outside 0.95-1.05 are split in two: those whose median
ratio's 90% sign-test interval lies outside the band as well (every repetition or nearly
every one deviates the same way: a consistent deviation), and those whose interval reaches
into it (this machine's noise, at this many repetitions, cannot tell them from agreement;
5 repetitions at least give an interval).

--realtime runs every rank of both tools at SCHED_FIFO priority 10 (each rank killed after
--rank-timeout seconds): on a machine shared with other work it keeps the ranks from being
descheduled, for both tools alike. Needs root (or CAP_SYS_NICE). Not with more ranks than
cores: a SCHED_FIFO rank that polls without yielding keeps its core from the rank it waits
for (a 4-rank IMB Sendrecv on 2 cores ran over 4 minutes); use --nice -20 there. --preload LIB is
LD_PRELOADed into every rank of both tools (e.g. the yield shim
build/scripts/libibt-ucx-yield.so when ranks outnumber cores).

usage: compare_imb.py IMB-MPI1 IBT [--ranks N] [--reps R] [--iters N] [--lo LOG2] [--hi LOG2]
                      [--modes imb,loop] [--pair run|cell] [--imb-buffers page+16|native]
                      [--preload LIB] [--realtime | --nice N] [--bind-to core] [--mpiexec CMD]
"""
import argparse
import csv
import io
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time

# ibt op -> (IMB benchmark, True when IMB's size is per rank)
OPS = {
    "ping_pong": ("PingPong", False),
    "send_recv": ("Sendrecv", False),
    "all_reduce": ("Allreduce", False),
    "broadcast": ("Bcast", False),
    "all_gather": ("Allgather", True),
    "all_to_all": ("Alltoall", True),
    "reduce_scatter": ("Reduce_scatter_block", True),
}


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("imb", help="path of an IMB-MPI1 executable")
    p.add_argument("ibt", help="path of the ibt executable")
    add_run_args(p, hi_default=26)
    p.add_argument("--modes", default="imb,loop", help="ibt timing modes to run")
    p.add_argument("--preload", help="LD_PRELOAD for every rank of both tools")
    p.add_argument("--realtime", action="store_true", help="SCHED_FIFO ranks (see above)")
    p.add_argument("--nice", type=int, help="run every rank of both tools at this nice value (e.g. -20): "
                                               "for ranks that outnumber cores, where SCHED_FIFO ranks cannot share one")
    p.add_argument("--rank-timeout", type=int, default=600, help="seconds before a --realtime or --nice rank is killed")
    p.add_argument("--mpiexec", default="mpiexec.mpich")
    p.add_argument("--imb-buffers", choices=("page+16", "native"), default="page+16",
                   help="page+16: IMB's MPI_Alloc_mem buffers 16 bytes past a page, where ibt's imb timing puts its "
                        "own (preloads the shim below); native: wherever IMB's heap puts them")
    p.add_argument("--alloc-shim", help="the shim for --imb-buffers page+16 (default: scripts/libibt-alloc-mem-offset.so "
                                         "in the ibt executable's build folder)")
    p.add_argument("--pair", choices=("run", "cell"), default="run",
                   help="run: each repetition runs each benchmark over all sizes, tool after tool; cell: each "
                        "(benchmark, size) runs as its own processes, the tools back to back, so each "
                        "repetition's ratio compares runs a second apart (slower: one launch per cell and tool)")
    a = p.parse_args()
    for path, what in ((a.imb, "IMB-MPI1"), (a.ibt, "ibt")):
        if not os.access(path, os.X_OK):
            p.error(f"{what} executable not found or not executable: {path}")
    if a.imb_buffers == "page+16":
        a.alloc_shim = os.path.abspath(a.alloc_shim or os.path.join(os.path.dirname(os.path.abspath(a.ibt)), "scripts",
                                                                    "libibt-alloc-mem-offset.so"))
        if not os.path.exists(a.alloc_shim):
            p.error(f"--imb-buffers page+16 needs the shim {a.alloc_shim} (built with ibt: target "
                    "ibt_alloc_mem_offset); pass --alloc-shim PATH or --imb-buffers native")
    check_run_args(p, a)
    a.modes = [m for m in a.modes.split(",") if m]
    if a.preload:
        a.preload = os.path.abspath(a.preload)
        if not os.path.exists(a.preload):
            p.error(f"--preload: no such file {a.preload}")
    return a


def launcher(a, preload=()):
    cmd = [a.mpiexec, "-n", str(a.ranks)]
    if a.bind_to:
        cmd += ["-bind-to", a.bind_to]
    libs = ([a.preload] if a.preload else []) + list(preload)
    if libs:
        cmd += ["-genv", "LD_PRELOAD", ":".join(libs)]
    if a.realtime:
        cmd += ["timeout", "-s", "KILL", str(a.rank_timeout), "chrt", "-f", "10"]
    elif a.nice is not None:
        cmd += ["timeout", "-s", "KILL", str(a.rank_timeout), "nice", "-n", str(a.nice)]
    return cmd


def add_run_args(p, hi_default):
    """The run's shape, alike for every comparison script: ranks, repetitions, sizes, ops."""
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("--reps", type=int, default=5, help="alternating repetitions (medians are reported)")
    p.add_argument("--iters", type=int, default=100, help="timed iterations per size, both tools")
    p.add_argument("--lo", type=int, default=3, help="smallest size, log2 bytes (IMB's size)")
    p.add_argument("--hi", type=int, default=hi_default, help="largest size, log2 bytes (IMB's size)")
    p.add_argument("--ops", default=",".join(OPS), help="ibt ops to compare")
    p.add_argument("--bind-to", help="hydra's -bind-to for both tools (e.g. core): the same placement for both, "
                                      "instead of wherever the scheduler puts unbound ranks")


def check_run_args(p, a):
    """Refuses what add_run_args took and cannot run (exit 2 naming it); a.ops becomes a list,
    without ping_pong off two ranks (IMB runs PingPong on two ranks only)."""
    for name in ("ranks", "reps", "iters"):
        if getattr(a, name) < 1:
            p.error(f"--{name} must be at least 1")
    if not 2 <= a.lo <= a.hi <= 30:
        p.error("need 2 <= --lo <= --hi <= 30 (4 B to 1 GiB)")
    a.ops = [o for o in a.ops.split(",") if o]
    for o in a.ops:
        if o not in OPS:
            p.error(f"unknown op {o} (expected some of {', '.join(OPS)})")
    if a.ranks != 2 and "ping_pong" in a.ops:
        a.ops.remove("ping_pong")
    if not a.ops:
        p.error("no op left to compare")


def ibt_collectives_args(ibt, mode, iters, op, first, last, factor, out):
    """ibt's command line for one op, timed as IMB times it: IMB's warm-up count, no check
    in the timed loop, float32, broadcast in place (IMB's Bcast has one buffer)."""
    return [ibt, "collectives", "--timing", mode, "-a", "avg", "-n", str(iters), "-w", str(warmups(iters)), "-c", "0",
            "-d", "float32", "--placement", "in" if op == "broadcast" else "out", "--scope", "world", "--op", op,
            "-b", str(first), "-e", str(last), "-f", str(factor), "--out", out]


def warmups(iters):
    """IMB's warm-up count (IMB_warm_up.c: n_sample / WARMUP_PERCENT, at least
    min(MIN_WARMUP_ITERS, n_sample))."""
    return max(iters // 10, min(10, iters))


def run_imb(a, ops, lo, hi):
    res = {}
    shim = [a.alloc_shim] if a.imb_buffers == "page+16" else []
    for op in ops:  # one process per benchmark, as for ibt (see run_ibt)
        bench = OPS[op][0]
        cmd = launcher(a, shim) + [a.imb, "-msglog", f"{lo}:{hi}", "-iter", str(a.iters), "-iter_policy", "off",
                             "-time", "100000", "-npmin", str(a.ranks), "-mem", "4", bench]
        out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
        for line in out.splitlines():
            f = line.split()
            if len(f) >= 3 and f[0].isdigit() and f[1].isdigit() and int(f[0]) > 0:
                # PingPong prints one time column; the others t_min t_max t_avg.
                res[(bench, int(f[0]))] = float(f[2] if bench == "PingPong" else f[4])
    return res


def run_ibt(a, mode, scratch, ops, lo, hi):
    res = {}
    for op in ops:  # one process per op: no op runs after another's large buffers came and went
        bench, per_rank = OPS[op]
        scale = a.ranks if per_rank else 1
        out = os.path.join(scratch, f"{mode}-{op}.h5")
        if os.path.exists(out):
            os.remove(out)
        cmd = launcher(a) + ibt_collectives_args(a.ibt, mode, a.iters, op, (1 << lo) * scale, (1 << hi) * scale, 2, out)
        subprocess.run(cmd, capture_output=True, text=True, check=True)
        table = subprocess.run([a.ibt, "export", out, "--csv"], capture_output=True, text=True, check=True).stdout
        for row in csv.DictReader(io.StringIO(table)):
            res[(bench, int(row["bytes"]) // scale)] = float(row["time_us"])
    return res


def load():
    with open("/proc/loadavg") as f:
        return f.read().split()[0]


def tool_order(a, flip):
    """IMB, then ibt's modes; reversed when flip, so neither tool always runs first."""
    order = ["IMB"] + a.modes
    return order[::-1] if flip else order


def run_tool(a, tool, scratch, ops, lo, hi):
    return run_imb(a, ops, lo, hi) if tool == "IMB" else run_ibt(a, tool, scratch, ops, lo, hi)


def progress(r, reps, start, loads):
    """One line per repetition on stderr: these runs take minutes."""
    elapsed = time.monotonic() - start
    eta = elapsed / (r + 1) * (reps - r - 1)
    print(f"rep {r + 1}/{reps} done after {elapsed:.0f} s, about {eta:.0f} s to go (load {loads[-1]})", file=sys.stderr)


def measure_by_run(a, scratch, runs, loads):
    """Each repetition runs every benchmark over the whole size range, tool after tool."""
    start = time.monotonic()
    for r in range(a.reps):
        for tool in tool_order(a, r % 2):
            loads.append(load())
            runs[tool].append(run_tool(a, tool, scratch, a.ops, a.lo, a.hi))
        progress(r, a.reps, start, loads)


def measure_by_cell(a, scratch, runs, loads):
    """Each repetition runs every (benchmark, size) cell as its own processes, the tools back to
    back, so a ratio compares runs made within about a second of each other."""
    cells = [(op, lg) for op in a.ops for lg in range(a.lo, a.hi + 1)]
    start = time.monotonic()
    for r in range(a.reps):
        merged = {tool: {} for tool in runs}
        for c, (op, lg) in enumerate(cells):
            for tool in tool_order(a, (r + c) % 2):  # alternating per cell and per repetition
                merged[tool] |= run_tool(a, tool, scratch, [op], lg, lg)
        for tool in runs:
            runs[tool].append(merged[tool])
        loads.append(load())
        progress(r, a.reps, start, loads)


# The agreement the issue asks for: ibt's time over IMB's, per cell.
BAND = (0.95, 1.05)
# Confidence of the interval that tells a cell's real deviation from this machine's noise.
MEDIAN_CONFIDENCE = 0.90


def median_interval(values, confidence=MEDIAN_CONFIDENCE):
    """A distribution-free interval for the median of `values`: the k-th smallest to the k-th
    largest, with the largest k whose chance of missing the median, 2 P(Binomial(n, 1/2) < k),
    is at most 1 - confidence (the sign test's interval; no assumption about the noise's
    shape). None when there are too few values (n < 5 at 90%)."""
    v = sorted(values)
    n = len(v)
    below, k = 0.0, 0
    for j in range(n // 2 + 1):
        below += math.comb(n, j) / 2 ** n  # P(B <= j)
        if 2 * below > 1 - confidence:
            break
        k = j + 1
    return (v[k - 1], v[n - k]) if k else None


def outside(ratios_by_cell, band=BAND):
    """(median ratio, cell, that cell's per-repetition ratios) of the cells outside the band."""
    return [(ratio, k, q) for k, (ratio, q) in ratios_by_cell.items() if not band[0] <= ratio <= band[1]]


def verdicts(ratios_by_cell, band=BAND):
    """Cells outside the band by their median ratio, split into those whose whole median
    interval lies outside (a consistent deviation) and those whose interval reaches into the
    band (not told apart from the noise with this many repetitions)."""
    lo, hi = band
    consistent, unresolved = [], []
    for ratio, k, q in outside(ratios_by_cell, band):
        iv = median_interval(q)
        (consistent if iv and (iv[0] > hi or iv[1] < lo) else unresolved).append((ratio, k, iv))
    return consistent, unresolved


def main():
    a = parse_args()
    runs = {"IMB": []} | {m: [] for m in a.modes}
    loads = [load()]
    with tempfile.TemporaryDirectory(prefix="compare_imb.") as scratch:
        (measure_by_cell if a.pair == "cell" else measure_by_run)(a, scratch, runs, loads)
    order = [OPS[o][0] for o in OPS]
    keys = sorted(set.intersection(*(set(v[0]) for v in runs.values())), key=lambda k: (order.index(k[0]), k[1]))

    def values(tool, k):
        return [x[k] for x in runs[tool] if k in x]

    def spread(v):
        """A range as a share of its median: the noise a figure sits in."""
        return (max(v) - min(v)) / statistics.median(v) * 100

    def paired(m, k):
        """Each repetition's own ratio (the two tools' runs of that repetition side by side)."""
        return [x[k] / y[k] for x, y in zip(runs[m], runs["IMB"]) if k in x and k in y]

    print(f"{a.ranks} ranks, {a.iters} iterations, medians of {a.reps} alternating repetitions paired by {a.pair}; "
          f"IMB buffers {a.imb_buffers}; realtime {'on' if a.realtime else 'off'}; nice {a.nice if a.nice is not None else 'unchanged'}; preload {a.preload or 'none'}; bind-to {a.bind_to or 'none'}; "
          f"load average {min(loads)}-{max(loads)}\n")
    print("Each time is the median of the repetitions; (r%) is their range (max - min) over that median. "
          "The ratio is the median of the repetitions' own ratios (each repetition's ibt time over its IMB time); "
          "(r%) beside it is those ratios' range.\n")
    head = "| IMB benchmark | bytes (IMB) | IMB t_avg us (r%) |" + "".join(f" ibt {m} us (r%) | {m}/IMB (r%) |" for m in a.modes)
    print(head)
    print("|---|---:|---:|" + "---:|---:|" * len(a.modes))
    by_cell = {m: {} for m in a.modes}  # cell -> (median ratio, per-repetition ratios)
    for k in keys:
        ref = values("IMB", k)
        cells = ""
        for m in a.modes:
            t, q = values(m, k), paired(m, k)
            ratio = statistics.median(q)
            by_cell[m][k] = (ratio, q)
            cells += f" {statistics.median(t):.2f} ({spread(t):.0f}) | {ratio:.3f} ({spread(q):.0f}) |"
        print(f"| {k[0]} | {k[1]} | {statistics.median(ref):.2f} ({spread(ref):.0f}) |{cells}")
    for m in a.modes:
        out = outside(by_cell[m])
        rs = sorted(r for r, _ in by_cell[m].values())
        print(f"\n{m}: {len(rs) - len(out)}/{len(rs)} within {BAND[0]}-{BAND[1]}; median ratio "
              f"{statistics.median(rs):.3f}, range {rs[0]:.3f}-{rs[-1]:.3f}" +
              ("; outside: " + ", ".join(f"{k[0]} {k[1]}: {r:.3f}" for r, k, _ in out) if out else ""))
        if out:
            consistent, unresolved = verdicts(by_cell[m])
            fmt = lambda cs: ", ".join(f"{k[0]} {k[1]}: {r:.3f} [{iv[0]:.3f}-{iv[1]:.3f}]" if iv else
                                       f"{k[0]} {k[1]}: {r:.3f} [too few repetitions]" for r, k, iv in cs)
            print(f"{m}: of those {len(out)}, {len(consistent)} lie outside the band by their whole "
                  f"{MEDIAN_CONFIDENCE:.0%} median interval (sign test){': ' + fmt(consistent) if consistent else ''}; "
                  f"{len(unresolved)} are not told apart from this machine's noise with {a.reps} repetitions"
                  f"{': ' + fmt(unresolved) if unresolved else ''}")


if __name__ == "__main__":
    main()
