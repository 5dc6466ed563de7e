#!/usr/bin/python3
"""figure_layout_check.py REPORT_DIR [SCREENSHOT.png]: loads a report page in headless
Chromium at the width reports/html/figure_style.py is laid out for and fails (exit 1,
one line per problem) when, in any figure as the page shows it,
  - a legend covers a plotted point, a line, a bar or a data label (inside the plot area),
  - a text is smaller than figure_style.MIN_TEXT_PX pixels,
  - a text runs past the figure's edge (a title cut off),
  - an MFU axis spans fewer than figure_style.MFU_MIN_SPAN_POINTS percentage points (noise
    inside the projection's band drawn as a trend); read from the SVG's tick labels.
How: a copy of the page gets, beside each figure's PNG, the same figure's SVG (written by
the report beside the PNG, with the ids figure_style.tag_for_layout_check gives) scaled to
the width the PNG is shown at, and a script that measures legends, data and text with the
browser's own layout (getBoundingClientRect, getPointAtLength along every line). The
result comes back through --dump-dom. With SCREENSHOT the real page is saved as a PNG at
that width. Exit 77 (CTest: skipped) only when no Chromium is installed.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "reports", "html"))
import figure_style as FS  # noqa: E402

MEASURE = """
window.addEventListener('load', function () {
  var MIN_PX = %(min_px)s, out = {figures: [], page_height: document.documentElement.scrollHeight};
  function box(r) { return {l: r.left, t: r.top, r: r.right, b: r.bottom}; }
  function clip(a, c) {
    if (!c) return a;
    var r = {l: Math.max(a.l, c.l), t: Math.max(a.t, c.t), r: Math.min(a.r, c.r), b: Math.min(a.b, c.b)};
    return (r.l <= r.r && r.t <= r.b) ? r : null;
  }
  function overlap(a, b) { return a.l < b.r - 1 && a.r > b.l + 1 && a.t < b.b - 1 && a.b > b.t + 1; }
  function shapes(d) {  // screen boxes of what a data element draws; lines as points along them
    var found = [], els = Array.from(d.querySelectorAll('use, path, text, image'));
    if (d.matches('use, path, text, image')) els.push(d);
    els.forEach(function (el) {
      if (el.closest('defs')) return;
      if (el.tagName === 'path' && getComputedStyle(el).fill === 'none') {
        var len = el.getTotalLength(), ctm = el.getScreenCTM(), step = Math.max(len / 4000, 0.5);
        for (var s = 0; s <= len; s += step) {
          var p = new DOMPoint(el.getPointAtLength(s).x, el.getPointAtLength(s).y).matrixTransform(ctm);
          found.push({l: p.x - 0.5, t: p.y - 0.5, r: p.x + 0.5, b: p.y + 0.5, what: 'line'});
        }
      } else {
        var r = box(el.getBoundingClientRect());
        r.what = el.tagName === 'use' ? 'plotted point' : el.tagName === 'text' ? 'data label' : 'bar or area';
        found.push(r);
      }
    });
    return found;
  }
  document.querySelectorAll('div.ibt-layout-svg').forEach(function (holder) {
    var img = holder.parentNode.querySelector('img.fig'), svg = holder.querySelector('svg');
    var vb = svg.viewBox.baseVal, shown = img.clientWidth;  // without the image's border
    svg.setAttribute('width', shown);
    svg.setAttribute('height', shown * vb.height / vb.width);
    var res = {figure: holder.dataset.figure, shown_px: shown, natural_px: img.naturalWidth,
               min_text_px: null, small: [], cut: [], overlaps: [], legends: 0, data: 0}, hits = {};
    var edge = box(svg.getBoundingClientRect());
    svg.querySelectorAll('text').forEach(function (t) {
      if (!t.textContent.trim()) return;
      var m = t.getScreenCTM(), px = parseFloat(getComputedStyle(t).fontSize) * Math.sqrt(Math.abs(m.a * m.d - m.b * m.c));
      if (res.min_text_px === null || px < res.min_text_px) res.min_text_px = px;
      if (px < MIN_PX) res.small.push([t.textContent.trim().slice(0, 60), px]);
      var r = box(t.getBoundingClientRect());
      if (r.l < edge.l - 2 || r.r > edge.r + 2 || r.t < edge.t - 2 || r.b > edge.b + 2)
        res.cut.push(t.textContent.trim().slice(0, 60));
    });
    var legends = Array.from(svg.querySelectorAll('[id^="ibt-legend"]')).map(function (l) {
      return {id: l.id, r: box(l.getBoundingClientRect())};
    });
    res.legends = legends.length;
    svg.querySelectorAll('[id^="ibt-data-"], [id^="verdict-cell_"]').forEach(function (d) {
      res.data++;
      var axes = d.closest('[id^="ibt-axes-"]'), frame = axes && axes.querySelector('[id^="ibt-frame-"]');
      var area = frame ? box(frame.getBoundingClientRect()) : null;
      shapes(d).forEach(function (s) {
        var c = clip(s, area);
        if (!c) return;
        legends.forEach(function (l) {
          if (!overlap(c, l.r)) return;
          var key = l.id + ' ' + d.id + ' ' + s.what;
          if (!hits[key]) hits[key] = [l.id, d.id, s.what, 0, Math.round(c.l - edge.l), Math.round(c.t - edge.t)];
          hits[key][3]++;
        });
      });
    });
    res.overlaps = Object.keys(hits).map(function (k) { return hits[k]; });
    out.figures.push(res);
  });
  var pre = document.createElement('pre');
  pre.id = 'ibt-layout-result';
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
"""


def browser():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


def flags(profile):
    return ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
            "--disable-component-update", "--disable-sync", "--no-first-run", "--hide-scrollbars",
            "--virtual-time-budget=20000", f"--user-data-dir={profile}"]


def inline_svg(path, prefix):
    """The SVG file's <svg> element with the ids its own references use renamed, so several
    SVGs on one page never resolve a clip path or marker in another figure."""
    text = open(path, encoding="utf-8").read()
    text = text[text.index("<svg"):]
    referenced = set(re.findall(r'url\(#([^)]+)\)', text)) | set(re.findall(r'href="#([^"]+)"', text))
    for ident in referenced:
        text = text.replace(f'id="{ident}"', f'id="{prefix}{ident}"')
        text = text.replace(f"url(#{ident})", f"url(#{prefix}{ident})").replace(f'href="#{ident}"', f'href="#{prefix}{ident}"')
    return text


NUMBER = re.compile(r"^[-\u2212]?[0-9][0-9,]*(\.[0-9]+)?%?$")


def mfu_axis_problems(svg_path, name):
    """The MFU axes of one figure's SVG narrower than figure_style.MFU_MIN_SPAN_POINTS: an
    axis (matplotlib's group "matplotlib.axis_N") whose label says MFU, spanned by its
    numeric tick labels."""
    import xml.etree.ElementTree as ET
    problems = []
    for group in ET.parse(svg_path).getroot().iter("{http://www.w3.org/2000/svg}g"):
        if not str(group.get("id", "")).startswith("matplotlib.axis_"):
            continue
        texts = ["".join(t.itertext()).strip() for t in group.iter("{http://www.w3.org/2000/svg}text")]
        ticks = [float(t.replace(",", "").replace("%", "").replace("\u2212", "-")) for t in texts if NUMBER.match(t)]
        labels = [t for t in texts if not NUMBER.match(t) and t]
        if not any("MFU" in t for t in labels) or len(ticks) < 2:
            continue
        span = max(ticks) - min(ticks)
        if span < FS.MFU_MIN_SPAN_POINTS:
            problems.append(f"{name}: MFU axis '{labels[0]}' spans {min(ticks):g}-{max(ticks):g} ({span:g} points), "
                            f"narrower than {FS.MFU_MIN_SPAN_POINTS:g} points: noise inside the projection's band "
                            "would read as a trend (figure_style.mfu_axis)")
    return problems


def check_page(report_dir, work):
    page = open(os.path.join(report_dir, "index.html"), encoding="utf-8").read()
    names = re.findall(r"<figure id='fig-([^']+)'><img class='fig'", page)
    for n, name in enumerate(names):
        svg = os.path.join(report_dir, name + ".svg")
        if not os.path.exists(svg):
            raise SystemExit(f"figure_layout_check: FAIL: {svg} missing (the report writes one SVG per figure)")
        holder = f"<div class='ibt-layout-svg' data-figure='{name}'>{inline_svg(svg, f'f{n}-')}</div>"
        page = re.sub(rf"(<figure id='fig-{re.escape(name)}'><img class='fig'[^>]*>)", lambda m: m.group(1) + holder,
                      page, count=1)
    page = page.replace("</head>", f"<script>{MEASURE % {'min_px': FS.MIN_TEXT_PX}}</script></head>", 1)
    path = os.path.join(work, "layout_check.html")
    with open(path, "w", encoding="utf-8") as f:
        f.write(page)
    return path, names


def main():
    if len(sys.argv) not in (2, 3):
        raise SystemExit(__doc__)
    report_dir, shot = sys.argv[1], (sys.argv[2] if len(sys.argv) == 3 else None)
    chrome = browser()
    if not chrome:
        print("figure_layout_check: no chromium installed (Debian package chromium)", file=sys.stderr)
        return 77
    work = tempfile.mkdtemp()
    try:
        path, names = check_page(report_dir, work)
        width = FS.CHECK_WINDOW_PX
        dom = subprocess.run([chrome, *flags(os.path.join(work, "p1")), f"--window-size={width},2000", "--dump-dom",
                              "file://" + path], capture_output=True, text=True, timeout=180).stdout
        m = re.search(r'<pre id="ibt-layout-result">(.*?)</pre>', dom, re.S)
        if not m:
            print("figure_layout_check: FAIL: the page's measuring script reported nothing", file=sys.stderr)
            return 1
        result = json.loads(m.group(1).replace("&quot;", '"').replace("&lt;", "<").replace("&gt;", ">")
                            .replace("&amp;", "&"))
        problems = [p for name in names for p in mfu_axis_problems(os.path.join(report_dir, name + ".svg"), name)]
        if len(result["figures"]) != len(names):
            problems.append(f"measured {len(result['figures'])} of the page's {len(names)} figures")
        for fig in result["figures"]:
            name = fig["figure"]
            smallest = fig["min_text_px"] or 0
            print(f"figure_layout_check: {name}: shown {fig['shown_px']:.0f} px wide (PNG {fig['natural_px']} px), "
                  f"smallest text {smallest:.1f} px, {fig['legends']} legend(s), {fig['data']} data element(s), "
                  f"{len(fig['overlaps'])} overlap(s)")
            if fig["data"] == 0:
                problems.append(f"{name}: no data elements found (figure_style.tag_for_layout_check not applied?)")
            for legend, data, what, count, x, y in fig["overlaps"]:
                problems.append(f"{name}: legend {legend} covers {what} of {data} ({count} place(s), the first at "
                                f"({x}, {y}) px from the figure's top left)")
            for text, px in fig["small"]:
                problems.append(f"{name}: text '{text}' is {px:.1f} px, below {FS.MIN_TEXT_PX} px")
            for text in fig["cut"]:
                problems.append(f"{name}: text '{text}' runs past the figure's edge")
        if shot:
            height = min(int(result.get("page_height", 3000)) + 50, 30000)
            subprocess.run([chrome, *flags(os.path.join(work, "p2")), f"--window-size={width},{height}",
                            f"--screenshot={os.path.abspath(shot)}", "file://" + os.path.abspath(
                                os.path.join(report_dir, "index.html"))], capture_output=True, timeout=180)
            print(f"figure_layout_check: screenshot {shot} ({width} x {height} px)")
        for p in problems:
            print(f"figure_layout_check: FAIL: {p}", file=sys.stderr)
        if problems:
            return 1
        print(f"figure_layout_check: ok, {len(names)} figures at {width} px")
        return 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
