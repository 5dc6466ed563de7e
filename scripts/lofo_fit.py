#!/usr/bin/env python3
"""Fits the one fitted constant of ibt's projection -- each device generation's GEMM
efficiency (model.gemm_efficiency of its catalog topologies) -- on the published runs,
and prints leave-one-family-out (LOFO) error: every family's error at the value fitted
on the other families' rows of its generation (the catalog's stated value when no other
family covers the generation).

Input: per grid value eta, a file of "family topology model gpus error" lines written by
scripts/validate_published.sh --errors with every topology's gemm_efficiency set to eta.
A row's error between grid values is interpolated linearly in eta (a projection's
throughput is smooth and monotone in it). Fit: the eta on a 0.005 grid with the least
median |error| over the rows it is fitted on.

    scripts/lofo_fit.py --catalog topologies/catalog 0.5=FILE 0.6=FILE ...
Called by scripts/validate_published.sh --lofo.
"""
import json
import os
import statistics
import sys

# Device generation of each catalog topology that published runs cover: one GEMM
# efficiency per silicon (H800 is the H100 die with fewer NVLink lanes; GB200 and B200
# share the Blackwell die).
GENERATION = {
    "dgx-a100": "A100", "dgx-h100": "H100/H800", "dgx-h800": "H100/H800",
    "dgx-b200": "B200/GB200", "gb200-nvl72": "B200/GB200", "tpu-v5p": "TPU v5p",
}


# The GEMM efficiency ibt stated before anything was fitted (topologies/README.md,
# "Efficiency model": 0.6 of peak on Hopper, Blackwell and TPU, 0.72 on A100): a family
# whose generation no other family covers is checked at it, the only value not fitted
# on its own rows.
PRIOR = {"A100": 0.72, "H100/H800": 0.6, "B200/GB200": 0.6, "TPU v5p": 0.6}


def usage(msg):
    sys.stderr.write("lofo_fit.py: " + msg + "\n")
    sys.exit(2)


def load(argv):
    catalog, grids = None, []
    it = iter(argv)
    for a in it:
        if a == "--catalog":
            catalog = next(it, None)
        elif "=" in a:
            eta, path = a.split("=", 1)
            grids.append((float(eta), path))
        else:
            usage("unknown argument " + a)
    if not catalog or len(grids) < 2:
        usage("needs --catalog DIR and at least two ETA=FILE grid files")
    grids.sort()
    per_grid = []  # per grid eta: the rows in CSV order, (family, topology, model, gpus, error or None)
    for _, path in grids:
        with open(path) as f:
            per_grid.append([(fam, topo, model, gpus, None if err == "NA" else float(err))
                             for fam, topo, model, gpus, err in (line.split() for line in f if line.strip())])
    return catalog, [g for g, _ in grids], per_grid


def main():
    catalog, etas, per_grid = load(sys.argv[1:])
    n = len(per_grid[0])
    if any(len(g) != n for g in per_grid):
        usage("the grid files hold different numbers of rows")
    rows = []
    for r in range(n):
        fam, topo, model, gpus, _ = per_grid[0][r]
        errs = [per_grid[i][r][4] for i in range(len(etas))]
        if any(e is None for e in errs):
            continue
        rows.append({"family": fam, "topology": topo, "errs": errs, "gen": GENERATION.get(topo, topo)})

    def err_at(row, eta):
        # (1 + error) is the projected / published ratio; interpolate it in eta, clamp at the ends.
        e, g = row["errs"], etas
        if eta <= g[0]:
            j = 0
        elif eta >= g[-1]:
            j = len(g) - 2
        else:
            j = max(k for k in range(len(g) - 1) if g[k] <= eta)
        t = (eta - g[j]) / (g[j + 1] - g[j])
        return e[j] + t * (e[j + 1] - e[j])

    fine = [round(etas[0] + 0.005 * k, 3) for k in range(int(round((etas[-1] - etas[0]) / 0.005)) + 1)]

    def fit(subset):
        return min(fine, key=lambda eta: (statistics.median(abs(err_at(r, eta)) for r in subset), eta))

    stated = {}
    for topo, gen in GENERATION.items():
        path = os.path.join(catalog, topo + ".json")
        with open(path) as f:
            stated.setdefault(gen, json.load(f)["model"]["gemm_efficiency"]["value"])
    stated = {g: stated[g] for g in stated}

    gens = sorted({r["gen"] for r in rows})
    print("fitted constant: GEMM efficiency per device generation (least median |error| over its rows)")
    print(f"  {'generation':12s} {'rows':>4s} {'families':>8s} {'prior':>6s} {'catalog':>8s} {'fit on all':>10s}")
    fitted = {}
    for g in gens:
        sub = [r for r in rows if r["gen"] == g]
        fitted[g] = fit(sub)
        print(f"  {g:12s} {len(sub):4d} {len({r['family'] for r in sub}):8d} {PRIOR.get(g, float('nan')):6.3f} "
              f"{stated.get(g, float('nan')):8.3f} {fitted[g]:10.3f}")
    print()
    print("leave-one-family-out: each family's error at the efficiency fitted on the other families of")
    print("its generation (the prior, unfitted value where no other family covers it)")
    print(f"  {'family':20s} {'gen':11s} {'rows':>4s} {'eta':>6s}  {'median |error|':>14s} {'signed mean':>11s}  {'in-sample signed mean':>21s}")
    lofo_abs, insample_abs = [], []
    for fam in sorted({r["family"] for r in rows}):
        sub = [r for r in rows if r["family"] == fam]
        g = sub[0]["gen"]
        others = [r for r in rows if r["gen"] == g and r["family"] != fam]
        eta = fit(others) if others else PRIOR[g]
        errs = [err_at(r, eta) for r in sub]
        ins = [err_at(r, fitted[g]) for r in sub]
        lofo_abs += [abs(e) for e in errs]
        insample_abs += [abs(e) for e in ins]
        note = "" if others else "  (no other family: prior value)"
        print(f"  {fam:20s} {g:11s} {len(sub):4d} {eta:6.3f}  {100 * statistics.median(abs(e) for e in errs):13.1f}% "
              f"{100 * statistics.mean(errs):+10.1f}%  {100 * statistics.mean(ins):+20.1f}%{note}")
    print(f"overall: LOFO median |error| {100 * statistics.median(lofo_abs):.1f}% "
          f"(in-sample at the fitted values {100 * statistics.median(insample_abs):.1f}%), {len(lofo_abs)} rows")
    return 0


if __name__ == "__main__":
    sys.exit(main())
