"""The measured PP crossover against its projection (scripts/cluster/crossover_experiment.sh).

That script leaves, in its output folder, summary.tsv (per link rate: the measured best
split without and with PP, their MFU and the winner, then the same splits projected on a
topology calibrated from that rate's collectives, the projected winner and whether it
matches) and projection.tsv (per sweep run: measured and projected step time and MFU).
This draws, per rate, measured against projected MFU of every split, and tabulates both
files. Bad or missing files raise InputError naming the file.
"""
import csv
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

import figure_style as FS  # noqa: E402
from figures import Figure  # noqa: E402
from ibt_h5 import InputError  # noqa: E402

PROJECTION_COLUMNS = ("rate", "run", "split", "pp", "measured_s_per_step", "measured_mfu", "projected_step_s",
                      "projected_mfu")
SUMMARY_COLUMNS = ("rate", "best_without_pp", "mfu_without_pp", "best_with_pp", "mfu_with_pp", "winner",
                   "projected_winner", "matches")


def _read_tsv(path, needed):
    try:
        with open(path, newline="") as f:
            rows = list(csv.DictReader(f, delimiter="\t"))
    except OSError as err:
        raise InputError(f"{path}: cannot read ({err.strerror})")
    if not rows:
        raise InputError(f"{path}: no rows")
    missing = [c for c in needed if c not in rows[0]]
    if missing:
        raise InputError(f"{path}: lacks column(s) {', '.join(missing)} (written by an older "
                         "crossover_experiment.sh? rerun it with --project-only)")
    return rows


def _num(path, row, key):
    try:
        return float(row[key])
    except (TypeError, ValueError):
        raise InputError(f"{path}: column {key} holds '{row[key]}', not a number")


def _short(split):
    """'dp1 tp1 pp2 ep1 vpp2 m4 b1 interleaved recompute=none' -> 'pp2 vpp2 interleaved'."""
    words = [w for w in split.split() if not (w in ("ep1", "vpp1", "b1", "recompute=none") or
                                              (w[:2] in ("dp", "tp", "pp") and w[2:] == "1"))]
    return " ".join(w for w in words if not w.startswith("m") or not w[1:].isdigit())


def experiment_figures(folder):
    """Figures and tables of one crossover experiment folder."""
    proj_path = os.path.join(folder, "projection.tsv")
    sum_path = os.path.join(folder, "summary.tsv")
    proj = _read_tsv(proj_path, PROJECTION_COLUMNS)
    summary = _read_tsv(sum_path, SUMMARY_COLUMNS)
    rates = [r["rate"] for r in summary]
    figures = []
    fig, axes = plt.subplots(1, len(rates), figsize=(FS.panel_width(len(rates), widest=4.5) * len(rates), 4.2),
                             squeeze=False)
    for ax, srow in zip(axes[0], summary):
        rate = srow["rate"]
        runs = sorted((r for r in proj if r["rate"] == rate), key=lambda r: (r["pp"] == "PP", r["split"]))
        if not runs:
            raise InputError(f"{proj_path}: no run of rate {rate}, which {sum_path} names")
        measured = np.array([_num(proj_path, r, "measured_mfu") for r in runs])
        projected = np.array([_num(proj_path, r, "projected_mfu") for r in runs])
        x = np.arange(len(runs))
        ax.bar(x - 0.2, measured, 0.4, label="measured")
        ax.bar(x + 0.2, projected, 0.4, label="projected")
        best = {srow["best_without_pp"], srow["best_with_pp"]}
        ax.set_xticks(x)
        ax.set_xticklabels([("* " if r["split"] in best else "") + _short(r["split"]) for r in runs],
                           rotation=40, ha="right")
        ax.set_ylabel("MFU %")
        ax.set_title(FS.wrap(f"{rate}: measured winner {srow['winner']}, projected {srow['projected_winner']}", 40))
    FS.legend_below(fig, *FS.merged_handles(axes[0]))
    rows = [[r["rate"], r["split"], r["pp"], r["measured_s_per_step"], r["projected_step_s"], r["measured_mfu"],
             r["projected_mfu"]] for r in proj]
    figures.append(Figure("crossover_experiment_mfu", fig,
                          "Measured (ibt sweep on the emulated cluster) against projected MFU of every split, per "
                          "link rate; * marks the measured best split without and with PP. Projected MFU = measured "
                          "MFU x measured / projected step time (same model FLOPs and per-rank peak).",
                          (["rate", "split", "PP", "measured s/step", "projected s/step", "measured MFU %",
                            "projected MFU %"], rows)))
    header = list(summary[0].keys())
    return figures, (header, [[r[k] for k in header] for r in summary])
