#!/usr/bin/env bash
# check_margins.sh BUILD [REGEX]: the margins of --check, measured. Runs every CTest case
# matching REGEX (default: the conformance splits engine_conformance_* and the
# `ibt train --check` cases train_check_*, less the shell test train_check_tensors) that is
# meant to pass, one at a time, and prints
# per case the largest relative differences from the serial reference it showed (the
# "margins:" line of engine_train_check, the "# check: largest relative differences:"
# line of ibt train), then the largest over the dense and the MoE cases. These are what
# the tolerances of models/engine/check_tolerance.hpp are set from (docs/training.md,
# "--check"). Cases meant to fail (a PASS_REGULAR_EXPRESSION or WILL_FAIL) are skipped.
# Exit 1 when a case fails or prints no margins.
#
#   scripts/check/check_margins.sh build
#   scripts/check/check_margins.sh build 'engine_conformance_(tp2|dp2)$'
set -eu
build=${1:?usage: check_margins.sh BUILD [REGEX]}
regex=${2:-'^(engine_conformance_|train_check_(?!tensors$))'}
[ -f "$build/CTestTestfile.cmake" ] || { echo "check_margins.sh: $build is not a configured build directory" >&2; exit 2; }
exec python3 - "$build" "$regex" "$(dirname "$0")" <<'PY'
import os, re, subprocess, sys

build, regex = sys.argv[1], sys.argv[2]
sys.path.insert(0, sys.argv[3])
from ctest_cases import passing_cases  # noqa: E402

keys = ["weights", "gradients", "loss", "grad_norm", "param_norm", "aux_loss"]
line = re.compile(r"(?:^margins: |# check: largest relative differences: )(.*)$", re.M)
step_line = re.compile(r"^margins at step (\d+): (.*)$", re.M)
logs = os.environ.get("CHECK_MARGINS_LOGS")  # a directory: each case's output kept there


def parse(text):
    values = dict(kv.split(" ", 1) for kv in text.split(" (")[0].split(", "))
    return [float(values[k]) for k in keys]


rows, bad = [], []
for name, command, props in passing_cases(build, regex):
    run = subprocess.run(command, cwd=props.get("WORKING_DIRECTORY", build), capture_output=True, text=True,
                         timeout=900)
    if logs:
        with open(os.path.join(logs, name + ".log"), "w") as f:
            f.write(run.stdout + run.stderr)
    m = line.findall(run.stdout)
    if run.returncode != 0 or not m:
        bad.append(name)
        print(f"{name}: exit {run.returncode}, no margins" if not m else f"{name}: exit {run.returncode}",
              file=sys.stderr)
        sys.stderr.write(run.stdout[-2000:] + run.stderr[-2000:])
        continue
    moe = any("moe" in a for a in command)
    steps = {int(k): parse(v) for k, v in step_line.findall(run.stdout)}
    rows.append((name, moe, parse(m[-1]), steps))
    print(f"{name:<52}" + "".join(f"{v:>11.2g}" for v in rows[-1][2]), flush=True)
print(f"{'case':<52}" + "".join(f"{k:>11}" for k in keys))
for label, pick in (("largest, dense", False), ("largest, MoE", True)):
    sel = [r[2] for r in rows if r[1] == pick]
    if sel:
        print(f"{label + ' (' + str(len(sel)) + ' cases)':<52}" + "".join(f"{max(c):>11.2g}" for c in zip(*sel)))
# Per step (the conformance driver's "margins at step k:" lines): whether margins grow.
for label, pick in (("dense", False), ("MoE", True)):
    by_step = {}
    for r in rows:
        if r[1] == pick:
            for k, v in r[3].items():
                by_step.setdefault(k, []).append(v)
    for k in sorted(by_step):
        print(f"{'largest, ' + label + ', step ' + str(k):<52}" + "".join(f"{max(c):>11.2g}" for c in zip(*by_step[k])))
sys.exit(1 if bad else 0)
PY
