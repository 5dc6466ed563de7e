#!/usr/bin/python3
"""Renders ibt results files as one self-contained HTML page (ibt report).

    render_report.py --out DIR [--title T] [--command-line C] -- FILE.h5 [FILE2.h5 ...]
    render_report.py --out DIR --compare [--tolerance 0.1] -- A.h5 B.h5   (compare.py says how)

Writes DIR/index.html with every figure inlined as a base64 PNG (the page needs no
network and no other file), and each figure as DIR/<name>.png and DIR/<name>.svg.
A small inline script marks, in the element #ibt-render-status, how many figures the
browser decoded and any script error, so a headless browser can check the page.
Exit status: 0 written, 2 bad input (one line on stderr naming the file).
"""
import argparse
import base64
import html
import io
import os
import re
import sys
import time

sys.dont_write_bytecode = True  # keep the source tree clean: no __pycache__ beside the scripts
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare as C  # noqa: E402
import crossover_experiment as XO  # noqa: E402
import figure_style as FS  # noqa: E402
import figures as F  # noqa: E402
import scaling_figures as S  # noqa: E402
import verdict_figures as V  # noqa: E402
from ibt_h5 import InputError, load_runs  # noqa: E402

import matplotlib  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402

STYLE = """
body{font-family:system-ui,sans-serif;margin:2em;max-width:1400px;color:#222}
h1{font-size:1.5em} h2{border-bottom:1px solid #ccc;padding-bottom:.2em;margin-top:2em}
table{border-collapse:collapse;font-size:12px;margin:.5em 0 1.5em}
td,th{border:1px solid #ddd;padding:2px 6px;text-align:left} th{background:#f4f4f4}
figure{margin:1em 0} figcaption{font-size:13px;color:#444;max-width:1100px}
img.fig{max-width:100%;border:1px solid #eee}
.status-complete,.PASS,.same,.faster,.higher{color:#176b1a;font-weight:600}
.status-failed,.FAIL,.slower,.lower{color:#b00020;font-weight:700}
.status-partial,.status-running,.status-interrupted{color:#b36b00;font-weight:700}
.absent{background:#fff8e1;border-left:4px solid #f0b400;padding:.5em 1em}
details{margin:.3em 0} pre{white-space:pre-wrap;font-size:12px;background:#fafafa;padding:.5em}
.scroll{max-height:320px;overflow:auto;display:inline-block}
"""

# Counts decoded figures and script errors; the browser test reads #ibt-render-status.
CHECK_SCRIPT = """
window.ibtErrors = [];
window.addEventListener('error', function (e) { window.ibtErrors.push(String(e.message || e)); }, true);
window.addEventListener('load', function () {
  var imgs = document.querySelectorAll('img.fig');
  var ok = 0;
  for (var i = 0; i < imgs.length; i++) if (imgs[i].complete && imgs[i].naturalWidth > 0) ok++;
  var s = document.getElementById('ibt-render-status');
  s.setAttribute('data-figures', String(imgs.length));
  s.setAttribute('data-rendered', String(ok));
  s.setAttribute('data-errors', String(window.ibtErrors.length));
  s.textContent = (ok === imgs.length && window.ibtErrors.length === 0 ? 'render-ok' : 'render-failed') +
      ' ' + ok + '/' + imgs.length + ' figures' + (window.ibtErrors.length ? ': ' + window.ibtErrors.join('; ') : '');
});
"""

e = html.escape


def slug(name):
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name)


class Page:
    def __init__(self, out_dir, title):
        self.out = out_dir
        self.title = title
        self.parts = []
        self.count = 0
        self.absent = []  # notes of the sections these files have nothing for

    def add(self, text):
        self.parts.append(text)

    def table(self, header, rows, scroll=True):
        if not rows:
            return
        body = "".join("<tr>" + "".join(self._cell(c) for c in r) + "</tr>" for r in rows)
        t = "<table><tr>" + "".join(f"<th>{e(h)}</th>" for h in header) + f"</tr>{body}</table>"
        self.add(f"<div class='scroll'>{t}</div>" if scroll and len(rows) > 12 else t)

    @staticmethod
    def _cell(c):
        c = str(c)
        cls = c if c in ("PASS", "FAIL", "same", "faster", "slower", "higher", "lower") else (
            f"status-{c}" if c in ("complete", "failed", "partial", "running", "interrupted") else "")
        return f"<td class='{cls}'>{e(c)}</td>" if cls else f"<td>{e(c)}</td>"

    def figure(self, f):
        name = slug(f.name)
        FS.tag_for_layout_check(f.fig)
        buf = io.BytesIO()
        f.fig.savefig(buf, format="png", dpi=FS.DPI)
        with open(os.path.join(self.out, name + ".png"), "wb") as png:
            png.write(buf.getvalue())
        f.fig.savefig(os.path.join(self.out, name + ".svg"))
        plt.close(f.fig)
        data = base64.b64encode(buf.getvalue()).decode("ascii")
        self.count += 1
        self.add(f"<figure id='fig-{e(name)}'><img class='fig' alt='{e(f.name)}' src='data:image/png;base64,{data}'>"
                 f"<figcaption>{e(f.caption)} <a href='{e(name)}.png'>PNG</a> <a href='{e(name)}.svg'>SVG</a>"
                 "</figcaption></figure>")
        if f.table:
            self.table(*f.table)

    def write(self):
        text = ("<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
                f"<title>{e(self.title)}</title><style>{STYLE}</style><script>{CHECK_SCRIPT}</script></head><body>"
                f"<h1>{e(self.title)}</h1><p id='ibt-render-status' data-figures='{self.count}'>not loaded</p>"
                + "".join(self.parts) + "</body></html>")
        path = os.path.join(self.out, "index.html")
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        return path


def runs_section(page, runs):
    page.add("<h2>Runs</h2>")
    bad = [r for r in runs if r.status != "complete"]
    if bad:
        page.add(f"<p class='status-failed'>{len(bad)} of {len(runs)} runs did not complete: "
                 + ", ".join(e(f"{r.file}:{r.id} ({r.status})") for r in bad) + ". Their rows are shown as stored.</p>")
    over = [r for r in runs if r.oversubscription]
    if over:
        page.add(f"<p class='status-failed'>{len(over)} run(s) were measured oversubscribed (more ranks than "
                 "cores on a host): their timings measure the scheduler, not the hardware. "
                 + ", ".join(e(f"{r.file}:{r.id} ({r.oversubscription})") for r in over) + ".</p>")
    page.table(["file", "run", "kind", "status", "system", "start", "end", "ranks", "oversubscribed", "tables",
                "error"],
               [[r.file, r.id, r.kind, r.status, r.system, r.attrs.get("start_time", ""), r.attrs.get("end_time", ""),
                 r.attrs.get("world_size", ""), r.oversubscription or ("no" if "oversubscribed" in r.attrs else "?"),
                 ", ".join(sorted(r.tables)), r.attrs.get("error", "")] for r in runs],
               scroll=False)


_progress = {"last": time.monotonic()}


def progress(what):
    """One line on stderr per part of the page as it is made: a report over many runs takes
    tens of seconds, mostly drawing figures."""
    now = time.monotonic()
    print(f"ibt report: {what} ({now - _progress['last']:.1f} s)", file=sys.stderr, flush=True)
    _progress["last"] = now


def section(page, title, figs, absent):
    """A section with its figures; one with nothing to show is not drawn: its note joins the
    list of what these files do not hold, at the end of the page."""
    progress(f"{title}: {len(figs)} figure(s)")
    if not figs:
        page.absent.append(absent)
        return
    page.add(f"<h2>{e(title)}</h2>")
    for f in figs:
        page.figure(f)


def absent_section(page):
    notes = list(dict.fromkeys(page.absent))  # once each, in page order
    if notes:
        page.add("<h2>Not in these files</h2>")
        page.add("<ul class='absent'>" + "".join(f"<li>{e(a)}</li>" for a in notes) + "</ul>")


def provenance_section(page, runs, command_line):
    page.add("<h2>Provenance</h2>")
    if command_line:
        page.add(f"<p>This page: <code>{e(command_line)}</code>, matplotlib {e(matplotlib.__version__)}.</p>")
    keys = ("command_line", "ibt_version", "git_commit", "hosts", "ranks_per_host", "cores_per_host",
            "oversubscribed", "oversubscription", "backend", "mpi_library",
            "mpi_standard", "domains", "domain_method", "model", "topology", "reference")
    for r in runs:
        rows = [[k, r.attrs[k]] for k in keys if k in r.attrs]
        rows += [[k, v] for k, v in sorted(r.attrs.items()) if k not in keys and k not in ("kind", "status")
                 and not k.endswith("_json")]
        page.add(f"<details><summary>{e(r.label)} - {e(r.kind)} - <span class='status-{e(r.status)}'>"
                 f"{e(r.status)}</span> - {e(str(r.attrs.get('command_line', '')))}</summary>")
        page.table(["attribute", "value"], rows, scroll=False)
        if r.environment:
            page.table(["environment", "value"], sorted(r.environment.items()), scroll=False)
        page.add("</details>")


def render(files, out, title, command_line, experiments=()):
    runs = [run for path in files for run in load_runs(path)]
    page = Page(out, title or "ibt report: " + ", ".join(os.path.basename(f) for f in files))
    page.add(f"<p>{len(runs)} runs from {len(files)} file(s): {e(', '.join(files))}.</p>")
    runs_section(page, runs)
    section(page, "Collectives: bus bandwidth", F.busbw_figures(runs), "No collectives tables in these files.")
    section(page, "Collectives: small-message latency", F.latency_figure(runs), "No collectives tables in these files.")
    section(page, "Point-to-point matrix", F.p2p_figures(runs), "No p2p_matrix tables in these files.")
    section(page, "Acceptance", F.accept_figures(runs), "No accept runs in these files.")
    section(page, "Training: MFU and step time", F.training_figures(runs),
            f"No training runs in these files ({F.TRAINING_SOURCES}).")
    gens = S.generation_lines(runs)
    figs = S.scaling_figures(runs)
    progress(f"Scaling: {len(figs)} figure(s)")
    if gens or figs:
        page.add("<h2 id='scaling'>Scaling: MFU against devices per hardware generation</h2>")
    if gens:
        page.add("<p>One line per hardware generation (system and model; scaling mode in brackets): MFU of the "
                 "best split at each device count.</p>")
        page.table(["system · model (scaling)", "devices: MFU"], gens, scroll=False)
    if not figs:
        page.absent.append("No scaling runs in these files (ibt scaling).")
    for f in figs:
        page.figure(f)
    section(page, "Generation comparison: one model, split and batch across systems", S.generation_figures(runs),
            "No model, split, device count and batch projected on two or more systems in these files.")
    section(page, "Pipeline-parallel crossover", V.crossover_figures(runs), "No crossover runs in these files.")
    section(page, "Is pipeline parallelism still needed? The atlas", V.atlas_figures(runs),
            "No atlas runs in these files (ibt crossover --atlas).")
    for folder in experiments:  # scripts/cluster/crossover_experiment.sh output folders
        figs, summary = XO.experiment_figures(folder)
        page.add(f"<h2>Pipeline-parallel crossover, measured and projected ({e(folder)})</h2>")
        page.table(*summary, scroll=False)
        for f in figs:
            page.figure(f)
    absent_section(page)
    provenance_section(page, runs, command_line)
    return page.write()


# ---- --compare (compare.py) ----

def compare(files, out, title, command_line, tol):
    a_runs, b_runs = load_runs(files[0]), load_runs(files[1])
    points = C.all_points(a_runs, b_runs)
    an, bn = os.path.basename(files[0]), os.path.basename(files[1])
    page = Page(out, title or f"ibt compare: {an} (A) vs {bn} (B)")
    page.add(f"<p>A = {e(files[0])}, B = {e(files[1])}. Compared: collectives and p2p (per-iteration p50 time and "
             "bandwidth), train and sweep runs (median step time and MFU of the same model, split and ranks), "
             "projections (same model, split and devices), crossover grids and scaling runs (best MFU). A ratio "
             "above 1 means B is better. Verdict per series: the geometric mean of its ratios is 'faster' or "
             f"'slower' only outside 1 &plusmn; the noise band: the larger of the tolerance ({tol:g}) and the "
             "run-to-run spread of the two sides (p99/p50 - 1 of the iterations; the spread of the steps of "
             "train runs; 0 for projections, which are deterministic).</p>")
    runs_section(page, a_runs + b_runs)
    if not points:
        page.add("<p class='absent'>The two files share no configuration (collective op/scope/dtype/size, p2p size, "
                 "train model/split/ranks, projection model/split/devices, crossover cell, scaling point): nothing "
                 "to compare.</p>")
    page.add("<h2>Verdicts</h2>")
    page.table(["op or kind", "scope or model", "dtype or detail", "metric", "points", "geo-mean ratio", "verdict",
                "noise band"],
               [[g[0], g[1], g[2], g[3], str(n), f"{gm:.3f}", v, f"±{100 * band:.1f}%"]
                for g, n, gm, band, v in C.summarize(points, tol)], scroll=False)
    page.add("<h2>Ratios</h2>")
    for f in C.ratio_figures(points, tol, an, bn):
        page.figure(f)
    provenance_section(page, a_runs + b_runs, command_line)
    return page.write(), bool(points)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True)
    p.add_argument("--title", default="")
    p.add_argument("--command-line", default="")
    p.add_argument("--compare", action="store_true")
    p.add_argument("--crossover-experiment", action="append", default=[],
                   help="folder written by scripts/cluster/crossover_experiment.sh (summary.tsv, projection.tsv)")
    p.add_argument("--tolerance", type=float, default=0.1)
    p.add_argument("files", nargs="+")
    args = p.parse_args()
    os.makedirs(args.out, exist_ok=True)
    try:
        if args.compare:
            if len(args.files) != 2:
                raise InputError("--compare takes exactly two files")
            path, compared = compare(args.files, args.out, args.title, args.command_line, args.tolerance)
            if not compared:
                print(f"ibt report: error: {args.files[0]} and {args.files[1]} share nothing to compare "
                      f"(the page {path} says what each holds)", file=sys.stderr)
                return 2
        else:
            path = render(args.files, args.out, args.title, args.command_line, args.crossover_experiment)
    except InputError as err:
        print(f"ibt report: error: {err}", file=sys.stderr)
        return 2
    print(f"ibt report: wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
