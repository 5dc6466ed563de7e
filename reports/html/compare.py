"""`ibt report --compare A.h5 B.h5`: what changed from A to B, for every kind of result
both files hold -- collectives, the p2p matrix, train and sweep runs, projections,
crossover grids and scaling runs.

Each kind gives points (a metric of one configuration in A and in B) with the run-to-run
spread of each side where the files hold one:
  - collectives and p2p: the per-iteration p50 and p99 (spread = p99/p50 - 1);
  - train and sweep runs: the step times after the first (the steps are repeats; spread
    = (p90 - p10) / median, or (max - min) / median with fewer than 5);
  - projections, crossover and scaling: deterministic, spread 0.
A ratio > 1 means B is better (faster, more bandwidth, more MFU). A verdict is 'faster'
or 'slower' only when the geometric mean of the ratios leaves the band 1 +/- max(tolerance,
the larger spread of the two sides); inside it the difference is 'same (within noise)',
so two identical back-to-back runs on a noisy machine are never called a regression.
"""
import math
import re
from collections import defaultdict, namedtuple

import matplotlib.pyplot as plt
import numpy as np

import figure_style as FS
from figures import Figure, _fmt, human_bytes
from ibt_tables import Columns

COLL = Columns("collectives")
P2P = Columns("p2p_matrix")
STEPS = Columns("steps")
PROJ = Columns("projections")
XO = Columns("crossover")
SCALE = Columns("scaling")

# group: (op or kind, scope or model, dtype or detail, metric); x: a sortable position; label: what x is, in words.
Point = namedtuple("Point", "group x label a b spread_a spread_b higher_is_better")


def _spread_p50_p99(p50, p99):
    return max(0.0, p99 / p50 - 1) if p50 > 0 and p99 > 0 else 0.0


def _spread_of(values):
    v = np.sort(np.asarray(values, dtype=float))
    if len(v) < 2 or not np.median(v) > 0:
        return 0.0
    lo, hi = (np.percentile(v, 10), np.percentile(v, 90)) if len(v) >= 5 else (v[0], v[-1])
    return float((hi - lo) / np.median(v))


def collectives_points(runs):
    """(op, scope, dtype, bytes) -> (p50 us, p99 us, busbw): the newest run's row wins."""
    out = {}
    for run in runs:
        t = run.tables.get(COLL.table)
        if t is None:
            continue
        for i in range(t.length):
            if t[COLL.placement][i] == "out":
                out[(t[COLL.op][i], t[COLL.scope][i], t[COLL.dtype][i], int(t[COLL.bytes][i]))] = (
                    float(t[COLL.p50_us][i]), float(t[COLL.p99_us][i]), float(t[COLL.busbw_GBps][i]),
                    float(t[COLL.time_us][i]))
    return out


def p2p_points(runs):
    out = {}
    for run in runs:
        t = run.tables.get(P2P.table)
        if t is None:
            continue
        for size in sorted(set(int(b) for b in t[P2P.bytes])):
            sel = [i for i in range(t.length) if int(t[P2P.bytes][i]) == size]
            tm = float(np.median([float(t[P2P.time_us][i]) for i in sel]))
            p99 = float(np.median([float(t[P2P.p99_us][i]) for i in sel]))
            bw = float(np.median([float(t[P2P.bandwidth_GBps][i]) for i in sel]))
            out[("p2p", "pairs", "median pair", size)] = (tm, p99, bw, tm)
    return out


def _timed(a, b, make_point):
    points = []
    for k in sorted(set(a) & set(b)):
        (ap50, ap99, abw, _), (bp50, bp99, bbw, _) = a[k], b[k]
        sa, sb = _spread_p50_p99(ap50, ap99), _spread_p50_p99(bp50, bp99)
        points.append(make_point(k, "time p50", ap50, bp50, sa, sb, False))
        if abw > 0 and bbw > 0:
            # Bandwidth is bytes / time: the same relative spread.
            points.append(make_point(k, "bandwidth", abw, bbw, sa, sb, True))
    return points


def comm_points(a_runs, b_runs):
    def point(k, metric, a, b, sa, sb, hib):
        return Point((k[0], k[1], k[2], metric), k[3], human_bytes(k[3]), a, b, sa, sb, hib)
    return (_timed(collectives_points(a_runs), collectives_points(b_runs), point) +
            _timed(p2p_points(a_runs), p2p_points(b_runs), point))


def _train_stats(runs):
    """(model, split, ranks) -> (median step s, spread, median MFU) of measured train runs
    (ibt train, each split of ibt sweep); several runs of one configuration pool their steps."""
    steps = defaultdict(lambda: ([], []))
    for run in runs:
        t = run.tables.get(STEPS.table)
        if run.kind != "train" or t is None or not t.length or not t.has(STEPS.step_time):
            continue
        rows = range(1, t.length) if t.length > 1 else range(1)
        key = (str(run.attrs.get("model", "?")), str(run.attrs.get("split", "?")), int(run.attrs.get("world_size", 0)))
        steps[key][0].extend(float(t[STEPS.step_time][i]) for i in rows)
        if t.has(STEPS.mfu):
            steps[key][1].extend(float(t[STEPS.mfu][i]) for i in rows)
    return {k: (float(np.median(s)), _spread_of(s), float(np.median(m)) if m else float("nan"))
            for k, (s, m) in steps.items()}


def train_points(a_runs, b_runs):
    a, b = _train_stats(a_runs), _train_stats(b_runs)
    points = []
    for i, k in enumerate(sorted(set(a) & set(b))):
        label = f"{k[1]} ({k[2]} ranks)"
        points.append(Point(("train", k[0], "", "step time median"), i, label, a[k][0], b[k][0], a[k][1], b[k][1], False))
        if a[k][2] > 0 and b[k][2] > 0:
            points.append(Point(("train", k[0], "", "MFU median"), i, label, a[k][2], b[k][2], a[k][1], b[k][1], True))
    return points


def _rows(runs, table, key_of, value_cols):
    out = {}
    for run in runs:
        t = run.tables.get(table)
        if t is None:
            continue
        for i in range(t.length):
            if t.has("feasible") and not int(t["feasible"][i]):
                continue
            out[key_of(run, t, i)] = tuple(float(t[c][i]) for c in value_cols)
    return out


def projection_points(a_runs, b_runs):
    """Projections of the same model, split and device count (the topology may differ:
    that is the usual question, 'what does B's hardware give')."""
    key = lambda run, t, i: (str(run.attrs.get("model", "?")), str(t[PROJ.split][i]),  # noqa: E731
                             int(t[PROJ.devices][i]))
    cols = (PROJ.step_s, PROJ.mfu, PROJ.tokens_per_s)
    a = _rows(a_runs, PROJ.table, key, cols)
    b = _rows(b_runs, PROJ.table, key, cols)
    common = sorted(set(a) & set(b), key=lambda k: -a[k][1])[:40]  # the 40 best of A: a readable figure
    points = []
    for i, k in enumerate(common):
        label = f"{k[1]} ({k[2]} dev)"
        # Speed first: generations are compared by what they deliver, MFU beside.
        points.append(Point(("projection", k[0], "", "tokens/s per device"), i, label, a[k][2] / k[2], b[k][2] / k[2],
                            0.0, 0.0, True))
        points.append(Point(("projection", k[0], "", "step time"), i, label, a[k][0], b[k][0], 0.0, 0.0, False))
        points.append(Point(("projection", k[0], "", "MFU"), i, label, a[k][1], b[k][1], 0.0, 0.0, True))
    return points


def crossover_points(a_runs, b_runs):
    key = lambda run, t, i: (str(run.attrs.get("model", "?")), int(t[XO.domain_size][i]),  # noqa: E731
                             float(t[XO.scale_out_Gbps][i]))
    a = _rows(a_runs, XO.table, key, (XO.mfu_no_pp, XO.mfu_with_pp))
    b = _rows(b_runs, XO.table, key, (XO.mfu_no_pp, XO.mfu_with_pp))
    points = []
    for i, k in enumerate(sorted(set(a) & set(b))):
        label = f"domain {k[1]}, {k[2]:g} Gb/s"
        for j, metric in enumerate(("best MFU without PP", "best MFU with PP")):
            if a[k][j] > 0 and b[k][j] > 0:
                points.append(Point(("crossover", k[0], "", metric), i, label, a[k][j], b[k][j], 0.0, 0.0, True))
    return points


def scaling_points(a_runs, b_runs):
    key = lambda run, t, i: (str(t[SCALE.model][i]), str(t[SCALE.scaling][i]), int(t[SCALE.devices][i]))  # noqa: E731
    a = _rows(a_runs, SCALE.table, key, (SCALE.mfu, SCALE.tokens_per_s_per_device))
    b = _rows(b_runs, SCALE.table, key, (SCALE.mfu, SCALE.tokens_per_s_per_device))
    points = []
    for k in sorted(set(a) & set(b)):
        label = f"{k[2]} devices"
        points.append(Point(("scaling", k[0], k[1], "tokens/s per device"), k[2], label, a[k][1], b[k][1], 0.0, 0.0,
                            True))
        points.append(Point(("scaling", k[0], k[1], "best MFU"), k[2], label, a[k][0], b[k][0], 0.0, 0.0, True))
    return points


def ratio(p):
    """> 1: B is better."""
    if not (p.a > 0 and p.b > 0):
        return float("nan")
    return p.b / p.a if p.higher_is_better else p.a / p.b


def verdict(geo_mean, band, metric=""):
    """faster/slower for times and bandwidths; higher/lower for MFU, which is a share of a
    peak (a newer system can be faster at a lower MFU)."""
    better, worse = ("higher", "lower") if "MFU" in metric else ("faster", "slower")
    if geo_mean > 1 + band:
        return better
    if geo_mean < 1 / (1 + band):
        return worse
    return "same"


def all_points(a_runs, b_runs):
    return (comm_points(a_runs, b_runs) + train_points(a_runs, b_runs) + projection_points(a_runs, b_runs) +
            crossover_points(a_runs, b_runs) + scaling_points(a_runs, b_runs))


def summarize(points, tol):
    """[(group, n, geo-mean ratio, noise band, verdict)] per group."""
    groups = defaultdict(list)
    for p in points:
        groups[p.group].append(p)
    out = []
    # Within each kind and model, speed leads: tokens/s, then times, then MFU (a share of each
    # system's own peak, so never the headline of a generation comparison).
    def lead(g):
        metric = g[3]
        rank = 0 if metric.startswith("tokens/s") else 2 if "MFU" in metric else 1
        return (g[0], g[1], g[2], rank, metric)
    for g, pts in sorted(groups.items(), key=lambda item: lead(item[0])):
        rs = [ratio(p) for p in pts]
        rs = [r for r in rs if r > 0 and not math.isnan(r)]
        if not rs:
            continue
        gm = math.exp(sum(math.log(r) for r in rs) / len(rs))
        # The band: the tolerance, or the typical (median) larger spread of the two sides.
        band = max(tol, float(np.median([max(p.spread_a, p.spread_b) for p in pts])))
        out.append((g, len(rs), gm, band, verdict(gm, band, g[3])))
    return out


def _tick(label):
    """A configuration's tick label with its split shortened (the table keeps it whole):
    'dp64 tp1 pp1 ep1 vpp1 m1 b1 1f1b zero2 recompute=none (64 dev)' -> 'dp64 m1 zero2 (64 dev)'."""
    head, sep, tail = label.partition(" (")
    return FS.short_split(head) + sep + tail if re.match(r"dp\d+ ", head) else label


def ratio_figures(points, tol, an, bn):
    """One figure per kind: ratio B/A (better > 1) on a log axis, the noise band as error bars."""
    figures = []
    by_kind = defaultdict(list)
    for p in points:
        by_kind[p.group[0] if p.group[0] in ("train", "projection", "crossover", "scaling") else "communication"].append(p)
    for kind, pts in sorted(by_kind.items()):
        series = defaultdict(list)
        for p in pts:
            series[p.group].append(p)
        categorical = kind != "communication"
        many = categorical and len({p.x for p in pts}) > 20
        fig, ax = plt.subplots(figsize=(9, 6 if many else 4.5))
        labels, drawn = {}, {}
        # Series at the same configuration are set side by side (a tenth of a tick apart), so
        # that equal ratios (tokens/s and step time of one run) do not hide each other.
        dodge = 0.1 if categorical and len(series) > 1 else 0.0
        for n, (g, ps) in enumerate(sorted(series.items())):
            ps.sort(key=lambda p: p.x)
            xs = [p.x + dodge * (n - (len(series) - 1) / 2) for p in ps]
            rs = [ratio(p) for p in ps]
            bands = [max(tol, p.spread_a, p.spread_b) for p in ps]
            lower = [r - r / (1 + b) for r, b in zip(rs, bands)]
            upper = [r * b for r, b in zip(rs, bands)]
            name = " / ".join(x for x in g[1:] if x)
            ax.errorbar(xs, rs, yerr=[lower, upper], marker="o", ms=3, capsize=2, lw=1, label=name)
            drawn[name] = [round(r, 6) for r in rs]
            for p in ps:
                labels[p.x] = p.label
        if categorical:
            ticks = sorted(labels)
            ax.set_xticks(ticks)
            ax.set_xlim(ticks[0] - 0.5, ticks[-1] + 0.5)
            ax.set_xticklabels([_tick(labels[t]) for t in ticks], rotation=90 if many else 60,
                               ha="center" if many else "right")
        else:
            ax.set_xscale("log")
            ax.set_xlabel("message size (bytes)")
        ax.set_yscale("log")
        FS.plain_log_ticks(ax.yaxis)
        ax.axhline(1, color="k", lw=0.8)
        ax.axhspan(1 / (1 + tol), 1 + tol, color="grey", alpha=0.15)
        ax.set_ylabel("ratio B / A (> 1: B better)")
        FS.title(fig, f"{kind}: B = {bn} against A = {an}")
        ax.grid(True, which="both", alpha=0.3)
        names = list(drawn)
        hidden = [f"'{b}' coincides with '{a}' (drawn over it)" for i, a in enumerate(names) for b in names[i + 1:]
                  if drawn[a] == drawn[b] and not dodge]
        FS.legend_beside(ax, title="series")
        fig.tight_layout()
        rows = [[" / ".join(x for x in p.group if x), p.label, _fmt(p.a), _fmt(p.b), _fmt(ratio(p), 3),
                 f"±{100 * max(p.spread_a, p.spread_b):.1f}%"] for p in sorted(pts, key=lambda p: (p.group, p.x))]
        figures.append(Figure(f"compare_{kind}", fig,
                              f"{kind}: ratio per configuration, > 1 when B is better (log axis); error bars: the "
                              f"run-to-run spread of the two sides (or the tolerance {tol:g}); grey band: tolerance; "
                              "black line: ratio 1 (A and B equal)." + (" Lines on top of each other: " +
                                                                        "; ".join(hidden) + "." if hidden else ""),
                              (["series", "configuration", "A", "B", "ratio", "spread"], rows)))
    return figures
