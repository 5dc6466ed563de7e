"""The report's answers to "is pipeline parallelism needed?": `ibt crossover` grids
(table "crossover") and atlases (table "atlas").

Every colour, table cell and caption count here is the verdict ibt stored beside the gain
(column "verdict", written by pp_verdict() in topologies/studies/verdict.hpp); nothing
here compares the gain with the threshold again, so the page cannot disagree with the CLI
or the HDF5 file. Each heat-map square is drawn with an SVG id naming its cell and its
verdict (verdict-cell_<row>_<column>_<verdict>), so a test can read the picture's data.
"""
import math
import re
from collections import Counter

import matplotlib

matplotlib.use("Agg")
import matplotlib.patches  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402

import figure_style as FS  # noqa: E402
from figures import Figure, _fmt  # noqa: E402

# One colour per verdict; a file written before the verdict column has none to show.
VERDICT_COLOURS = {"PP needed": "#d73027", "PP not needed": "#1a9850", "within uncertainty": "#fee08b",
                   "nothing fits": "#d9d9d9"}
NOT_STORED = "verdict not stored"
RULE = ("rule (topologies/studies/verdict.hpp): PP needed when gain > threshold + u, PP not needed when "
        "gain < threshold - u, else within uncertainty; u = the gain's uncertainty on the system (ibt crossover: "
        "the error of PP gains measured on pairs of splits, topologies/validation/pp-gain-error.json)")


def cell_id(row, column, verdict):
    return "verdict-cell_" + "_".join(re.sub(r"[^A-Za-z0-9.]+", "-", str(x)) for x in (row, column, verdict))


def stored_verdicts(t):
    """The verdict column as stored, or NOT_STORED per row for files that predate it."""
    return [str(v) for v in t["verdict"]] if t.has("verdict") else [NOT_STORED] * t.length


def verdict_counts(verdicts):
    counts = Counter(verdicts)
    return ", ".join(f"{n} {v}" for v, n in counts.most_common())


def draw_verdict_grid(ax, row_labels, column_labels, cells, top_down):
    """One square per cell (row, column) -> (verdict, text), filled with its verdict's
    colour, with a legend of the verdicts drawn."""
    for (a, b), (verdict, text) in cells.items():
        ax.add_patch(matplotlib.patches.Rectangle(
            (b - 0.5, a - 0.5), 1, 1, facecolor=VERDICT_COLOURS.get(verdict, "#ffffff"), edgecolor="white",
            gid=cell_id(row_labels[a], column_labels[b], verdict)))
        ax.text(b, a, text, ha="center", va="center", fontsize=FS.MIN_FONT_PT)
    ax.set_xlim(-0.5, len(column_labels) - 0.5)
    ax.set_ylim((len(row_labels) - 0.5, -0.5) if top_down else (-0.5, len(row_labels) - 0.5))
    drawn = sorted({v for v, _ in cells.values()}, key=lambda v: list(VERDICT_COLOURS).index(v)
                   if v in VERDICT_COLOURS else len(VERDICT_COLOURS))
    ax.legend(handles=[matplotlib.patches.Patch(facecolor=VERDICT_COLOURS.get(v, "#ffffff"), edgecolor="#999",
                                                label=v) for v in drawn],
              title="verdict", loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0, frameon=False)


def _gain_text(g):
    if math.isnan(g):
        return "-"
    return "inf" if g >= 1e299 or math.isinf(g) else f"{100 * g:+.1f}%"


def _gain_with_uncertainty(t, i):
    """"+12.0% +/- 16.6" where the run stored the verdict's u (gain_uncertainty), else the gain."""
    g = _gain_text(float(t["gain"][i]))
    if not t.has("gain_uncertainty") or g in ("-", "inf"):
        return g
    return f"{g} \u00b1 {100 * float(t['gain_uncertainty'][i]):.1f}"


def forced_reasons(t):
    """Per row (decided_by, verdict_reason) where no gain decided the verdict (one side had
    no split: divisibility or memory), else ("", ""); files before the columns: ("", "")."""
    if not t.has("decided_by"):
        return [("", "")] * t.length
    return [("", "") if str(d) == "gain" else (str(d), str(w)) for d, w in zip(t["decided_by"], t["verdict_reason"])]


def crossover_figures(runs):
    figures = []
    for run in runs:
        t = run.tables.get("crossover")
        if t is None or t.length == 0:
            continue
        doms = sorted(set(int(x) for x in t["domain_size"]))
        bws = sorted(set(float(x) for x in t["scale_out_Gbps"]))
        verdicts = stored_verdicts(t)
        forced = forced_reasons(t)
        cells = {}
        for i in range(t.length):
            a, b = doms.index(int(t["domain_size"][i])), bws.index(float(t["scale_out_Gbps"][i]))
            # A verdict no gain decided shows what did (divisibility or memory), not a gain.
            what = forced[i][0] if forced[i][0] else _gain_with_uncertainty(t, i)
            cells[(a, b)] = (verdicts[i], f"{what}\n{verdicts[i]}")
        fig, ax = plt.subplots(figsize=(1.5 * len(bws) + 3.6, 0.8 * len(doms) + 1.8))
        thr = float(run.attrs.get("threshold", 0.05))
        # The gain is of MFU or of goodput-adjusted MFU (ibt crossover --rank-by).
        basis = str(run.attrs.get("rank_by", "MFU"))
        draw_verdict_grid(ax, doms, [f"{b:g}" for b in bws], cells, top_down=False)
        ax.set_xticks(range(len(bws)))
        ax.set_xticklabels([f"{b:g}" for b in bws])
        ax.set_yticks(range(len(doms)))
        ax.set_yticklabels([str(d) for d in doms])
        ax.set_xlabel("scale-out Gb/s per device")
        ax.set_ylabel("devices per scale-up domain")
        where = FS.systems_and_devices([run.system], [int(run.attrs.get("world_size", 0) or 0)])
        FS.title(fig, f"{run.attrs.get('model', '?')} on {where}: PP crossover on {basis} ({run.label})")
        fig.tight_layout()
        rows = [[str(t["domain_size"][i]), _fmt(float(t["scale_out_Gbps"][i])), f"{100 * float(t['mfu_no_pp'][i]):.1f}",
                 f"{100 * float(t['mfu_with_pp'][i]):.1f}",
                 forced[i][1] if forced[i][0] else _fmt(float(t["gain"][i]), 3), verdicts[i],
                 t["split_no_pp"][i], t["split_with_pp"][i]]
                for i in range(t.length)]
        header = ["domain", "Gb/s", "MFU no PP %", "MFU PP %", "gain", "verdict", "best PP=1", "best PP>1"]
        # The verdict's uncertainty u beside the gain (files before gain_uncertainty have none).
        if t.has("gain_uncertainty"):
            header.insert(5, "u (gain points)")
            for i, row in enumerate(rows):
                row.insert(5, f"\u00b1{100 * float(t['gain_uncertainty'][i]):.1f}")
        # Goodput-adjusted MFU beside MFU when the run computed it (NaN otherwise).
        if t.has("goodput_mfu_no_pp") and not all(math.isnan(float(x)) for x in t["goodput_mfu_no_pp"]):
            header[4:4] = ["goodput-adj. MFU no PP %", "goodput-adj. MFU PP %"]
            for i, row in enumerate(rows):
                row[4:4] = [f"{100 * float(t['goodput_mfu_no_pp'][i]):.1f}", f"{100 * float(t['goodput_mfu_with_pp'][i]):.1f}"]
        stored = ("" if t.has("verdict") else " This file predates the stored verdict: its cells show the gain only.")
        figures.append(Figure(f"crossover_{run.file}_{run.id}", fig,
                              f"Verdict per fabric on the gain from pipeline parallelism in {basis} (threshold "
                              f"{thr:g}; {RULE}). Each square is one fabric: the system's scale-up domain "
                              "resized to the row's device count and its scale-out network set to the column's Gb/s "
                              "per device; its text is the gain (best MFU with PP / best without - 1) and the "
                              "verdict. The crossover frontier is where the colours change: fabrics on the red side "
                              "need PP, on the green side they do not. "
                              + (f"{run.attrs['uncertainty'].strip()} " if "uncertainty" in run.attrs else "")
                              + f"Cells: {verdict_counts(verdicts)}. "
                              f"Verdict: {run.attrs.get('verdict', '?')}.{stored}",
                              (header, rows)))
    return figures


def atlas_figures(runs):
    """`ibt crossover --atlas` runs (table "atlas"): per model and system the stored
    verdict (its colour) with the gain and the agreement with published practice, and the
    whole table (bests with their MFU bands, the part of the step that decides)."""
    figures = []
    for run in runs:
        t = run.tables.get("atlas")
        if t is None or t.length == 0:
            continue
        models = list(dict.fromkeys(str(x) for x in t["model"]))
        systems = list(dict.fromkeys(str(x) for x in t["topology"]))
        verdicts = stored_verdicts(t)
        cells = {}
        for i in range(t.length):
            a, b = models.index(str(t["model"][i])), systems.index(str(t["topology"][i]))
            gain = "" if verdicts[i] == "nothing fits" else _gain_text(float(t["gain"][i])) + "\n"
            cells[(a, b)] = (verdicts[i], f"{gain}{verdicts[i]}\n{t['agreement'][i]}")
        thr = float(run.attrs.get("threshold", 0.05))
        fig, ax = plt.subplots(figsize=(1.9 * len(systems) + 3.5, 1.1 * len(models) + 1.5))
        draw_verdict_grid(ax, models, systems, cells, top_down=True)
        ax.set_xticks(range(len(systems)))
        ax.set_xticklabels(systems, rotation=20)
        ax.set_yticks(range(len(models)))
        ax.set_yticklabels(models)
        scale = FS.systems_and_devices([f"{len(systems)} systems"], [int(x) for x in t["devices"]])
        FS.title(fig, f"Is pipeline parallelism still needed? {len(models)} models on {scale} ({run.label})")
        fig.tight_layout()

        def band(i, side):
            v, lo_, hi_ = (float(t[f"mfu_{side}"][i]), float(t[f"mfu_{side}_low"][i]), float(t[f"mfu_{side}_high"][i]))
            if math.isnan(v):
                return "(none fits)"
            return f"{100 * v:.1f} ({100 * lo_:.1f}-{100 * hi_:.1f})" if not math.isnan(lo_) else f"{100 * v:.1f} (no band)"

        header = ["model", "system", "devices x batch", "scale", "MFU with PP % (band)", "best with PP",
                  "MFU without PP % (band)", "best without PP", "gain", "verdict", "practice", "agreement",
                  "deciding term", "why"]
        rows = [[t["model"][i], t["topology"][i], f"{int(t['devices'][i])} x {int(t['global_batch'][i])}",
                 f"{t['scale'][i]} ({t['scale_source'][i]})", band(i, "with_pp"), t["split_with_pp"][i],
                 band(i, "no_pp"), t["split_no_pp"][i], _fmt(float(t["gain"][i]), 3), verdicts[i],
                 f"{t['practice'][i]} ({t['practice_source'][i]})", t["agreement"][i], t["deciding_term"][i],
                 t["why"][i]] for i in range(t.length)]
        figures.append(Figure(f"atlas_{run.file}_{run.id}", fig,
                              "Verdict on the gain from pipeline parallelism (best MFU with PP / best without - 1) "
                              f"per model and system at a published or stated scale and batch (threshold {thr:g}; "
                              f"{RULE}), with its agreement with published practice. Cells: "
                              f"{verdict_counts(verdicts)}. Sources: the run's atlas_json attribute.",
                              (header, rows)))
    return figures
