#!/usr/bin/python3
"""check_report_page.py DIR A.h5 [B.h5]: checks what `ibt report` wrote, against the files.

- index.html exists and loads nothing from elsewhere (every image is a data: URI);
- every figure inlined in the page also exists beside it as PNG and SVG;
- every run of the files appears with its status, and the failed run is shown as failed;
- numbers in the page are the stored ones: the busbw of each file's all_reduce world rows;
- a section without data says so (no training runs in these files);
- every multi-rank run records oversubscription, and the page flags those that were.
"""
import os
import re
import sys

import h5py


def fail(message):
    print(f"check_report_page: FAIL: {message}", file=sys.stderr)
    sys.exit(1)


out, files = sys.argv[1], sys.argv[2:]
page = open(os.path.join(out, "index.html"), encoding="utf-8").read()
srcs = re.findall(r"src='([^']*)'", page) + re.findall(r'src="([^"]*)"', page)
if not srcs or any(not s.startswith("data:image/png;base64,") for s in srcs):
    fail("the page loads something that is not inlined: " + ", ".join(s[:40] for s in srcs if not s.startswith("data:")))
if re.search(r"""(src|href)=['"]https?:""", page):
    fail("the page links to the network")
figures = re.findall(r"<figure id='fig-([^']+)'>", page)
if len(figures) < 5:
    fail(f"only {len(figures)} figures")
for name in figures:
    for ext in ("png", "svg"):
        path = os.path.join(out, f"{name}.{ext}")
        if not os.path.getsize(path) > 1000:
            fail(f"{path} missing or empty")
failed_runs = 0
for path in files:
    with h5py.File(path, "r") as f:
        for run_id, run in f["runs"].items():
            status = run.attrs["status"]
            if f"<td>{run_id}</td>" not in page:
                fail(f"run {run_id} of {path} not listed")
            if status == "failed":
                failed_runs += 1
                if "<td class='status-failed'>failed</td>" not in page:
                    fail(f"failed run {run_id} of {path} not shown as failed")
            # Every multi-rank run records whether it was oversubscribed; the page names those that were.
            if run.attrs["kind"] in ("collectives", "p2p_matrix"):
                for attr in ("oversubscribed", "cores_per_host", "ranks_per_host"):
                    if attr not in run.attrs:
                        fail(f"{path}:{run_id} lacks attribute {attr}")
                if int(run.attrs["oversubscribed"]) == 1:
                    text = run.attrs["oversubscription"]
                    text = text.decode() if isinstance(text, bytes) else text
                    if f"{run_id} ({text})" not in page or "measured oversubscribed" not in page:
                        fail(f"oversubscribed run {run_id} of {path} ({text}) is not flagged in the page")
            if "collectives" not in run:
                continue
            rows = run["collectives"][:]
            for r in rows:
                if r["op"] == b"all_reduce" and r["scope"] == b"world" and r["placement"] == b"out":
                    shown = f"<td>{r['busbw_GBps']:.4g}</td>"
                    if shown not in page:
                        fail(f"busbw {shown} of {path}:{run_id} at {r['bytes']} B is not in the page")
if failed_runs == 0:
    fail("the test data holds no failed run (make_results.sh should have made one)")
if "No training runs in these files" not in page:
    fail("the absent training section is not stated")
print(f"check_report_page: ok ({len(figures)} figures, {failed_runs} failed run(s) shown)")
