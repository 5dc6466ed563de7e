"""How every figure of the report is laid out so it can be published as drawn.

- Text: nothing below MIN_FONT_PT points. The page shows each figure as a PNG of DPI dots
  per inch at its natural size when the page is at least CHECK_WINDOW_PX wide (no figure is
  wider than MAX_WIDTH_IN), so MIN_FONT_PT is at least MIN_TEXT_PX pixels on screen.
- Legends: beside the plot (right of the axes), never inside it, so no legend covers data.
- SVG ids: every axes, its plot area, its data and its legend carry an id
  (ibt-axes-N, ibt-frame-N, ibt-data-N-K, ibt-legend-N) so the browser check
  (tests/reports/html/figure_layout_check.py) can measure what the reader sees; text stays
  text in the SVG (svg.fonttype none) so its size can be read too.
"""
import re
import textwrap

import matplotlib
from matplotlib import ticker

DPI = 110
CHECK_WINDOW_PX = 1280
MAX_WIDTH_IN = 11.0  # 1,210 px at DPI: inside a 1,280-px window's 1,216-px page column
MIN_TEXT_PX = 10
MIN_FONT_PT = 8.0  # 12.2 px at DPI

matplotlib.rcParams.update({
    "font.size": 9, "axes.titlesize": 10, "figure.titlesize": 10.5, "axes.labelsize": 9,
    "xtick.labelsize": MIN_FONT_PT + 0.5, "ytick.labelsize": MIN_FONT_PT + 0.5, "legend.fontsize": MIN_FONT_PT + 0.5,
    "legend.title_fontsize": 9, "svg.fonttype": "none",
})


def wrap(label, width=36):
    """A legend label broken into lines of at most `width` characters, so a legend beside
    the plot does not take the figure's width."""
    return "\n".join(textwrap.wrap(str(label), width)) or str(label)


def legend_beside(ax, handles=None, labels=None, title=None, width=36):
    """The legend right of ax's plot area, top-aligned, its labels wrapped."""
    if handles is None:
        handles, labels = ax.get_legend_handles_labels()
    if not handles:
        return None
    return ax.legend(handles, [wrap(lab, width) for lab in labels], title=title, loc="upper left",
                     bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0, frameon=False)


def systems_and_devices(systems, devices, unit="device"):
    """'dgx-h100, 8-64 devices' for a title: the systems by name and the device (or rank) count or range."""
    systems = list(dict.fromkeys(str(s) for s in systems))  # in the caller's order (by speed, where it matters)
    devices = sorted({int(d) for d in devices if int(d) > 0})
    names = [short_system(s) for s in systems]
    on = systems[0] if len(systems) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
    if not devices:
        return on
    count = (f"{devices[0]} {unit}" + ("s" if devices[0] > 1 else "")) if len(devices) == 1 else \
        f"{devices[0]}-{devices[-1]} {unit}s"
    return f"{on}, {count}"


def tag_for_layout_check(fig):
    """Give the figure's axes, plot areas, data and legends the SVG ids the browser check
    reads. Artists that already carry an id (the verdict squares) keep theirs."""
    for i, ax in enumerate(fig.axes):
        if ax.get_gid() is None:
            ax.set_gid(f"ibt-axes-{i}")
        ax.patch.set_gid(f"ibt-frame-{i}")
        for k, artist in enumerate([*ax.lines, *ax.patches, *ax.collections, *ax.images, *ax.texts]):
            if artist.get_gid() is None:
                artist.set_gid(f"ibt-data-{i}-{k}")
        legend = ax.get_legend()
        if legend is not None:
            legend.set_gid(f"ibt-legend-{i}")
    for j, legend in enumerate(fig.legends):
        legend.set_gid(f"ibt-legend-figure-{j}")


def legend_below(fig, handles, labels, width=40, title=None, groups=None):
    """Legends for every panel of a figure, under the panels, their tops aligned: one
    (handles, labels), or `groups` [(handles, labels, title)] side by side. The figure
    grows by the tallest legend's height and the panels are laid out above it."""
    groups = [g for g in (groups or [(handles, labels, title)]) if g[0]]
    if not groups:
        fig.tight_layout()
        return []
    share = fig.get_figwidth() / len(groups)
    made = []
    for hs, labs, heading in groups:
        wrapped = [wrap(lab, width) for lab in labs]
        widest = max(len(line) for lab in wrapped for line in lab.split("\n"))
        # A column is about the handle (0.7 in) and the widest line at ~0.07 in a character.
        ncol = max(1, min(len(labs), int(share // (0.7 + 0.07 * widest))))
        made.append((hs, wrapped, heading, ncol))
    renderer = fig.canvas.get_renderer()
    tallest = 0.0
    for hs, labs, heading, ncol in made:  # measured, then placed once the figure has its height
        probe = fig.legend(hs, labs, title=heading, ncol=ncol, frameon=False)
        tallest = max(tallest, probe.get_window_extent(renderer).height / fig.dpi + 0.1)
        probe.remove()
    fig.set_figheight(fig.get_figheight() + tallest)
    top = tallest / fig.get_figheight()
    legends = [fig.legend(hs, labs, title=heading, ncol=ncol, frameon=False, loc="upper center",
                          bbox_to_anchor=((n + 0.5) / len(made), top)) for n, (hs, labs, heading, ncol) in enumerate(made)]
    fig.tight_layout(rect=(0, top, 1, 1))
    return legends


def title(fig, text):
    """The figure's title over all its panels, wrapped to the figure's width (tight_layout
    keeps it inside the picture)."""
    fig.suptitle(wrap(text, int(fig.get_figwidth() * 10.5)))


def short_split(split):
    """A split label as a reader scans it: 'dp16 tp1 pp1 ep1 vpp1 m128 b1 1f1b zero2
    recompute=none' -> 'dp16 m128 zero2'; degree-1 parallelisms, the default micro-batch
    size and recompute, and the schedule of a split without PP left out (the tables under
    each figure keep the full label)."""
    words = str(split).split()
    pp = next((int(w[2:]) for w in words if re.fullmatch(r"pp\d+", w)), 1)
    out = []
    for i, w in enumerate(words):
        if re.fullmatch(r"(tp|pp|ep|cp|vpp)1|b1|recompute=none", w):
            continue
        if pp == 1 and i > 0 and re.fullmatch(r"b\d+", words[i - 1]):
            continue  # the schedule word follows the micro-batch size
        out.append(w)
    return " ".join(out) or "data parallel only"


def short_system(system):
    """'dgx-h100 (NVIDIA H100 SXM5 80GB)' -> 'dgx-h100': the topology's name alone."""
    return str(system).split(" (")[0]


def series_colours(labels):
    """label -> colour, the same in every panel of a figure (matplotlib's own cycle restarts
    per panel, so one run would change colour between panels)."""
    cycle = matplotlib.rcParams["axes.prop_cycle"].by_key()["color"]
    return {label: cycle[i % len(cycle)] for i, label in enumerate(sorted(set(labels)))}


def merged_handles(axes):
    """The legend entries of several panels, each label once, in first-seen order."""
    handles, labels = [], []
    for ax in axes:
        for h, lab in zip(*ax.get_legend_handles_labels()):
            if lab not in labels:
                handles.append(h)
                labels.append(lab)
    return handles, labels


def panel_width(panels, legend_in=0.0, widest=4.2):
    """Inches per panel so `panels` panels (and a legend beside them) fit MAX_WIDTH_IN."""
    return min(widest, (MAX_WIDTH_IN - legend_in) / max(1, panels))


def plain_number(value):
    """A tick's number as a reader writes it: 0.8, 2, 6,000, 20,000 (never 2e+04)."""
    if value == 0:
        return "0"
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    return f"{value:.6g}"


def plain_log_ticks(axis):
    """A log axis labelled with plain numbers (0.8, 2, 6,000, 20,000), not powers of ten
    (6 x 10^3) nor exponents (2e+04); minor ticks are labelled only where the axis spans
    little more than a decade (matplotlib's LogFormatter decides which; the number is ours)."""
    which = ticker.LogFormatter(labelOnlyBase=False, minor_thresholds=(1, 0.4))

    def label(value, pos=None):
        return plain_number(value) if which(value, pos) else ""

    # LogFormatter learns the axis' span (which minors to label) through set_axis/locs.
    class Plain(ticker.Formatter):
        def set_axis(self, ax):
            super().set_axis(ax)
            which.set_axis(ax)

        def set_locs(self, locs):
            which.set_locs(locs)

        def __call__(self, value, pos=None):
            return label(value, pos)

    axis.set_major_formatter(Plain())
    axis.set_minor_formatter(Plain())


# An MFU axis spans 0-100% (MFU is a share of the peak): drawn on an auto-scaled axis, a
# weak-scaling line that moves from 56.775% to 56.750% looks like a steep fall. Where a
# figure needs a window instead it must say so in its label and span at least
# MFU_MIN_SPAN_POINTS: the 80% validation band of a projection is about +-10-20% of its MFU
# (topologies/validation/bands.json), 5-10 points at 50% MFU, so a narrower window draws
# differences inside the band as trends. tests/reports/html/figure_layout_check.py fails a
# figure whose MFU axis is narrower.
MFU_MIN_SPAN_POINTS = 20.0


def mfu_axis(ax, axis="y", values_pct=()):
    """Fix an MFU axis to 0-100% (beyond 100 only if a value is, which would be a defect the
    reader should see) and say so in its label."""
    top = max([100.0, *[v for v in values_pct if v == v]])
    if axis == "y":
        ax.set_ylim(0, top)
        ax.yaxis.set_major_locator(ticker.MultipleLocator(20))
    else:
        ax.set_xlim(0, top)
        ax.xaxis.set_major_locator(ticker.MultipleLocator(20))
