"""Figures comparing hardware generations: `ibt scaling` runs (MFU and tokens/s per
device against devices, one line per system) and the generation comparison (the same
model, split, device count and batch projected on several topologies).

Colours of breakdown components come from figures.COMPONENT_COLOURS, as everywhere.
"""
import math
from collections import defaultdict

import matplotlib.pyplot as plt

import figure_style as FS
from figures import BREAKDOWN, Figure, _fmt, projection_parts, stacked_breakdown
from ibt_tables import Columns

SCALE = Columns("scaling")  # the scaling table's column names, from its C++ schema
PROJ = Columns("projections")

# The scaling table's breakdown columns per component label (figures.BREAKDOWN's labels).
SCALING_PARTS = (("compute", (SCALE.compute_s,)), ("TP comm", (SCALE.exposed_tp_s,)),
                 ("DP comm", (SCALE.exposed_dp_s, SCALE.exposed_expert_dp_s)), ("EP comm", (SCALE.exposed_ep_s,)),
                 ("PP comm", (SCALE.exposed_pp_s,)), ("bubble", (SCALE.bubble_s,)), ("other", (SCALE.other_s,)),
                 ("CP comm", (SCALE.exposed_cp_s,)))


# Systems get colours of their own, none of them a breakdown component's
# (figures.COMPONENT_COLOURS), so a colour never means two things on one page.
SYSTEM_COLOURS = ("#1b9e77", "#e7298a", "#e6ab02", "#17becf", "#222222", "#7f7f00", "#0b3d91", "#f781bf")


def system_colour(index):
    return SYSTEM_COLOURS[index % len(SYSTEM_COLOURS)]


def _num(v):
    v = float(v)
    return None if math.isnan(v) else v


def _cell(v, form):
    """A table cell as a reader writes it (12,449 not 1.245e+04); '-' for no figure (NaN)."""
    return "-" if v is None or math.isnan(v) else form.format(v)


def _speedup_text(r):
    """"2.17x ± 0.16" (the band where the run stored one), "1.00x", or "-"."""
    x = _num(r[SCALE.speedup_vs_baseline]) if SCALE.speedup_vs_baseline in r else None
    if x is None:
        return "-"
    u = _num(r.get(SCALE.speedup_uncertainty)) if SCALE.speedup_uncertainty in r else None
    return f"{x:.2f}x" + (f" \u00b1 {u:.2f}" if u is not None else "")


def _own_split_mfu(r):
    """A measured row's projection of its own split (MFU), None where there is none (a
    projected row, a split that did not project, a file from before the column)."""
    v = r.get(SCALE.own_split_mfu)
    if v is None or not str(r[SCALE.source]).startswith("measured"):
        return None
    v = float(v)
    return v if v > 0 else None


def _scaling_rows(runs):
    """[dict] of every scaling row, with its run."""
    rows = []
    for run in runs:
        t = run.tables.get(SCALE.table)
        if t is None:
            continue
        for i in range(t.length):
            r = {c: t[c][i] for c in t.columns}
            r["run"] = run
            measured = str(r[SCALE.source]).startswith("measured")
            where = r[SCALE.system] if measured else f"{r[SCALE.topology]} ({r[SCALE.system]})"
            r["line"] = f"{where} · {r[SCALE.model]}" + (" · measured" if measured else "")
            parts = {}
            for label, cols in SCALING_PARTS:
                vals = [_num(r[c]) for c in cols if c in r]
                vals = [v for v in vals if v is not None]
                if vals:
                    parts[label] = sum(vals)
            if measured and "PP comm" in parts and "bubble" not in parts:
                parts["PP comm + bubble"] = parts.pop("PP comm")
            r["parts"] = parts
            rows.append(r)
    return rows


def _speed(rows):
    """Mean tokens/s per device of a line's feasible points (0 when none): lines and
    systems are ordered by it, slowest first, never alphabetically."""
    vals = [float(r[SCALE.tokens_per_s_per_device]) for r in rows if int(r[SCALE.feasible])]
    vals = [v for v in vals if not math.isnan(v)]
    return sum(vals) / len(vals) if vals else 0.0


def _line_label(line):
    """A scaling line's label without the model (the title names it) and with the system's
    topology name alone: 'dgx-h100', 'dgx-h100 · measured'."""
    words = str(line).split(" · ")
    return FS.short_system(words[0]) + (" · measured" if words[-1] == "measured" else "")


def scaling_figures(runs):
    rows = _scaling_rows(runs)
    figures = []
    groups = defaultdict(list)  # (model, scaling mode) -> rows
    for r in rows:
        groups[(str(r[SCALE.model]), str(r[SCALE.scaling]))].append(r)
    for (model, mode), mine in sorted(groups.items()):
        if not any(int(r[SCALE.feasible]) for r in mine):
            continue  # nothing to draw; the per-generation lines say '-' and the stored reason stays in the file
        run_labels = sorted({r["run"].label for r in mine})
        lines = defaultdict(list)
        for r in mine:
            lines[r["line"]].append(r)
        fig, (ax_mfu, ax_tok, ax_eff) = plt.subplots(1, 3, figsize=(FS.MAX_WIDTH_IN, 4))
        table = []
        efficiencies = []
        order = sorted(lines, key=lambda line: _speed(lines[line]))  # slowest generation first
        for n, line in enumerate(order):
            pts = lines[line]
            pts.sort(key=lambda r: int(r[SCALE.devices]))
            ok = [r for r in pts if int(r[SCALE.feasible])]
            style = dict(marker="o", ls="-" if "measured" in line else "--", label=_line_label(line), color=system_colour(n))
            ax_mfu.plot([int(r[SCALE.devices]) for r in ok], [100 * float(r[SCALE.mfu]) for r in ok], **style)
            # A measured point beside the projection of its own split (like for like; the
            # dashed lines are each system's best split, another question).
            own = [r for r in ok if _own_split_mfu(r) is not None]
            if own:
                ax_mfu.plot([int(r[SCALE.devices]) for r in own], [100 * _own_split_mfu(r) for r in own], marker="D",
                            mfc="none", ls=":", color=system_colour(n),
                            label=f"{_line_label(line)} (its split projected)")
            ax_tok.plot([int(r[SCALE.devices]) for r in ok], [float(r[SCALE.tokens_per_s_per_device]) for r in ok], **style)
            # Scaling efficiency: tokens/s per device against the line's smallest point, so
            # 100% is ideal scaling (weak: per-device throughput held; strong: the same).
            if ok and float(ok[0][SCALE.tokens_per_s_per_device]) > 0:
                base = float(ok[0][SCALE.tokens_per_s_per_device])
                eff = [100 * float(r[SCALE.tokens_per_s_per_device]) / base for r in ok]
                efficiencies += eff
                ax_eff.plot([int(r[SCALE.devices]) for r in ok], eff, **style)
            for r in pts:
                own_mfu = _own_split_mfu(r)
                table.append([r[SCALE.system], str(r[SCALE.source]).split(" ")[0], str(int(r[SCALE.devices])),
                              str(int(r[SCALE.global_batch])), r[SCALE.split] if int(r[SCALE.feasible]) else r[SCALE.reason],
                              _fmt(100 * float(r[SCALE.mfu]), 3), _cell(float(r[SCALE.tokens_per_s_per_device]), "{:,.0f}"),
                              _fmt(float(r[SCALE.step_s])),
                              "-" if own_mfu is None else f"{100 * own_mfu:.1f} on {r[SCALE.own_split_topology]}",
                              "-" if own_mfu is None else f"{100 * (float(r[SCALE.mfu]) / own_mfu - 1):+.1f}%",
                              _speedup_text(r), _cell(float(r[SCALE.time_to_budget_s]) / 86400, "{:.1f}"),
                              _cell(float(r[SCALE.energy_J_per_token]), "{:.3g}")])
        devices = sorted({int(r[SCALE.devices]) for r in mine if int(r[SCALE.feasible])})
        ax_eff.axhline(100, color="#888888", ls=":", lw=1.2, label="ideal scaling (100%)")
        for ax, ylabel in ((ax_mfu, "MFU (%, axis 0-100; measured: fastest step)"),
                           (ax_tok, "tokens/s per device"), (ax_eff, "scaling efficiency (%)")):
            ax.set_xscale("log", base=2)
            ax.set_xticks(devices)
            ax.set_xticklabels([str(d) for d in devices])
            ax.minorticks_off()
            ax.set_xlabel("devices")
            ax.set_ylabel(ylabel)
            ax.grid(True, which="both", alpha=0.3)
        FS.mfu_axis(ax_mfu, values_pct=[100 * float(r[SCALE.mfu]) for r in mine if int(r[SCALE.feasible])])
        # Throughput from zero, as MFU: a 0.1% change per device must not fill the panel.
        tokens = [float(r[SCALE.tokens_per_s_per_device]) for r in mine if int(r[SCALE.feasible])]
        ax_tok.set_ylim(0, max([1.0, *[t for t in tokens if t == t]]) * 1.15)
        ax_tok.yaxis.set_major_formatter(FS.ticker.FuncFormatter(lambda v, _: FS.plain_number(v)))
        ax_eff.set_ylim(0, max([110.0, *efficiencies]) * 1.05)
        # The title names the projected systems; a measured line (named by its device, e.g.
        # an imported log's GPU) is said as such rather than listed as one more system.
        labels = [_line_label(line) for line in order]
        projected = [lab for lab in labels if not lab.endswith(" · measured")]
        where = FS.systems_and_devices(projected or [lab.split(" · ")[0] for lab in labels], devices)
        measured = " with measured runs" if len(projected) < len(labels) else ""
        FS.title(fig, f"{model}, {mode} scaling on {where}{measured}: best split per point, one line per system")
        FS.legend_below(fig, *FS.merged_handles([ax_mfu, ax_eff]))
        merged = "" if len(run_labels) == 1 else f" Merged from {len(run_labels)} runs of the same model and mode."
        figures.append(Figure(f"scaling_{model}_{mode}", fig,
                              f"{model}, {mode} scaling ({'fixed global batch' if mode == 'strong' else 'fixed batch per device'}): "
                              "MFU (on 0-100%), tokens/s per device and scaling efficiency (tokens/s per device over the "
                              "line's smallest point's; dotted: ideal, 100%) of the best split at each device count; "
                              f"dashed: projected, solid: measured; hollow diamonds: the projection of a measured "
                              "run's own split, its like-for-like figure (the table's last columns: that MFU and the "
                              f"measured one's difference from it). Runs: {', '.join(run_labels)}.{merged}",
                              (["system", "source", "devices", "global batch", "best split", "MFU %",
                                "tokens/s/device", "step s", "own split projected MFU %", "measured vs own split",
                                "speed-up vs baseline", "days to token budget", "J/token"],
                               table)))
        # Breakdown per point as shares of the step, one panel per system.
        # A line without a breakdown (an imported log has only its step time) gets no panel.
        systems = [line for line in order
                   if any(int(r[SCALE.feasible]) and any(v > 0 for v in r["parts"].values()) for r in lines[line])]
        if not systems:
            continue
        fig, axes = plt.subplots(1, len(systems), figsize=(FS.panel_width(len(systems)) * len(systems), 3.6),
                                 squeeze=False, sharey=True)
        drawn = set()
        for ax, line in zip(axes[0], systems):
            ok = sorted((r for r in lines[line] if int(r[SCALE.feasible])), key=lambda r: int(r[SCALE.devices]))
            shares = [{k: v / float(r[SCALE.step_s]) for k, v in r["parts"].items()} for r in ok]
            drawn |= set(stacked_breakdown(ax, [str(int(r[SCALE.devices])) for r in ok], shares, horizontal=False))
            ax.set_title(FS.wrap(_line_label(line), 34), fontsize=FS.MIN_FONT_PT + 1)
            ax.set_xlabel("devices")
        axes[0][0].set_ylabel("share of step time (bottleneck stage)")
        FS.title(fig, f"{model}, {mode} scaling on {where}: where the step goes")
        FS.legend_below(fig, *FS.merged_handles(axes[0]))
        order = [lab for lab, _, _ in BREAKDOWN if lab in drawn]
        btable = [[r[SCALE.system], str(int(r[SCALE.devices])), r[SCALE.split], str(int(r[SCALE.breakdown_stage]))] +
                  [_fmt(r["parts"].get(lab, 0.0)) for lab in order]
                  for line in systems for r in sorted(lines[line], key=lambda r: int(r[SCALE.devices])) if int(r[SCALE.feasible])]
        figures.append(Figure(f"scaling_breakdown_{model}_{mode}", fig,
                              f"{model}, {mode} scaling: where the step goes at each point, as shares of the step time "
                              "(projections: the bottleneck pipeline stage, the busiest (least idle) one, named in the "
                              "table; measured: means over ranks).",
                              (["system", "devices", "split", "stage"] + [f"{lab} s" for lab in order], btable)))
    return figures


def generation_lines(runs):
    """The report's one line per hardware generation: [(system · model, "512: 41.2%, ...")]."""
    per = defaultdict(list)
    for r in _scaling_rows(runs):
        mfu = f"{100 * float(r[SCALE.mfu]):.1f}%" if int(r[SCALE.feasible]) else "-"
        per[r["line"] + f" ({r[SCALE.scaling]})"].append((int(r[SCALE.devices]), mfu))
    return [[k, ", ".join(f"{d}: {m}" for d, m in sorted(v))] for k, v in sorted(per.items())]


# ---- the generation comparison: one split, several systems ----

def _projection_rows(runs):
    """(model, devices, global batch) -> split -> system -> (mfu, step_s, parts), from
    `ibt project` runs (table projections) and the projected points of `ibt scaling` runs
    (table scaling: the best split of each point), so either kind of file can be compared
    across generations."""
    out = defaultdict(lambda: defaultdict(dict))
    for r in _scaling_rows(runs):
        if str(r[SCALE.source]).startswith("measured") or not int(r[SCALE.feasible]):
            continue
        system = f"{r[SCALE.topology]} ({r[SCALE.system]})"
        key = (str(r[SCALE.model]), int(r[SCALE.devices]), int(r[SCALE.global_batch]))
        out[key][str(r[SCALE.split])][system] = (float(r[SCALE.mfu]), float(r[SCALE.step_s]), r["parts"])
    for run in runs:
        t = run.tables.get(PROJ.table)
        if t is None or not t.has(PROJ.split, PROJ.mfu, PROJ.devices):
            continue
        batch = int(run.attrs.get("global_batch", 0))
        for i in range(t.length):
            if t.has(PROJ.feasible) and not int(t[PROJ.feasible][i]):
                continue
            parts, _ = projection_parts(run, t, i)
            key = (str(run.attrs.get("model", "?")), int(t[PROJ.devices][i]), batch)
            out[key][str(t[PROJ.split][i])][run.system] = (float(t[PROJ.mfu][i]), float(t[PROJ.step_s][i]), parts)
    return out


def generation_figures(runs, max_splits=6):
    figures = []
    for (model, devices, batch), splits in sorted(_projection_rows(runs).items()):
        systems = sorted({s for per in splits.values() for s in per})
        if len(systems) < 2:
            continue
        common = [sp for sp, per in splits.items() if len(per) == len(systems)]
        if not common:
            continue
        # The splits every system can run, best first by the geometric mean of their MFUs.
        score = {sp: math.exp(sum(math.log(max(v[0], 1e-12)) for v in splits[sp].values()) / len(systems))
                 for sp in common}
        chosen = sorted(common, key=lambda sp: -score[sp])[:max_splits]
        # Slowest system first (the longest mean step over the chosen splits): the baseline
        # of the step ratios, and generations read oldest to newest.
        systems.sort(key=lambda system: -sum(splits[sp][system][1] for sp in chosen))
        fig, (ax, axb) = plt.subplots(1, 2, figsize=(FS.MAX_WIDTH_IN, 0.5 * len(chosen) * len(systems) / 2 + 3.2),
                                      gridspec_kw={"width_ratios": [1, 1.3]})
        # Left: speed (the slowest system's step time over each system's, same split and batch,
        # so the same tokens per step), MFU written beside it: a newer generation can be much
        # faster at a lower MFU, which bars of MFU alone would hide.
        width = 0.8 / len(systems)
        widest = 0.0
        for j, system in enumerate(systems):
            ys = [i + j * width for i in range(len(chosen))]
            speedups = [splits[sp][systems[0]][1] / splits[sp][system][1] for sp in chosen]
            ax.barh(ys, speedups, height=width, label=system, color=system_colour(j))
            for y, speedup, sp in zip(ys, speedups, chosen):
                ax.text(speedup, y, f" {speedup:.2f}x, MFU {100 * splits[sp][system][0]:.0f}%", va="center",
                        fontsize=FS.MIN_FONT_PT)
            widest = max([widest, *speedups])
        ax.set_xlim(0, widest * 1.6)
        ax.set_yticks([i + 0.4 - width / 2 for i in range(len(chosen))])
        ax.set_yticklabels([FS.short_split(sp) for sp in chosen])
        ax.invert_yaxis()
        ax.set_xlabel(f"speed-up over {FS.short_system(systems[0])} (same tokens per step)")
        ax.grid(True, axis="x", alpha=0.3)
        labels = [f"{FS.short_split(sp)} | {FS.short_system(system)}" for sp in chosen for system in systems]
        parts = [splits[sp][system][2] for sp in chosen for system in systems]
        drawn = stacked_breakdown(axb, labels, parts)
        axb.invert_yaxis()
        axb.set_xlabel("seconds per step (stacked components)")
        FS.title(fig, f"generation comparison: {model} on {FS.systems_and_devices(systems, [devices])}, "
                      f"global batch {batch} sequences")
        FS.legend_below(fig, None, None, groups=[(*ax.get_legend_handles_labels(), "system (left)"),
                                                 (*axb.get_legend_handles_labels(), "part of the step (right)")])
        rows = [[sp, system, f"{100 * splits[sp][system][0]:.2f}", _fmt(splits[sp][system][1]),
                 _fmt(splits[sp][system][1] / splits[sp][systems[0]][1], 3)] +
                [_fmt(splits[sp][system][2].get(lab, 0.0)) for lab in drawn] for sp in chosen for system in systems]
        figures.append(Figure(f"generations_{model}_{devices}", fig,
                              f"The same model ({model}), splits, device count ({devices}) and global batch ({batch} "
                              f"sequences) projected on {len(systems)} systems: speed per split (step time of the slowest "
                              f"system, {systems[0]}, over each system's; MFU beside each bar) and where the step goes "
                              f"(breakdown of the bottleneck pipeline stage, the busiest). The {len(chosen)} "
                              "splits all systems can run with the best geometric-mean MFU (from `ibt project` and "
                              "`ibt scaling` files); step ratio is against "
                              f"{systems[0]}.",
                              (["split", "system", "MFU %", "step s", f"step / {systems[0]}"] + [f"{lab} s" for lab in drawn],
                               rows)))
    return figures

