#!/usr/bin/python3
"""Renders ibt results files as one self-contained HTML page (ibt report).

    render_report.py --out DIR [--title T] [--command-line C] -- FILE.h5 [FILE2.h5 ...]
    render_report.py --out DIR --compare [--tolerance 0.1] -- A.h5 B.h5

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
import math
import os
import re
import sys
from collections import defaultdict

sys.dont_write_bytecode = True  # keep the source tree clean: no __pycache__ beside the scripts
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import crossover_experiment as XO  # noqa: E402
import figures as F  # noqa: E402
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
.status-complete,.PASS,.same,.faster{color:#176b1a;font-weight:600}
.status-failed,.FAIL,.slower{color:#b00020;font-weight:700}
.status-partial,.status-running{color:#b36b00;font-weight:700}
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
        cls = c if c in ("PASS", "FAIL", "same", "faster", "slower") else (
            f"status-{c}" if c in ("complete", "failed", "partial", "running") else "")
        return f"<td class='{cls}'>{e(c)}</td>" if cls else f"<td>{e(c)}</td>"

    def figure(self, f):
        name = slug(f.name)
        buf = io.BytesIO()
        f.fig.savefig(buf, format="png", dpi=110)
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
    page.table(["file", "run", "kind", "status", "start", "end", "ranks", "tables", "error"],
               [[r.file, r.id, r.kind, r.status, r.attrs.get("start_time", ""), r.attrs.get("end_time", ""),
                 r.attrs.get("world_size", ""), ", ".join(sorted(r.tables)), r.attrs.get("error", "")] for r in runs],
               scroll=False)


def section(page, title, figs, absent):
    page.add(f"<h2>{e(title)}</h2>")
    if not figs:
        page.add(f"<p class='absent'>{e(absent)}</p>")
    for f in figs:
        page.figure(f)


def provenance_section(page, runs, command_line):
    page.add("<h2>Provenance</h2>")
    if command_line:
        page.add(f"<p>This page: <code>{e(command_line)}</code>, matplotlib {e(matplotlib.__version__)}.</p>")
    keys = ("command_line", "ibt_version", "git_commit", "hosts", "ranks_per_host", "backend", "mpi_library",
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
    section(page, "Pipeline-parallel crossover", F.crossover_figures(runs), "No crossover runs in these files.")
    for folder in experiments:  # scripts/cluster/crossover_experiment.sh output folders
        figs, summary = XO.experiment_figures(folder)
        page.add(f"<h2>Pipeline-parallel crossover, measured and projected ({e(folder)})</h2>")
        page.table(*summary, scroll=False)
        for f in figs:
            page.figure(f)
    provenance_section(page, runs, command_line)
    return page.write()


# ---- --compare ----

def latest_collectives(runs):
    """(op, scope, dtype, bytes) -> (busbw, time_us), the newest complete-or-not run winning."""
    out = {}
    for run in runs:
        t = run.tables.get("collectives")
        if t is None:
            continue
        for i in range(t.length):
            if t["placement"][i] == "out":
                out[(t["op"][i], t["scope"][i], t["dtype"][i], int(t["bytes"][i]))] = (
                    float(t["busbw_GBps"][i]), float(t["time_us"][i]))
    return out


def p2p_medians(runs):
    out = {}
    for run in runs:
        t = run.tables.get("p2p_matrix")
        if t is None:
            continue
        for size in sorted(set(int(b) for b in t["bytes"])):
            sel = [i for i in range(t.length) if int(t["bytes"][i]) == size]
            bw = sorted(float(t["bandwidth_GBps"][i]) for i in sel)
            tm = sorted(float(t["time_us"][i]) for i in sel)
            out[("p2p", "pairs", "bytes", size)] = (bw[len(bw) // 2], tm[len(tm) // 2])
    return out


def verdict(ratio, tol):
    if ratio > 1 + tol:
        return "faster"
    if ratio < 1 - tol:
        return "slower"
    return "same"


def compare(files, out, title, command_line, tol):
    a_runs, b_runs = load_runs(files[0]), load_runs(files[1])
    a = {**latest_collectives(a_runs), **p2p_medians(a_runs)}
    b = {**latest_collectives(b_runs), **p2p_medians(b_runs)}
    common = sorted(set(a) & set(b))
    an, bn = os.path.basename(files[0]), os.path.basename(files[1])
    page = Page(out, title or f"ibt compare: {an} (A) vs {bn} (B)")
    page.add(f"<p>A = {e(files[0])}, B = {e(files[1])}. Ratio = B/A of bandwidth (busbw for collectives, median "
             f"pair bandwidth for p2p) and A/B of time, so above 1 means B is faster. Verdict per metric: the "
             f"geometric mean of its ratios over sizes; 'same' within 1 &plusmn; {tol:g}.</p>")
    runs_section(page, a_runs + b_runs)
    if not common:
        page.add("<p class='absent'>The two files share no (op, scope, dtype, size): nothing to compare.</p>")
    groups = defaultdict(list)
    for k in common:
        (abw, at), (bbw, bt) = a[k], b[k]
        bw_ratio = bbw / abw if abw > 0 and bbw > 0 else float("nan")
        t_ratio = at / bt if bt > 0 else float("nan")
        groups[k[:3]].append((k[3], abw, bbw, bw_ratio, at, bt, t_ratio))
    summary = []
    for g, pts in sorted(groups.items()):
        for idx, metric in ((3, "bandwidth"), (6, "time")):
            vals = [p[idx] for p in pts if p[idx] > 0 and not math.isnan(p[idx])]
            if vals:
                gm = math.exp(sum(math.log(v) for v in vals) / len(vals))
                summary.append([g[0], g[1], g[2], metric, str(len(vals)), f"{gm:.3f}", verdict(gm, tol)])
    page.add("<h2>Verdicts</h2>")
    page.table(["op", "scope", "dtype", "metric", "sizes", "geo-mean ratio", "verdict"], summary, scroll=False)
    page.add("<h2>Ratios by size</h2>")
    if groups:
        fig, ax = plt.subplots(figsize=(8, 4.5))
        for g, pts in sorted(groups.items()):
            pts = [p for p in pts if not math.isnan(p[3])]
            if pts:
                ax.semilogx([p[0] for p in pts], [p[3] for p in pts], marker="o", ms=3, label="/".join(g))
        ax.axhline(1, color="k", lw=0.8)
        ax.axhspan(1 - tol, 1 + tol, color="grey", alpha=0.15)
        ax.set_xlabel("message size (bytes)")
        ax.set_ylabel(f"bandwidth ratio B/A ({bn} / {an})")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=6, ncol=2)
        fig.tight_layout()
        rows = [["/".join(g), F.human_bytes(p[0]), F._fmt(p[1]), F._fmt(p[2]), F._fmt(p[3], 3), F._fmt(p[4]),
                 F._fmt(p[5]), F._fmt(p[6], 3)] for g, pts in sorted(groups.items()) for p in pts]
        page.figure(F.Figure("compare_bandwidth", fig, "Bandwidth ratio B/A per op/scope/dtype against size "
                             f"(grey band: 'same' within {tol:g}).",
                             (["series", "bytes", "A GB/s", "B GB/s", "B/A", "A us", "B us", "A/B time"], rows)))
    provenance_section(page, a_runs + b_runs, command_line)
    return page.write()


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
            path = compare(args.files, args.out, args.title, args.command_line, args.tolerance)
        else:
            path = render(args.files, args.out, args.title, args.command_line, args.crossover_experiment)
    except InputError as err:
        print(f"ibt report: error: {err}", file=sys.stderr)
        return 2
    print(f"ibt report: wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
