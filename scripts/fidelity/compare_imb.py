#!/usr/bin/env python3
"""Side by side on one machine: IMB-MPI1 against `ibt collectives --timing imb`, in
alternating repetitions; prints the median t_avg of each and their ratio per benchmark and
size (8 B .. 2^HI B, HI=26 by default) as a Markdown table.

IMB is not part of ibt: build IMB-MPI1 from its public source yourself (outside this tree)
and pass its path in IMB. IMB's sizes for Allgather, Alltoall and Reduce_scatter are per
rank; ibt's are the whole buffer, so ibt runs those at RANKS x IMB's size.

usage: IMB=/path/to/IMB-MPI1 compare_imb.py IBT RANKS REPS ITERS [VAR=VALUE ...]
       (VAR=VALUE pairs go to every rank, e.g. LD_PRELOAD=build/scripts/libibt-ucx-yield.so)"""
import os, re, subprocess, sys, statistics
ibt, ranks, reps, iters = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
extra = sys.argv[5:]
imb = os.environ.get("IMB")
if not imb or not os.access(imb, os.X_OK):
    sys.exit("compare_imb.py: set IMB to an IMB-MPI1 executable")
env_args = []
for e in extra:
    k, v = e.split("=", 1); env_args += ["-genv", k, v]
mpi = ["mpiexec.mpich", "-n", str(ranks)] + env_args
# ibt op -> (IMB benchmark, size scale: ibt bytes = IMB bytes * scale)
ops = {"ping_pong": ("PingPong", 1), "send_recv": ("Sendrecv", 1), "all_reduce": ("Allreduce", 1),
       "broadcast": ("Bcast", 1), "all_gather": ("Allgather", ranks), "all_to_all": ("Alltoall", ranks),
       "reduce_scatter": ("Reduce_scatter", ranks)}
if ranks != 2: ops.pop("ping_pong")
lo, hi = 3, int(os.environ.get("HI", "26"))
def run_imb():
    out = subprocess.run(mpi + [imb, "-msglog", f"{lo}:{hi}", "-iter", str(iters), "-iter_policy", "off",
                                "-time", "600", "-npmin", str(ranks), "-mem", "4"] + [v[0] for v in ops.values()],
                         capture_output=True, text=True, check=True).stdout
    res, bench = {}, None
    for line in out.splitlines():
        m = re.match(r"# Benchmarking (\S+)", line)
        if m: bench = m.group(1); continue
        f = line.split()
        if bench and len(f) >= 3 and f[0].isdigit() and f[1].isdigit():
            b = int(f[0])
            if b == 0: continue
            t = float(f[2]) if bench == "PingPong" else float(f[4])  # t, or t_avg
            res[(bench, b)] = t
    return res
def run_ibt():
    res = {}
    for group, scale, placement in (("ping_pong,send_recv,all_reduce", 1, "out"), ("broadcast", 1, "in"),
                                    ("all_gather,all_to_all,reduce_scatter", ranks, "out")):
        group = ",".join(o for o in group.split(",") if o in ops)
        cmd = mpi + [ibt, "collectives", "--timing", "imb", "-a", "avg", "-n", str(iters), "-w", str(max(10, iters // 10)),
                     "-c", "0", "--placement", placement, "--scope", "world", "--op", group,
                     "-b", str((1 << lo) * scale), "-e", str((1 << hi) * scale)]
        out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
        for line in out.splitlines():
            f = line.split()
            if len(f) > 8 and f[0] in ops and f[3].isdigit():
                t = f[8] if f[7] == "n/a" else f[7]  # broadcast is in-place only
                res[(ops[f[0]][0], int(f[3]) // ops[f[0]][1])] = float(t)
    return res
imb_runs, ibt_runs = [], []
for r in range(reps):
    imb_runs.append(run_imb()); ibt_runs.append(run_ibt())
    print(f"rep {r+1}/{reps} done", file=sys.stderr)
keys = sorted(set(imb_runs[0]) & set(ibt_runs[0]), key=lambda k: (list(v[0] for v in ops.values()).index(k[0]), k[1]))
print(f"| IMB benchmark | bytes (IMB) | IMB t_avg us (median of {reps}) | ibt imb us | ibt/IMB |")
print("|---|---:|---:|---:|---:|")
worst = []
for k in keys:
    a = statistics.median(x[k] for x in imb_runs if k in x); b = statistics.median(x[k] for x in ibt_runs if k in x)
    worst.append((b / a, k))
    print(f"| {k[0]} | {k[1]} | {a:.2f} | {b:.2f} | {b/a:.3f} |")
out = [w for w in worst if not 0.95 <= w[0] <= 1.05]
print(f"\n{len(worst)-len(out)}/{len(worst)} within 0.95-1.05; outside: " + ", ".join(f"{k[0]} {k[1]}: {r:.3f}" for r, k in out))
