#!/usr/bin/python3
"""make_bad_figure_page.py DIR KIND: writes DIR/index.html (and the figure's PNG and SVG)
through the report's own Page class, with one figure that breaks a layout rule, so the
test can show figure_layout_check.py fails on it:
  legend  a legend drawn in the middle of the plot, over a line's points;
  small   a tick label of 5 pt (7.6 px at the page's 110 dpi);
  cut     a title far wider than the figure;
  narrow  an MFU axis auto-scaled to 56.74-56.79% (weak scaling's noise drawn as a fall).
"""
import os
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "reports", "html"))
import matplotlib.pyplot as plt  # noqa: E402

import figure_style as FS  # noqa: E402,F401  (the report's rcParams)
from figures import Figure  # noqa: E402
from render_report import Page  # noqa: E402

out, kind = sys.argv[1], sys.argv[2]
os.makedirs(out, exist_ok=True)
fig, ax = plt.subplots(figsize=(6, 4))
xs = list(range(1, 21))
ax.plot(xs, [10 for _ in xs], marker="o", label="a line through the middle")
ax.plot(xs, xs, marker="o", label="a rising line")
if kind == "legend":
    ax.legend(loc="center")  # over the flat line's middle points
else:
    FS.legend_beside(ax)
if kind == "small":
    ax.tick_params(labelsize=5)
if kind == "narrow":
    ax.clear()
    ax.plot([8, 16, 32, 64], [56.785, 56.775, 56.760, 56.750], marker="o", label="weak scaling")
    ax.set_ylabel("MFU (%)")
    FS.legend_beside(ax)
if kind == "cut":
    ax.set_title("a title far wider than its figure, " * 4)
fig.tight_layout()
page = Page(out, f"layout check must fail: {kind}")
page.figure(Figure(f"bad_{kind}", fig, f"A figure that breaks the rule '{kind}'.", None))
page.write()
