"""The report's figures, drawn with matplotlib from ibt tables.

Each function returns a list of Figure objects (name, matplotlib figure, caption, table),
or an empty list when the runs hold nothing to draw. A table is (header, rows) shown
under the figure, so every plotted number can be read exactly.
"""
import math
import re
from collections import defaultdict, namedtuple

import matplotlib

matplotlib.use("Agg")
import matplotlib.patches  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

import figure_style as FS  # noqa: E402
from ibt_tables import Columns  # noqa: E402

COLL = Columns("collectives")
STEPS = Columns("steps")
PROJ = Columns("projections")  # the breakdown columns are the same in projection_stages and scaling

Figure = namedtuple("Figure", "name fig caption table")

SCOPES = ("intra", "inter", "world")
# Training results come from two places:
#   - measured runs (kind "train", ibt train): run attributes model, split, world_size and a
#     table "steps" with one row per step: mfu, step_time, compute, tp_comm, dp_comm, ep_comm,
#     pp_comm_and_bubble, other (seconds);
#   - projections (table "projections", ibt project / crossover): one row per split with
#     devices, split, feasible, mfu, compute_s, exposed_{tp,dp,expert_dp,pp,ep}_s, bubble_s.
TRAINING_SOURCES = "runs of kind train (table steps) or tables projections"


def human_bytes(n):
    n = int(n)
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale and n % scale == 0:
            return f"{n // scale} {unit}"
    return f"{n} B"


def _fmt(v, digits=4):
    if isinstance(v, float):
        if math.isinf(v) or v >= 1e299:
            return "inf"
        return f"{v:.{digits}g}"
    return str(v)


def _where(runs):
    """'CPU (host), 2 ranks' for a title: the systems the runs measured and their rank counts."""
    return FS.systems_and_devices([r.system for r in runs], [int(r.attrs.get("world_size", 0) or 0) for r in runs],
                                  unit="rank")


def _collective_runs(runs, op=None):
    return [r for r in runs if r.tables.get(COLL.table) is not None and r.tables[COLL.table].length
            and (op is None or op in set(r.tables[COLL.table][COLL.op]))]


def _collective_rows(runs):
    """(run, op, scope, dtype) -> sorted [(bytes, busbw, time_us, p50, wrong)]."""
    series = defaultdict(lambda: {"out": [], "in": []})
    for run in runs:
        t = run.tables.get(COLL.table)
        if t is None or t.length == 0:
            continue
        for i in range(t.length):
            key = (run.label, t[COLL.op][i], t[COLL.scope][i], t[COLL.dtype][i])
            series[key][t[COLL.placement][i]].append((int(t[COLL.bytes][i]), float(t[COLL.busbw_GBps][i]),
                                                      float(t[COLL.time_us][i]), float(t[COLL.p50_us][i]),
                                                      int(t[COLL.wrong][i])))
    # Out-of-place where the op has it; in-place otherwise (broadcast is in-place only).
    return {k: sorted(v["out"] or v["in"]) for k, v in series.items()}


def busbw_figures(runs):
    series = _collective_rows(runs)
    ops = sorted({k[1] for k in series})
    figures = []
    for op in ops:
        scopes = [s for s in SCOPES if any(k[1] == op and k[2] == s for k in series)]
        fig, axes = plt.subplots(1, len(scopes), figsize=(FS.panel_width(len(scopes)) * len(scopes), 3.4), squeeze=False)
        header = ["scope", "series", "bytes", "busbw GB/s", "time us", "#wrong"]
        rows = []
        colour = FS.series_colours(f"{k[0]} {k[3]}" for k in series if k[1] == op)
        for ax, scope in zip(axes[0], scopes):
            for key in sorted(k for k in series if k[1] == op and k[2] == scope):
                pts = [p for p in series[key] if p[1] > 0]
                label = f"{key[0]} {key[3]}"
                if pts:
                    ax.loglog([p[0] for p in pts], [p[1] for p in pts], marker="o", ms=3, label=label, color=colour[label])
                for p in series[key]:
                    rows.append([scope, label, human_bytes(p[0]), _fmt(p[1]), _fmt(p[2]), str(p[4])])
            ax.set_title(f"scope {scope}")
            ax.set_xlabel("message size (bytes)")
            ax.set_ylabel("bus bandwidth (GB/s)")
            ax.grid(True, which="both", alpha=0.3)
        fig.suptitle(f"{op}: bus bandwidth on {_where(_collective_runs(runs, op))}")
        FS.legend_below(fig, *FS.merged_handles(axes[0]))
        figures.append(Figure(f"busbw_{op}", fig,
                              f"{op}: bus bandwidth against message size (out-of-place, or in-place where the op has only that; log-log), a line per run "
                              "(file:run) and dtype, one panel per scope; each point is one message size.", (header, rows)))
    return figures


def latency_figure(runs, small_bytes=4096):
    series = _collective_rows(runs)
    points = defaultdict(list)  # (scope) -> [(op, label, bytes, time, p50)]
    for (label, op, scope, dtype), pts in series.items():
        small = [p for p in pts if p[0] <= small_bytes]
        if small:
            b, _, t, p50, _ = small[0]
            points[scope].append((op, f"{label} {dtype}", b, t, p50))
    if not points:
        return []
    scopes = [s for s in SCOPES if s in points]
    fig, axes = plt.subplots(1, len(scopes), figsize=(FS.panel_width(len(scopes), widest=4.6) * len(scopes), 3.6),
                             squeeze=False)
    rows = []
    colour = FS.series_colours(e[1] for scope in scopes for e in points[scope])
    for ax, scope in zip(axes[0], scopes):
        entries = sorted(points[scope])
        ops = sorted({e[0] for e in entries})
        labels = sorted({e[1] for e in entries})
        width = 0.8 / max(1, len(labels))
        for j, label in enumerate(labels):
            xs, ys = [], []
            for i, op in enumerate(ops):
                for e in entries:
                    if e[0] == op and e[1] == label:
                        xs.append(i + j * width)
                        ys.append(e[3])
            ax.bar(xs, ys, width=width, label=label, color=colour[label])
        ax.set_xticks([i + 0.4 - width / 2 for i in range(len(ops))])
        ax.set_xticklabels(ops, rotation=30, ha="right")
        ax.set_yscale("log")
        FS.plain_log_ticks(ax.yaxis)
        ax.set_ylabel("time per op (us)")
        ax.set_title(f"scope {scope}")
        ax.grid(True, axis="y", alpha=0.3)
        rows += [[scope, e[0], e[1], human_bytes(e[2]), _fmt(e[3]), _fmt(e[4])] for e in entries]
    fig.suptitle(f"Small-message latency on {_where(_collective_runs(runs))}")
    FS.legend_below(fig, *FS.merged_handles(axes[0]))
    return [Figure("latency", fig,
                   f"Small-message latency: mean time per op at the smallest measured size (at most {small_bytes} B), "
                   "per scope; a bar per run (file:run) and dtype.", (["scope", "op", "series", "bytes", "time us", "p50 us"], rows))]


def p2p_figures(runs):
    figures = []
    for run in runs:
        t = run.tables.get("p2p_matrix")
        if t is None or t.length == 0:
            continue
        sizes = sorted(set(int(b) for b in t["bytes"]))
        units = int(max(t["unit_a"].max(), t["unit_b"].max())) + 1
        # Constrained layout, not tight_layout: it makes room for the colour bars and the x
        # labels under square matrices (tight_layout cut the bottom label off at some values).
        fig, axes = plt.subplots(1, len(sizes), figsize=(FS.panel_width(len(sizes), widest=4.4) * len(sizes), 3.8),
                                 squeeze=False, layout="constrained")
        for ax, size in zip(axes[0], sizes):
            bandwidth = size == sizes[-1] and len(sizes) > 1 or size >= 65536
            m = np.full((units, units), np.nan)
            for i in range(t.length):
                if int(t["bytes"][i]) != size:
                    continue
                a, b = int(t["unit_a"][i]), int(t["unit_b"][i])
                v = float(t["bandwidth_GBps"][i] if bandwidth else t["time_us"][i])
                old = m[a, b]
                if not np.isnan(old):  # domains: several rank pairs per cell, keep the slowest
                    v = min(old, v) if bandwidth else max(old, v)
                m[a, b] = m[b, a] = v
            im = ax.imshow(m, cmap="viridis" if bandwidth else "viridis_r")
            fig.colorbar(im, ax=ax, label="GB/s" if bandwidth else "us")
            for a in range(units):
                for b in range(units):
                    if not np.isnan(m[a, b]) and units <= 16:
                        ax.text(b, a, _fmt(m[a, b], 3), ha="center", va="center", fontsize=FS.MIN_FONT_PT, color="w")
            ax.set_title(f"{'bandwidth' if bandwidth else 'latency'} at {human_bytes(size)}")
            ax.set_xlabel("unit")
            ax.set_ylabel("unit")
            ax.set_xticks(range(units))
            ax.set_yticks(range(units))
        fig.suptitle(f"Point-to-point matrix on {_where([run])} ({run.label})")
        header = ["round", "rank a", "host a", "rank b", "host b", "bytes", "time us", "p99 us", "GB/s", "#wrong"]
        rows = [[str(t["round"][i]), str(t["rank_a"][i]), t["host_a"][i], str(t["rank_b"][i]), t["host_b"][i],
                 human_bytes(t["bytes"][i]), _fmt(float(t["time_us"][i])), _fmt(float(t["p99_us"][i])),
                 _fmt(float(t["bandwidth_GBps"][i])), str(t["wrong"][i])] for i in range(t.length)]
        o = run.tables.get("p2p_outliers")
        if o is not None and o.length:
            outl = "; ".join(
                f"{o['kind'][i]} {o['metric'][i]} {human_bytes(o['bytes'][i])} rank {o['rank_a'][i]} ({o['host_a'][i]})"
                + (f" <-> {o['rank_b'][i]} ({o['host_b'][i]})" if int(o["rank_b"][i]) >= 0 else "")
                + f": {_fmt(float(o['value'][i]))} vs median {_fmt(float(o['median'][i]))}" for i in range(o.length))
        else:
            outl = "none"
        figures.append(Figure(f"p2p_{run.file}_{run.id}", fig,
                              f"Point-to-point matrix of {run.label}: ping-pong latency (small sizes) and bandwidth "
                              f"(large sizes) per pair of units (ranks, or domains in a per-domain matrix); the slowest "
                              f"rank pair per cell. Outliers: {outl}.",
                              (header, rows)))
    return figures


def accept_figures(runs):
    figures = []
    for run in runs:
        t = run.tables.get("accept")
        if t is None or t.length == 0:
            continue
        names = list(t["metric"])
        margins = [float(x) for x in t["margin"]]
        passed = [v == "PASS" for v in t["verdict"]]
        fig, ax = plt.subplots(figsize=(8, 0.35 * len(names) + 1.2))
        ax.barh(range(len(names)), margins, color=["tab:green" if p else "tab:red" for p in passed])
        ax.set_yticks(range(len(names)))
        ax.set_yticklabels(names)
        ax.axvline(0, color="k", lw=0.8)
        ax.set_xlabel("margin: (measured - target) / target, + = better than target")
        ax.set_title(FS.wrap(f"acceptance on {_where([run])} ({run.label}): {run.attrs.get('verdict', '?')}", 90))
        fig.tight_layout()
        header = ["metric", "measured", "target", "bounds", "unit", "margin", "verdict"]
        rows = [[t["metric"][i], _fmt(float(t["measured"][i])), _fmt(float(t["target"][i])),
                 f"[{_fmt(float(t['lower_bound'][i]))}, {_fmt(float(t['upper_bound'][i]))}]", t["unit"][i],
                 _fmt(float(t["margin"][i]), 3), t["verdict"][i]] for i in range(t.length)]
        figures.append(Figure(f"accept_{run.file}_{run.id}", fig,
                              f"Acceptance of {run.label} against {run.attrs.get('reference', '?')}: margin of "
                              "each metric against its target as a signed fraction in the metric's good direction "
                              "(+ = better than target, - = worse; the verdict is by the bounds); green: passed, "
                              "red: failed; the black line is the target (margin 0).", (header, rows)))
    return figures


def _split_shape(split):
    """A split label without its dp degree and microbatch count (both scale with the device
    count at a fixed global batch), so one line follows a shape as devices grow."""
    return " ".join(w for w in str(split).split() if not re.fullmatch(r"(dp|m)\d+", w))


def _uses_pp(split):
    m = re.search(r"\bpp(\d+)\b", str(split))
    return bool(m) and int(m.group(1)) > 1


# Step-time parts, as (label, projection columns, measured columns).
BREAKDOWN = (("compute", (PROJ.compute_s,), (STEPS.compute,)),
             ("TP comm", (PROJ.exposed_tp_s,), (STEPS.tp_comm,)),
             ("DP comm", (PROJ.exposed_dp_s, PROJ.exposed_expert_dp_s), (STEPS.dp_comm,)),
             ("EP comm", (PROJ.exposed_ep_s,), (STEPS.ep_comm,)),
             ("PP comm", (PROJ.exposed_pp_s,), ()),
             ("bubble", (PROJ.bubble_s,), ()),
             ("PP comm + bubble", (), (STEPS.pp_comm_and_bubble,)),
             ("other", (), (STEPS.other,)),
             ("CP comm", (PROJ.exposed_cp_s,), ()))

# One colour per breakdown component in every figure of every report, so "orange" always
# means the same thing.
COMPONENT_COLOURS = {"compute": "#4c72b0", "TP comm": "#dd8452", "DP comm": "#55a868", "EP comm": "#c44e52",
                     "PP comm": "#8172b3", "bubble": "#937860", "PP comm + bubble": "#a27fb0", "other": "#8c8c8c",
                     "CP comm": "#ccb974"}
# PP splits are marked the same way wherever splits are compared.
PP_COLOUR, NO_PP_COLOUR, PP_HATCH = "#c44e52", "#4c72b0", "//"


def stacked_breakdown(ax, labels, parts_list, horizontal=True):
    """Stacked bars of step-time parts (dicts part -> seconds), one bar per label, coloured
    by COMPONENT_COLOURS. Returns the parts drawn, in order."""
    drawn = [lab for lab, _, _ in BREAKDOWN if any((p.get(lab) or 0) > 0 for p in parts_list)]
    base = np.zeros(len(parts_list))
    for lab in drawn:
        vals = np.array([p.get(lab) or 0.0 for p in parts_list], dtype=float)
        vals = np.nan_to_num(vals)
        if horizontal:
            ax.barh(range(len(parts_list)), vals, left=base, label=lab, color=COMPONENT_COLOURS[lab])
        else:
            ax.bar(range(len(parts_list)), vals, bottom=base, label=lab, color=COMPONENT_COLOURS[lab])
        base += vals
    if horizontal:
        ax.set_yticks(range(len(labels)))
        ax.set_yticklabels(labels)
    else:
        ax.set_xticks(range(len(labels)))
        ax.set_xticklabels(labels, rotation=30, ha="right")
    return drawn


def projection_parts(run, t, i):
    """The step-time breakdown of projection row i of table t: of its bottleneck pipeline
    stage (the busiest one, from table projection_stages, where every stage is kept), or
    of stage 0 as the projections row stores it in files without that table. Returns
    ({label: seconds}, "stage N")."""
    stages = run.tables.get("projection_stages")
    if stages is not None and stages.has("split", "bottleneck", "stage"):
        if not hasattr(stages, "bottleneck_row"):  # split -> its bottleneck row, built once per table
            stages.bottleneck_row = {str(stages["split"][j]): j for j in range(stages.length)
                                     if int(stages["bottleneck"][j])}
        j = stages.bottleneck_row.get(str(t["split"][i]))
        if j is not None:
            parts = {label: sum(float(stages[c][j]) for c in cols if stages.has(c))
                     for label, cols, _ in BREAKDOWN if cols}
            return parts, f"stage {int(stages['stage'][j])}"
    return {label: sum(float(t[c][i]) for c in cols if t.has(c)) for label, cols, _ in BREAKDOWN if cols}, "stage 0"


def _training_points(runs):
    """[(model, source, split, devices, mfu, {part: seconds}, system, run)] from measured and projected runs."""
    points = []
    for run in runs:
        t = run.tables.get("projections")
        if t is not None and t.has("devices", "mfu", "split"):
            for i in range(t.length):
                if t.has("feasible") and not int(t["feasible"][i]):
                    continue
                parts, _ = projection_parts(run, t, i)
                points.append((run.attrs.get("model", "?"), "projected", str(t["split"][i]), int(t["devices"][i]),
                               float(t["mfu"][i]), parts, run.system, run))
        t = run.tables.get(STEPS.table)
        if run.kind == "train" and t is not None and t.length and t.has(STEPS.mfu):
            # The first step warms caches and allocators: leave it out when there are others.
            rows = list(range(1, t.length)) if t.length > 1 else [0]
            med = lambda col: float(np.median([float(t[col][i]) for i in rows]))  # noqa: E731
            parts = {label: sum(med(c) for c in cols if t.has(c)) for label, _, cols in BREAKDOWN if cols}
            points.append((run.attrs.get("model", "?"), f"measured ({run.label})", str(run.attrs.get("split", "?")),
                           int(run.attrs.get("world_size", 0)), med(STEPS.mfu), parts, run.system, run))
    return points


def training_figures(runs):
    points = _training_points(runs)
    figures = []
    for model in sorted({p[0] for p in points}):
        mine = [p for p in points if p[0] == model]
        systems = sorted({p[6] for p in mine})
        # A line follows one split shape on ONE system: points of different systems are never merged.
        lines = defaultdict(dict)  # (system, kind, shape) -> devices -> best mfu
        for _, source, split, devices, mfu, _, system, _ in mine:
            key = (system, "measured" if source.startswith("measured") else "projected", _split_shape(split))
            lines[key][devices] = max(mfu, lines[key].get(devices, 0.0))
        best = sorted(lines, key=lambda k: -max(lines[k].values()))[:8]
        where = FS.systems_and_devices(systems, [p[3] for p in mine])
        fig, ax = plt.subplots(figsize=(9, 4.4))
        rows = []
        for system, kind, shape in best:
            pts = sorted(lines[(system, kind, shape)].items())
            label = f"{kind}: {FS.short_split(shape)}"
            label = label if len(systems) == 1 else f"{FS.short_system(system)}, {label}"
            ax.plot([p[0] for p in pts], [100 * p[1] for p in pts], marker="o", ms=5 if kind == "measured" else 3.5,
                    ls="-" if kind == "measured" else "--", label=label)
            rows += [[system, kind, shape, str(d), f"{100 * m:.2f}"] for d, m in pts]
        ax.set_xscale("log", base=2)
        counts = sorted({p[3] for p in mine})
        ax.set_xticks(counts)
        ax.set_xticklabels([str(d) for d in counts])
        ax.minorticks_off()
        ax.set_xlabel("devices")
        ax.set_ylabel("MFU (%, axis 0-100; measured: median step after the first)")
        FS.mfu_axis(ax, values_pct=[100 * p[4] for p in mine])
        lines_said = "one line" if len(best) == 1 else f"the {len(best)} best lines"
        FS.title(fig, f"{model} on {where}: MFU against devices ({lines_said})")
        ax.grid(True, alpha=0.3)
        FS.legend_beside(ax, title="source: split (without dp)")
        fig.tight_layout()
        figures.append(Figure(f"mfu_{model}", fig, f"{model}: MFU against device count, one line per system and split "
                              "shape (the split without its data-parallel degree and micro-batch count, which grow "
                              "with the devices); solid: measured (median over steps after the first), dashed: "
                              "projected; each point is one device count. Systems: " + "; ".join(systems) + ".",
                              (["system", "source", "split", "devices", "MFU %"], rows)))
        # Runs without a breakdown (an imported training log has only the step time) have no
        # bar to draw; a model with none of its runs broken down gets no breakdown figure.
        broken_down = [p for p in mine if any(math.isfinite(v) and v > 0 for v in p[5].values())]
        if not broken_down:
            continue
        top = sorted(broken_down, key=lambda p: -p[4])[:12]
        fig, ax = plt.subplots(figsize=(9, 0.42 * len(top) + 1.8))
        labels = stacked_breakdown(ax, [f"{FS.short_split(p[2])} ({p[1].split(' ')[0]}" +
                                        ("" if len(systems) == 1 else f", {FS.short_system(p[6])}") + ")" for p in top],
                                   [p[5] for p in top])
        ax.invert_yaxis()
        ax.set_xlabel("seconds per step")
        FS.title(fig, f"{model} on {where}: step-time breakdown, the {len(top)} best by MFU")
        FS.legend_beside(ax, title="part of the step")
        fig.tight_layout()
        rows = [[p[6], p[1], p[2], str(p[3]), f"{100 * p[4]:.2f}"] + [_fmt(p[5].get(lab, 0.0)) for lab in labels]
                for p in top]
        figures.append(Figure(f"breakdown_{model}", fig, f"{model}: compute, exposed communication per group and "
                              "pipeline bubble per step, stacked (projections: the bottleneck pipeline stage, the busiest; "
                              "every stage is in the file's projection_stages table; measured runs cannot split PP "
                              "communication from the bubble).",
                              (["system", "source", "split", "devices", "MFU %"] + labels, rows)))
    figures += sweep_figures(runs)
    return figures


def sweep_figures(runs):
    """One bar chart per `ibt sweep`: MFU of every split it trained, PP splits hatched."""
    sweeps = defaultdict(list)  # (file, command line) -> [(split, mfu, run)]
    for model, source, split, devices, mfu, _, system, run in _training_points(runs):
        if run.kind == "train" and "sweep_index" in run.attrs:
            sweeps[(run.file, str(run.attrs.get("command_line", "")), model, system)].append((split, mfu, run))
    figures = []
    for n, ((file, command, model, system), pts) in enumerate(sorted(sweeps.items())):
        pts.sort(key=lambda p: -p[1])
        fig, ax = plt.subplots(figsize=(9, 0.36 * len(pts) + 1.6))
        pp = [_uses_pp(p[0]) for p in pts]
        for uses, colour, hatch in ((False, NO_PP_COLOUR, None), (True, PP_COLOUR, PP_HATCH)):
            idx = [i for i, u in enumerate(pp) if u == uses]
            if idx:
                ax.barh(idx, [100 * pts[i][1] for i in idx], color=colour, hatch=hatch, edgecolor="white")
        ax.set_yticks(range(len(pts)))
        ax.set_yticklabels([FS.short_split(p[0]) + ("  [PP]" if u else "") for p, u in zip(pts, pp)])
        ax.invert_yaxis()
        ax.set_xlabel("MFU (%, median over steps after the first; axis 0-100)")
        FS.mfu_axis(ax, axis="x", values_pct=[100 * p[1] for p in pts])
        where = FS.systems_and_devices([system], [int(p[2].attrs.get("world_size", 0) or 0) for p in pts])
        FS.title(fig, f"sweep of {model} on {where} ({file})")
        FS.legend_beside(ax, [matplotlib.patches.Patch(color=NO_PP_COLOUR),
                              matplotlib.patches.Patch(facecolor=PP_COLOUR, hatch=PP_HATCH)], ["no PP", "uses PP"])
        ax.grid(True, axis="x", alpha=0.3)
        fig.tight_layout()
        rows = [[str(i + 1), p[0], "yes" if u else "no", f"{100 * p[1]:.2f}", p[2].label] for i, (p, u) in
                enumerate(zip(pts, pp))]
        figures.append(Figure(f"sweep_{file}_{n}", fig, f"MFU by split of one `ibt sweep` ({command}); splits "
                              "using pipeline parallelism are red and hatched.",
                              (["rank", "split", "PP", "MFU %", "run"], rows)))
    return figures
