#!/usr/bin/env bash
# reseeded_margins.sh BUILD [STEPS] [REGEX]: the margins of `ibt train --check` after its
# first step, where the reference starts each step from the split's weights (reseeded:
# models/engine/copy_check.hpp). Runs the split of every CTest case engine_conformance_*
# matching REGEX through `ibt train --check --steps STEPS` (default 8) under the build's
# launcher and yield shim, and prints per split the largest relative differences over the
# reseeded steps ("# check: after the first step" line), then the largest per kind (dense,
# MoE, tied embeddings). The tolerances for reseeded steps in
# models/engine/check_tolerance.hpp are 10x these, rounded up. Conformance flags that
# `ibt train` does not have (the driver's --sequence-parallel, --aux-loss, --layers,
# --reference-lr) skip the case, and say so, as do the cases meant to fail; a split that
# fails or prints no margins makes the exit status 1.
#
#   scripts/check/reseeded_margins.sh build
#   scripts/check/reseeded_margins.sh build 12 'engine_conformance_(tp2|cp2_ring)$'
set -eu
build=${1:?usage: reseeded_margins.sh BUILD [STEPS] [REGEX]}
steps=${2:-8}
regex=${3:-'^engine_conformance_'}
[ -f "$build/CTestTestfile.cmake" ] || { echo "reseeded_margins.sh: $build is not a configured build directory" >&2; exit 2; }
[[ $steps =~ ^[0-9]+$ ]] && ((steps >= 2)) || { echo "reseeded_margins.sh: STEPS must be 2 or more" >&2; exit 2; }
exec python3 - "$build" "$steps" "$regex" "$(dirname "$0")" <<'PY'
import os, re, subprocess, sys

build, steps, regex = os.path.abspath(sys.argv[1]), sys.argv[2], sys.argv[3]
sys.path.insert(0, sys.argv[4])
from ctest_cases import passing_cases  # noqa: E402

keys = ["weights", "gradients", "loss", "grad_norm", "param_norm"]
reseeded = re.compile(r"^# check: after the first step \(each from the split's weights\): (.*)$", re.M)
shim = os.path.join(build, "scripts", "libibt-ucx-yield.so")
driver_only = ("--sequence-parallel", "--aux-loss", "--layers", "--reference-lr")
rows, bad = [], []
for name, cmd, props in passing_cases(build, regex):
    at = next(i for i, a in enumerate(cmd) if a.endswith("engine_train_check"))
    launcher, args = cmd[:at], cmd[at + 1:]
    if any(a in driver_only for a in args):
        print(f"{name}: skipped (a conformance-driver flag ibt train does not have)", file=sys.stderr)
        continue
    out, i = [], 0
    while i < len(args):  # the driver's spellings of ibt train's flags
        a = args[i]
        if a in ("--memory-check", "--steps"):
            i += 2
            continue
        if a == "--zero1":
            out += ["--zero", "1"]
            i += 2
            continue
        out.append(a)
        i += 1
    if "--model" not in out:
        out = ["--model", "tiny-dense"] + out
    mpiexec, ranks = launcher[0], launcher[launcher.index("-n") + 1]
    run = subprocess.run([mpiexec, "-genv", "LD_PRELOAD", shim, "-n", ranks, os.path.join(build, "ibt"), "train"] + out +
                         ["--steps", steps, "--check"], cwd=props.get("WORKING_DIRECTORY", build), capture_output=True,
                         text=True, timeout=900, stdin=subprocess.DEVNULL)
    m = reseeded.findall(run.stdout)
    if run.returncode != 0 or not m:
        bad.append(name)
        print(f"{name}: exit {run.returncode}" + ("" if m else ", no reseeded margins"), file=sys.stderr)
        sys.stderr.write(run.stdout[-1500:] + run.stderr[-1500:])
        continue
    values = dict(kv.split(" ", 1) for kv in m[-1].split(", "))
    model = out[out.index("--model") + 1]
    kind = "tied" if "tied" in model else "MoE" if "moe" in model else "dense"
    rows.append((name, kind, [float(values[k]) for k in keys]))
    print(f"{name:<52}" + "".join(f"{v:>11.2g}" for v in rows[-1][2]), flush=True)
print(f"{'case (' + steps + ' steps, reseeded steps only)':<52}" + "".join(f"{k:>11}" for k in keys))
for kind in ("dense", "MoE", "tied"):
    sel = [r[2] for r in rows if r[1] == kind]
    if sel:
        print(f"{'largest, ' + kind + ' (' + str(len(sel)) + ' cases)':<52}" + "".join(f"{max(c):>11.2g}" for c in zip(*sel)))
sys.exit(1 if bad else 0)
PY
