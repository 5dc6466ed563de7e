#!/usr/bin/env python3
"""The summary of scripts/validate_published.sh: out-of-sample error first.

ibt's projection has one constant fitted to published runs -- each device generation's
large-GEMM efficiency (catalog model.gemm_efficiency, source ibt-gemm-fit). Everything
else is a catalog figure with its source or an assumption stated before any row was seen.
This script

1. fits that constant per generation on all rows (in-sample, what the catalog ships) and
   with each family left out (leave-one-family-out, LOFO): a family's LOFO error is its
   error at the value fitted on the *other* families of its generation, or at the prior
   (the value ibt stated before anything was fitted) when no other family covers the
   generation. The LOFO median |MFU error| is the headline; in-sample sits beside it.
2. builds the uncertainty band `ibt project` prints (topologies/validation/bands.json)
   from LOFO residuals -- never from in-sample ones -- at a stated coverage (80%): the
   band of a topology is the split-conformal interval (Lei, G'Sell, Rinaldo, Tibshirani
   and Wasserman, "Distribution-free predictive inference for regression", JASA 113(523),
   2018, section 2.2: with n residuals, the floor((n+1) a/2)-th and ceil((n+1)(1-a/2))-th
   order statistics) of the LOFO errors of the narrowest scope that has enough of them:
   the topology's own rows, else its device generation's, else the whole set. A scope
   needs at least MIN_ROWS rows (the least n for which an 80% two-sided conformal interval
   is finite: (n+1) x 0.1 >= 1) from at least MIN_FAMILIES families (a band that is one
   family's systematic error is that family's, not the system's). A topology with no row
   of its own says so and gets the band of its generation or of the whole set.
3. reports the coverage that rule achieves on held-out families: each family's rows
   (their LOFO errors) against the band built, by the same rule, from the other families
   alone (their errors at values fitted without the held-out family either).

A row's error at a GEMM efficiency between the grid's values is interpolated: the ratio
published / projected is close to linear in 1 / efficiency (compute time scales with it,
exposed communication and bubbles do not), so it is interpolated linearly in 1 / eta.

Inputs: the rows file of validate_published.sh (one tab-separated line per CSV row, at the
catalog's values) and, per grid value eta, a file of one error per row (same order, NA
where not projected) with every topology's gemm_efficiency set to eta.

    scripts/lofo_fit.py --catalog DIR --rows FILE ETA=FILE ... [--bands OUT] [--check]
Called by scripts/validate_published.sh.
"""
import json
import math
import os
import statistics
import sys

# Device generation of every catalog topology: one GEMM efficiency per silicon (H800 and
# H200 are the GH100 die of the H100 with fewer NVLink lanes or more HBM; GB200 and B200
# share the Blackwell die; a multi-slice v5p is v5p chips). A topology not listed (a
# calibrated one, a user's file) has no generation and gets the whole set's band.
GENERATION = {
    "dgx-a100": "A100",
    "dgx-h100": "Hopper", "dgx-h800": "Hopper", "dgx-h200": "Hopper",
    "dgx-b200": "Blackwell", "gb200-nvl72": "Blackwell",
    "tpu-v5p": "TPU v5p", "tpu-v5p-multislice": "TPU v5p",
    "tpu-v4": "TPU v4", "tpu-v3": "TPU v3",
    "dgx1-v100": "V100", "dgx2-v100": "V100",
    "local-cpu": "CPU",
}

# The GEMM efficiency ibt stated before anything was fitted (docs/validation.md,
# "Efficiency model": 0.6 of peak on Hopper, Blackwell and TPU, 0.72 on A100): a family
# whose generation no other family covers is checked at it, the only value not fitted on
# its own rows; and a generation with rows of one family only ships it (a constant that
# only one family fits is never validated out of family).
PRIOR = {"A100": 0.72, "Hopper": 0.6, "Blackwell": 0.6, "TPU v5p": 0.6}

COVERAGE = 0.8       # the stated coverage of the printed band
MIN_ROWS = 9         # (n + 1) * (1 - COVERAGE) / 2 >= 1: the conformal interval is finite
MIN_FAMILIES = 2


def usage(msg):
    sys.stderr.write("lofo_fit.py: " + msg + "\n")
    sys.exit(2)


def median(xs):
    return statistics.median(xs) if xs else float("nan")


def pct(x):
    return "   -  " if x is None or math.isnan(x) else f"{100 * x:+5.1f}%"


def apct(x):
    return "  -  " if x is None or math.isnan(x) else f"{100 * x:4.1f}%"


ROW_FIELDS = ["family", "model", "topology", "gpus", "split", "recompute", "fits", "metric", "published",
              "projected", "mfu", "error", "memory", "stacked"]

# The software stack of each family: the code that ran, whatever its version or hardware
# (a family is one stack's era on one generation). Leave-one-stack-out holds out a stack
# on a generation as a whole -- every family of it -- which LOFO never does: LOFO keeps the
# other eras of the same software on the same hardware. A family not listed is refused.
MEGATRON = "NVIDIA Megatron (Megatron-LM, NeMo, Megatron-Bridge)"
STACK = {
    "megatron": MEGATRON,
    "nemo": MEGATRON,
    "mbridge": MEGATRON,
    "nemo2502": MEGATRON,
    "nemo2504": MEGATRON,
    "deepspeed": "Megatron-DeepSpeed",
    "llama3": "Meta's Llama 3 stack",
    "deepseek": "DeepSeek HAI-LLM",
    "maxtext": "MaxText (JAX)",
    "torchtitan": "torchtitan (PyTorch-native)",
    "fsdp": "PyTorch FSDP",
}


def stack_of(family):
    """The stack of a family named generation-stack-era (h100-mbridge-fp8, tpu-v5p-maxtext)."""
    for key in family.split("-"):
        if key in STACK:
            return STACK[key]
    usage(f"family '{family}': no word of it names a stack of lofo_fit.py's STACK table (add it)")


def load(argv):
    catalog, rows_path, bands_out, check, grids, exceptions = None, None, None, False, [], None
    it = iter(argv)
    for a in it:
        if a == "--exceptions":
            exceptions = next(it, None)
        elif a == "--catalog":
            catalog = next(it, None)
        elif a == "--rows":
            rows_path = next(it, None)
        elif a == "--bands":
            bands_out = next(it, None)
        elif a == "--check":
            check = True
        elif "=" in a:
            eta, path = a.split("=", 1)
            grids.append((float(eta), path))
        else:
            usage("unknown argument " + a)
    if not catalog or not rows_path:
        usage("needs --catalog DIR and --rows FILE")
    grids.sort()
    with open(rows_path) as f:
        rows = [dict(zip(ROW_FIELDS, line.rstrip("\n").split("\t"))) for line in f if line.strip()]
    for r in rows:
        r["error"] = None if r["error"] == "NA" else float(r["error"])
        r["gen"] = GENERATION.get(r["topology"], r["topology"])
        r["stack"] = stack_of(r["family"])
        r["stacked"] = r.get("stacked") == "1"
        r["errs"] = []
    for _, path in grids:
        with open(path) as f:
            errs = [line.strip() for line in f if line.strip()]
        if len(errs) != len(rows):
            usage(f"{path} holds {len(errs)} errors for {len(rows)} rows")
        for r, e in zip(rows, errs):
            r["errs"].append(None if e == "NA" else float(e))
    cited = {}
    if exceptions and os.path.exists(exceptions):
        import csv
        with open(exceptions) as f:
            for e in csv.DictReader(line for line in f if not line.startswith("#")):
                cited[(e["family"], e["model"], e["topology"], e["gpus"])] = e["reason"]
    for r in rows:
        r["reason"] = cited.get((r["family"], r["model"], r["topology"], r["gpus"]))
    return catalog, rows, [g for g, _ in grids], bands_out, check


class Fitter:
    def __init__(self, etas):
        self.etas = etas
        lo, hi = etas[0], etas[-1]
        self.fine = [round(lo + 0.005 * k, 3) for k in range(int(round((hi - lo) / 0.005)) + 1)]

    def err_at(self, row, eta):
        # published / projected = 1 / (1 + error), linear in 1 / eta between grid values.
        g, e = self.etas, row["errs"]
        j = 0 if eta <= g[0] else len(g) - 2 if eta >= g[-1] else max(k for k in range(len(g) - 1) if g[k] <= eta)
        t = (1 / eta - 1 / g[j]) / (1 / g[j + 1] - 1 / g[j])
        ratio = 1 / (1 + e[j]) + t * (1 / (1 + e[j + 1]) - 1 / (1 + e[j]))
        return 1 / ratio - 1

    def fit(self, subset):
        """The least-median-|error| efficiency on `subset`, NaN when none of it fits: rows priced
        with --stack take no fitted efficiency (their error is the same at every grid value),
        so they neither fit the constant nor move it."""
        subset = [r for r in subset if not r["stacked"]]
        if not subset:
            return float("nan")
        return min(self.fine, key=lambda eta: (median([abs(self.err_at(r, eta)) for r in subset]), eta))

    def value_fitted_without(self, rows, gen, held_out):
        """The efficiency of `gen` fitted on its rows that `held_out(row)` does not hold out, or
        the prior when none of them fits (then also 'prior')."""
        eta = self.fit([r for r in rows if r["gen"] == gen and not held_out(r)])
        return (eta, "fit") if not math.isnan(eta) else (PRIOR.get(gen, float("nan")), "prior")

    def value_without(self, rows, gen, left_out):
        """LOFO: the efficiency of `gen` fitted without the families `left_out`, or the prior."""
        return self.value_fitted_without(rows, gen, lambda r: r["family"] in left_out)

    def value_without_stack(self, rows, gen, stack):
        """LOSO: the efficiency of `gen` fitted without every family of `stack`, or the prior."""
        return self.value_fitted_without(rows, gen, lambda r: r["stack"] == stack)


def conformal(errors, coverage=COVERAGE):
    """Split-conformal two-sided interval of the signed errors (Lei et al. 2018)."""
    s = sorted(errors)
    n = len(s)
    a = (1 - coverage) / 2
    # Rounded so that (n + 1) * a lands on whole numbers where it should (10 x 0.1 = 1).
    lo_k, hi_k = math.floor(round((n + 1) * a, 9)), math.ceil(round((n + 1) * (1 - a), 9))
    lo = s[lo_k - 1] if lo_k >= 1 else -math.inf
    hi = s[hi_k - 1] if hi_k <= n else math.inf
    return lo, hi


def scope_of(topology, pool):
    """The scope whose residuals give `topology`'s band: (kind, name, residual rows)."""
    def enough(rs):
        return len(rs) >= MIN_ROWS and len({r["family"] for r in rs}) >= MIN_FAMILIES
    own = [r for r in pool if r["topology"] == topology]
    if enough(own):
        return "topology", topology, own
    gen = GENERATION.get(topology)
    if gen is not None:
        same = [r for r in pool if r["gen"] == gen]
        if enough(same):
            return "generation", gen, same
    return "all", "all", pool


def band_of(rs, key):
    errs = [r[key] for r in rs]
    if not errs:
        return {"rows": 0, "families": [], "low": -math.inf, "high": math.inf, "median_abs": float("nan"),
                "signed_mean": float("nan")}
    lo, hi = conformal(errs)
    return {"rows": len(rs), "families": sorted({r["family"] for r in rs}), "low": lo, "high": hi,
            "median_abs": median([abs(e) for e in errs]), "signed_mean": statistics.mean(errs)}


def main():
    catalog, rows, etas, bands_out, check = load(sys.argv[1:])
    if len(etas) < 2:
        usage("needs at least two ETA=FILE grid files")
    F = Fitter(etas)
    priced = [r for r in rows if r["error"] is not None and all(e is not None for e in r["errs"])]
    families = sorted({r["family"] for r in priced})
    gens = sorted({r["gen"] for r in priced})

    # Catalog values (what ibt ships) per generation.
    shipped = {}
    for name in sorted(os.listdir(catalog)):
        if name.endswith(".json"):
            with open(os.path.join(catalog, name)) as f:
                t = json.load(f)
            g = GENERATION.get(t["name"])
            ge = t["model"]["gemm_efficiency"]
            if g is not None:
                shipped.setdefault(g, set()).add((ge["value"], ge.get("source", "")))

    fit_all = {g: F.fit([r for r in priced if r["gen"] == g]) for g in gens}
    # LOFO: each family at the value fitted without it.
    lofo_eta, lofo_how = {}, {}
    for fam in families:
        g = next(r["gen"] for r in priced if r["family"] == fam)
        lofo_eta[fam], lofo_how[fam] = F.value_without(priced, g, {fam})
    for r in priced:
        r["lofo"] = F.err_at(r, lofo_eta[r["family"]])
    # LOSO: each stack on a generation at the value fitted on the generation's other stacks
    # (the prior where it has none); a row priced with --stack has nothing fitted to hold out.
    stacks_on_gens = sorted({(r["stack"], r["gen"]) for r in priced})
    loso_eta = {key: F.value_without_stack(priced, key[1], key[0]) for key in stacks_on_gens}
    for r in priced:
        r["loso"] = r["error"] if r["stacked"] else F.err_at(r, loso_eta[(r["stack"], r["gen"])][0])

    # ---- per row ---------------------------------------------------------------------------
    print(f"{'family':20s} {'model':16s} {'topology':11s} {'gpus':>5s} {'split':26s} {'recompute':10s} "
          f"{'published':>10s} {'projected':>10s} {'MFU':>6s} {'in-sample':>9s} {'LOFO':>7s}")
    for r in rows:
        fit_note = "" if r["fits"] == "1" else "  DOES NOT FIT (" + r["memory"] + (
            "; cited reason in memory-exceptions.csv)" if r["reason"] else "; NO cited reason)")
        if r["error"] is None:
            print(f"{r['family']:20s} {r['model']:16s} {r['topology']:11s} {r['gpus']:>5s} {r['split']:26s} "
                  f"{'-':10s} {r['published']:>10s} {'not priced':>10s}{fit_note}")
            continue
        lofo = r.get("lofo")
        print(f"{r['family']:20s} {r['model']:16s} {r['topology']:11s} {r['gpus']:>5s} {r['split']:26s} "
              f"{r['recompute']:10s} {r['published']:>10s} {r['projected']:>10s} {r['mfu']:>5s}% "
              f"{pct(r['error']):>9s} {pct(lofo):>7s}{fit_note}")

    # ---- headline --------------------------------------------------------------------------
    lofo_abs = [abs(r["lofo"]) for r in priced]
    ins_abs = [abs(r["error"]) for r in priced]
    print()
    print(f"OUT OF FAMILY (leave-one-family-out): median |MFU error| {100 * median(lofo_abs):.1f}% over "
          f"{len(priced)} rows of {len(families)} families")
    print(f"in-sample (the catalog's fitted values, fitted on these same rows): median |MFU error| "
          f"{100 * median(ins_abs):.1f}%")
    loso_abs = [abs(r["loso"]) for r in priced]
    print(f"OUT OF STACK (leave-one-stack-out: a stack on a generation held out as a whole, every era of it): "
          f"median |MFU error| {100 * median(loso_abs):.1f}% over {len(priced)} rows of {len(stacks_on_gens)} "
          f"stacks-on-generations; signed median {pct(median([r['loso'] for r in priced])).strip()}")
    nofit = [r for r in rows if r["fits"] != "1"]
    print(f"published runs whose split does not fit ibt's memory plan at the recompute they used (auto: at any): "
          f"{len(nofit)}, {sum(1 for r in nofit if not r['reason'])} of them without a cited reason "
          f"(topologies/validation/memory-exceptions.csv)")
    for r in nofit:
        print(f"  {r['family']} {r['model']} {r['gpus']}: {r['memory']}; "
              + (r["reason"][:160] + "..." if r["reason"] else "NO cited reason"))

    # ---- per family ------------------------------------------------------------------------
    print()
    print("per family (error = projected / published - 1; LOFO: at the GEMM efficiency fitted without the family)")
    print(f"  {'family':20s} {'generation':10s} {'rows':>4s} {'LOFO eta':>9s}  {'LOFO |err|':>10s} {'LOFO mean':>9s}"
          f"  {'in-sample |err|':>15s} {'mean':>7s}")
    fam_stats = {}
    for fam in families:
        sub = [r for r in priced if r["family"] == fam]
        lo = [r["lofo"] for r in sub]
        ins = [r["error"] for r in sub]
        fam_stats[fam] = {"rows": len(sub), "lofo_median_abs": median([abs(e) for e in lo]),
                          "lofo_mean": statistics.mean(lo), "median_abs": median([abs(e) for e in ins]),
                          "mean": statistics.mean(ins)}
        s = fam_stats[fam]
        how = "" if lofo_how[fam] == "fit" else " (prior: no other family of its generation)"
        print(f"  {fam:20s} {sub[0]['gen']:10s} {len(sub):4d} {lofo_eta[fam]:9.3f}  {apct(s['lofo_median_abs']):>10s} "
              f"{pct(s['lofo_mean']):>9s}  {apct(s['median_abs']):>15s} {pct(s['mean']):>7s}{how}")

    print()
    print("per stack on a generation (LOSO: at the GEMM efficiency fitted on the generation's OTHER stacks; rows priced")
    print("with --stack take the stack file's cited figures, nothing fitted)")
    print(f"  {'stack':52s} {'generation':10s} {'rows':>4s} {'LOSO eta':>9s}  {'LOSO |err|':>10s} {'LOSO mean':>9s}")
    for key in stacks_on_gens:
        sub = [r for r in priced if (r["stack"], r["gen"]) == key]
        eta, how = loso_eta[key]
        lo = [r["loso"] for r in sub]
        stacked = sum(r["stacked"] for r in sub)
        eta_txt = "stack" if stacked == len(sub) else f"{eta:9.3f}"
        note = "" if how == "fit" or stacked == len(sub) else " (prior: no other stack on its generation)"
        print(f"  {key[0][:52]:52s} {key[1]:10s} {len(sub):4d} {eta_txt:>9s}  {apct(median([abs(e) for e in lo])):>10s} "
              f"{pct(statistics.mean(lo)):>9s}{note}")

    # ---- fitted constants ------------------------------------------------------------------
    print()
    print("fitted constants (the only ones fitted to these rows; every other catalog figure is cited or a stated")
    print("assumption): model.gemm_efficiency per device generation, least median |error| over the rows below")
    print(f"  {'generation':10s} {'rows':>4s} {'families':40s} {'prior':>6s} {'fit on all':>10s} {'catalog':>8s}")
    mismatch = []
    for g in gens:
        sub = [r for r in priced if r["gen"] == g]
        fams = sorted({r["family"] for r in sub})
        ship = shipped.get(g, set())
        ship_txt = ",".join(f"{v:.3f}" for v, _ in sorted(ship))
        expect = fit_all[g] if len(fams) >= 2 else PRIOR.get(g)
        if expect is not None and any(abs(v - expect) > 0.0051 for v, _ in ship):
            mismatch.append(g)
        note = "" if len(fams) >= 2 else "  (one family: the catalog ships the prior, the fit is not used)"
        print(f"  {g:10s} {len(sub):4d} {'+'.join(fams)[:40]:40s} {PRIOR.get(g, float('nan')):6.3f} "
              f"{fit_all[g]:10.3f} {ship_txt:>8s}{note}")
    # The interpolation between grid values, checked where an exact projection exists: each
    # row at its catalog value, interpolated from the grid against the catalog pass.
    diffs = [abs(F.err_at(r, next(iter(shipped[r["gen"]]))[0]) - r["error"]) for r in priced
             if len(shipped.get(r["gen"], ())) == 1]
    if diffs:
        print(f"  interpolation check: at the catalog values the grid interpolation is within "
              f"{100 * max(diffs):.2f} points of the exact projection (median {100 * median(diffs):.2f}), "
              f"{len(diffs)} rows")
    for g in mismatch:
        print(f"  NOTE: the catalog's {g} value is not what these rows fit: refit the catalog "
              f"(docs/validation.md)")

    # ---- bands -----------------------------------------------------------------------------
    # Held-out coverage: family F against the band of the others' errors at values fitted
    # without F as well as without themselves.
    covered_rows, total_rows, cover = 0, 0, {}
    for fam in families:
        pool = []
        for r in priced:
            if r["family"] == fam:
                continue
            eta, _ = F.value_without(priced, r["gen"], {fam, r["family"]})
            pool.append(dict(r, held=F.err_at(r, eta)))
        inside = 0
        sub = [r for r in priced if r["family"] == fam]
        scopes = set()
        if not pool:  # no other family: nothing to build a band from
            continue
        for r in sub:
            kind, name, rs = scope_of(r["topology"], pool)
            b = band_of(rs, "held")
            scopes.add(name if kind != "all" else "all")
            inside += b["low"] <= r["lofo"] <= b["high"]
        cover[fam] = (inside, len(sub), sorted(scopes))
        covered_rows += inside
        total_rows += len(sub)
    coverage = covered_rows / total_rows if total_rows else float("nan")
    fam_cov = statistics.mean(c[0] / c[1] for c in cover.values()) if cover else float("nan")
    if not total_rows:
        coverage = float("nan")

    print()
    print(f"uncertainty bands: {100 * COVERAGE:.0f}% split-conformal intervals of the LOFO errors of the topology's rows")
    print(f"  (>= {MIN_ROWS} rows of >= {MIN_FAMILIES} families), else its generation's, else the whole set's:")
    topo_names = sorted({r["topology"] for r in priced} | set(GENERATION))
    published = {}
    for t in topo_names:
        kind, name, rs = scope_of(t, priced)
        b = band_of(rs, "lofo")
        own = sum(r["topology"] == t for r in priced)
        published[t] = (kind, name, b, own)
        where = {"topology": "its own rows", "generation": f"generation {name}", "all": "whole set"}[kind]
        print(f"  {t:20s} {own:3d} rows  band {pct(b['low'])} .. {pct(b['high'])} of error  from {where} "
              f"({b['rows']} rows, median |err| {apct(b['median_abs'])})")
    print(f"coverage on held-out families (each family against the band built without it): {covered_rows}/"
          f"{total_rows} rows = {100 * coverage:.0f}% (target {100 * COVERAGE:.0f}%); mean over families "
          f"{100 * fam_cov:.0f}%")
    for fam in families:
        if fam not in cover:
            print(f"  {fam:20s} no other family to build its band from")
            continue
        i, n, sc = cover[fam]
        print(f"  {fam:20s} {i:2d}/{n:<2d} inside  (band from: {', '.join(sc)})")

    if bands_out:
        write_bands(bands_out, priced, published, coverage, covered_rows, total_rows, cover)
        print(f"bands written to {bands_out}")

    if check:
        return run_check(rows, priced, fam_stats, median(lofo_abs), median(ins_abs), coverage, nofit,
                         median(loso_abs))
    return 0


def write_bands(path, priced, published, coverage, covered, total, cover):
    def r4(x):
        return None if x is None or math.isinf(x) else round(x, 4)
    scopes, topologies = {}, {}
    for t, (kind, name, b, own) in published.items():
        key = "all" if kind == "all" else f"{kind}:{name}"
        scopes[key] = {"kind": kind, "name": name, "rows": b["rows"], "families": b["families"],
                       "low": r4(b["low"]), "high": r4(b["high"]), "median_abs": r4(b["median_abs"]),
                       "signed_mean": r4(b["signed_mean"])}
        topologies[t] = {"rows": own, "generation": GENERATION.get(t), "scope": key}
    out = {
        "what": ("uncertainty of a projected MFU (scripts/validate_published.sh --bands; scripts/lofo_fit.py states the "
                 "rule): per scope, the split-conformal interval (Lei et al., JASA 2018) at the stated coverage of the "
                 "leave-one-family-out errors (projected / published - 1, each family at the GEMM efficiency fitted "
                 "without it) of the published runs of topologies/validation/published-runs.csv; a topology takes "
                 "its own rows' scope when they are at least min_rows rows of min_families families, else its "
                 "generation's, else the whole set's ('all', also the band of any topology not listed). ibt project "
                 "divides a projected MFU by 1 + high and 1 + low to give its band."),
        "coverage": COVERAGE, "min_rows": MIN_ROWS, "min_families": MIN_FAMILIES,
        "held_out_coverage": {"rows_inside": covered, "rows": total, "fraction": round(coverage, 4),
                              "per_family": {f: {"inside": c[0], "rows": c[1]} for f, c in sorted(cover.items())}},
        "scopes": dict(sorted(scopes.items())),
        "topologies": dict(sorted(topologies.items())),
    }
    if "all" not in out["scopes"]:
        b = band_of(priced, "lofo")
        out["scopes"]["all"] = {"kind": "all", "name": "all", "rows": b["rows"], "families": b["families"],
                                "low": r4(b["low"]), "high": r4(b["high"]), "median_abs": r4(b["median_abs"]),
                                "signed_mean": r4(b["signed_mean"])}
    with open(path, "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")


# --check: the targets, and where the project does not meet one today, the recorded figure
# it must not fall behind (the measured value with a margin of about 2-5 points, so that
# unrelated pricing changes do not fail CI and a change that makes things worse does).
TARGETS = {"lofo_median_abs": 0.08, "insample_median_abs": 0.08, "coverage": COVERAGE, "family_mean": 0.10}
RECORDED = {
    # Known misses: LOFO signed mean held to a recorded range instead of +-10%
    # (docs/validation.md, says why for each).
    # (docs/validation.md, 2026-11-28: the LOFO signed mean then measured, widened
    # by about 5 points on its far side; the near side is the +-10% target.)
    "family_mean": {
        "a100-deepspeed-2021": (-0.10, 0.33),  # +28.3%: DeepSeed's 2021 pipeline engine, priced as megatron-2021
        "b200-mbridge-fp8": (-0.10, 0.18),     # +15.0%: the DeepSeek-V3 EP8 rows (+45%, +23%)
        "gb200-mbridge-bf16": (-0.10, 0.16),   # +10.3%: its one row, DeepSeek-V3 EP64 (was -62.7% with EP groups
                                               # split across racks, before jobs were placed in whole segments)
        "h100-llama3-bf16": (-0.10, 0.18),     # +13.2%: at Meta's interleaved schedule (vpp auto), the 8K rows
                                               # +20..25% as Nemotron-4 at 6,144 GPUs (-21.6% at plain 1F1B)
        "h100-megatron-bf16": (-0.10, 0.29),   # +21.9%: Nemotron-4 340B at 6,144 GPUs (vpp auto = 8, mbs 1 assumed)
        "tpu-v5p-maxtext": (-0.26, 0.10),      # -20.4%: at the prior (one TPU family); 512B at full remat
                                               # (priced as MaxText runs it) would need 85% HFU
    },
    "lofo_median_abs": None,  # None: the target itself (8%)
    "loso_median_abs": 0.19,  # 16.7% measured 2026-12-04 (60 rows, 7 stacks on generations), about 2 points over
    "coverage": 0.75,         # 80% measured (48/60; 85% before Llama 3 ran at its interleaved schedule, 78% of
                              # the 54 rows before the 26.02/25.09 Megatron-Bridge rows): held to 75% so one row
                              # moving does not fail CI
}


def run_check(rows, priced, fam_stats, lofo_med, ins_med, coverage, nofit, loso_med):
    bad, gaps = [], []
    unpriced = [r for r in rows if r["error"] is None]
    if unpriced:
        bad.append(f"{len(unpriced)} rows not priced")
    uncited = [r for r in nofit if not r["reason"]]
    if uncited:
        bad.append(f"{len(uncited)} published runs do not fit ibt's memory plan without a cited reason: " +
                   "; ".join(f"{r['family']} {r['model']} {r['gpus']}" for r in uncited))
    ceiling = RECORDED["lofo_median_abs"] or TARGETS["lofo_median_abs"]
    if lofo_med > ceiling:
        bad.append(f"LOFO median |error| {100 * lofo_med:.1f}% > {100 * ceiling:.1f}%")
    elif lofo_med > TARGETS["lofo_median_abs"]:
        gaps.append(f"LOFO median |error| {100 * lofo_med:.1f}% (target 8%)")
    # LOSO has no target met today: held to its recorded figure so a change that makes
    # ibt transfer worse across stacks fails.
    if loso_med > RECORDED["loso_median_abs"]:
        bad.append(f"LOSO median |error| {100 * loso_med:.1f}% > recorded {100 * RECORDED['loso_median_abs']:.1f}%")
    else:
        gaps.append(f"LOSO median |error| {100 * loso_med:.1f}% (target 8%)")
    if ins_med > TARGETS["insample_median_abs"]:
        bad.append(f"in-sample median |error| {100 * ins_med:.1f}% > 8%")
    floor = RECORDED["coverage"] or TARGETS["coverage"]
    if coverage < floor:
        bad.append(f"held-out band coverage {100 * coverage:.0f}% < {100 * floor:.0f}%")
    elif coverage < TARGETS["coverage"]:
        gaps.append(f"held-out coverage {100 * coverage:.0f}% (target 80%)")
    for fam, s in fam_stats.items():
        rng = RECORDED["family_mean"].get(fam)
        if rng:
            if not rng[0] <= s["lofo_mean"] <= rng[1]:
                bad.append(f"family {fam} LOFO signed mean {100 * s['lofo_mean']:+.1f}% outside its recorded range "
                           f"{100 * rng[0]:+.0f}% .. {100 * rng[1]:+.0f}%")
            else:
                gaps.append(f"{fam} {100 * s['lofo_mean']:+.1f}%")
        elif abs(s["lofo_mean"]) > TARGETS["family_mean"]:
            bad.append(f"family {fam} LOFO signed mean {100 * s['lofo_mean']:+.1f}% beyond +-10%")
    print()
    if bad:
        print("CHECK FAILED: " + "; ".join(bad))
        return 1
    print("CHECK PASSED: every row priced, every row that does not fit has its cited reason; targets held where met, "
          "recorded figures elsewhere")
    if gaps:
        print("  NOT MET (held to the recorded figures only): " + "; ".join(gaps))
    return 0


if __name__ == "__main__":
    sys.exit(main())
