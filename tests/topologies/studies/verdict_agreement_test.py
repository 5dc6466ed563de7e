#!/usr/bin/python3
"""verdict_agreement_test.py IBT DIR: on every cell of an `ibt crossover` grid the CLI
text, the HDF5 `verdict` column (and its pp_needed twin) and the HTML report -- its
table, the heat-map's squares (read from the SVG) and the caption's counts -- say the
same thing (topologies/studies/verdict.hpp: one rule, stored once, read everywhere).
Also: --topology's own cell is priced and printed before the grid, and marked in it.
Exit 0 when all agree, 1 naming the first disagreement."""
import html.parser
import os
import re
import shutil
import subprocess
import sys
from collections import Counter

import h5py

WORDS = ("PP needed", "PP not needed", "within uncertainty", "nothing fits")
VERDICT = "|".join(WORDS)


def fail(msg):
    print(f"verdict_agreement_test: FAIL: {msg}", file=sys.stderr)
    sys.exit(1)


def cli_cells(text):
    """{(domain, gbps): verdict} of the grid lines, the own-cell line, the marked cell."""
    cells, own_line, marked, header_at = {}, None, [], None
    lines = text.splitlines()
    for n, line in enumerate(lines):
        if re.match(r"^\s*domain\s+Gb/s", line):
            header_at = n
        m = re.match(rf"^dgx-h100's own fabric \(domain (\d+), ([\d.]+) Gb/s\): ({VERDICT}) \(gain", line)
        if m:
            own_line = (n, (int(m.group(1)), float(m.group(2))), m.group(3))
        m = re.match(rf"^\s*(\d+)\s+([\d.e+]+)\s+[\d.]+%\s+[\d.]+%\s+(?:[\d.]+%\s+[\d.]+%\s+)?\S+\s+({VERDICT})\s", line)
        if m:
            key = (int(m.group(1)), float(m.group(2)))
            if key in cells:
                fail(f"cell {key} printed twice")
            cells[key] = m.group(3)
            if line.rstrip().endswith("<- own"):
                marked.append(key)
    if header_at is None or own_line is None:
        fail("no grid header or no own-cell line in the CLI output:\n" + text)
    if own_line[0] > header_at:
        fail("the own cell's verdict is printed after the grid header, not before")
    return cells, own_line, marked


def hdf5_cells(path):
    with h5py.File(path, "r") as f:
        runs = list(f["runs"].values())
        if len(runs) != 1:
            fail(f"{path}: {len(runs)} runs, expected 1")
        t = runs[0]["crossover"][()]
    out = {}
    for r in t:
        key = (int(r["domain_size"]), float(r["scale_out_Gbps"]))
        verdict = r["verdict"].decode() if isinstance(r["verdict"], bytes) else str(r["verdict"])
        if verdict not in WORDS:
            fail(f"HDF5 cell {key}: verdict '{verdict}' is not one of {WORDS}")
        if int(r["pp_needed"]) != (verdict == "PP needed"):
            fail(f"HDF5 cell {key}: pp_needed {int(r['pp_needed'])} contradicts verdict '{verdict}'")
        out[key] = verdict
    return out


class Tables(html.parser.HTMLParser):
    """Each <table>'s rows (cell texts), and each <figcaption>'s text, in page order."""

    def __init__(self):
        super().__init__()
        self.tables, self.captions, self._row, self._cell, self._caption = [], [], None, None, None

    def handle_starttag(self, tag, attrs):
        if tag == "table":
            self.tables.append([])
        elif tag == "tr":
            self._row = []
        elif tag in ("td", "th"):
            self._cell = ""
        elif tag == "figcaption":
            self._caption = ""

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._row is not None:
            self._row.append(self._cell)
            self._cell = None
        elif tag == "tr" and self._row is not None:
            self.tables[-1].append(self._row)
            self._row = None
        elif tag == "figcaption":
            self.captions.append(self._caption)
            self._caption = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell += data
        if self._caption is not None:
            self._caption += data


def report_cells(ibt, h5, out):
    subprocess.run([ibt, "report", h5, "--out", out], check=True, stdout=subprocess.DEVNULL)
    page = open(os.path.join(out, "index.html"), encoding="utf-8").read()
    p = Tables()
    p.feed(page)
    table = next((t for t in p.tables if t and t[0][:2] == ["domain", "Gb/s"] and "verdict" in t[0]), None)
    if table is None:
        fail("no crossover table with a verdict column in the report")
    column = table[0].index("verdict")
    rows = {(int(r[0]), float(r[1])): r[column] for r in table[1:]}
    caption = next((c for c in p.captions if "Verdict per fabric" in c), None)
    if caption is None:
        fail("no crossover caption in the report")
    svgs = [n for n in os.listdir(out) if n.startswith("crossover_") and n.endswith(".svg")]
    if len(svgs) != 1:
        fail(f"expected one crossover heat-map SVG, found {svgs}")
    svg = open(os.path.join(out, svgs[0]), encoding="utf-8").read()
    squares, fills = {}, {}
    for m in re.finditer(r'<g id="verdict-cell_(\d+)_([\d.]+)_([A-Za-z-]+)">\s*<path[^>]*style="fill: (#[0-9a-f]{6})',
                         svg):
        key = (int(m.group(1)), float(m.group(2)))
        verdict = next((w for w in WORDS if w.replace(" ", "-") == m.group(3)), None)
        if verdict is None:
            fail(f"heat-map square {key}: unknown verdict '{m.group(3)}'")
        squares[key] = verdict
        fills.setdefault(verdict, set()).add(m.group(4))
    # One colour per verdict, different verdicts different colours.
    if any(len(c) != 1 for c in fills.values()) or len({min(c) for c in fills.values()}) != len(fills):
        fail(f"heat-map colours do not follow the verdicts: {fills}")
    return rows, squares, caption


def main():
    ibt, work = sys.argv[1], sys.argv[2]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    h5 = os.path.join(work, "grid.h5")
    # A grid that crosses over (at 2ebf1c4 it held all three verdicts, the +6.7% cells
    # "within uncertainty" where a gain-vs-threshold heat-map said "PP needed").
    domains, gbps = [8, 16, 64], [100, 400, 800, 1600]
    cmd = [ibt, "crossover", "--model", "gpt3-175b", "--gpus", "64", "--global-batch", "64", "--topology", "dgx-h100",
           "--domain-sizes", ",".join(map(str, domains)), "--scale-out-Gbps", ",".join(map(str, gbps)),
           "--jobs", "2", "--out", h5]
    text = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    cli, own, marked = cli_cells(text)
    grid = {(d, float(g)) for d in domains for g in gbps}
    if set(cli) != grid:
        fail(f"CLI cells {sorted(cli)} are not the grid {sorted(grid)}")
    if len(set(cli.values())) < 2:
        fail(f"the grid's cells all say '{min(cli.values())}': pick a grid that crosses over, or agreement is untested")
    stored = hdf5_cells(h5)
    rows, squares, caption = report_cells(ibt, h5, os.path.join(work, "html"))
    for name, seen in (("HDF5 column", stored), ("report table", rows), ("heat-map", squares)):
        if set(seen) != grid:
            fail(f"{name} cells {sorted(seen)} are not the grid {sorted(grid)}")
        for key in sorted(grid):
            if seen[key] != cli[key]:
                fail(f"cell {key}: CLI says '{cli[key]}', {name} says '{seen[key]}'")
    counts = Counter(stored.values())
    for v, n in counts.items():
        if not re.search(rf"Cells: (.*, )?{n} {v}[,.]", caption):
            fail(f"caption ({caption}) does not count {n} '{v}' cells as the stored column does")
    # dgx-h100's own fabric: 8 devices per domain, 400 Gb/s per GPU (its catalog file).
    own_key, own_verdict = own[1], own[2]
    if marked != [own_key] or own_key not in grid:
        fail(f"own cell {own_key}: marked cells in the grid are {marked}")
    if own_verdict != cli[own_key]:
        fail(f"own cell {own_key}: printed first as '{own_verdict}', the grid says '{cli[own_key]}'")
    print(f"verdict_agreement_test: ok: {len(grid)} cells agree ({dict(counts)}); own cell {own_key}: {own_verdict}")


main()
