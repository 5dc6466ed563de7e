#!/usr/bin/python3
"""check_lofo_stacks.py SOURCE_DIR: scripts/lofo_fit.py's leave-one-stack-out mechanics on
rows made here (no ibt run): every family names its stack, a family that names none is
refused with exit 2 naming it, a stack held out is fitted only on the generation's other
stacks (the prior when there are none), and rows priced with --stack move no fit."""
import csv
import os
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True
src = sys.argv[1]
sys.path.insert(0, os.path.join(src, "scripts"))
import lofo_fit as L  # noqa: E402

failures = []


def expect(cond, what):
    if not cond:
        failures.append(what)


# Every family of the published set names a stack (the CSV's first column).
with open(os.path.join(src, "topologies", "validation", "published-runs.csv")) as f:
    families = {r["family"] for r in csv.DictReader(line for line in f if not line.startswith("#"))}
for fam in sorted(families):
    expect(L.stack_of(fam) in L.STACK.values(), f"{fam}: no stack")
expect(L.stack_of("h100-mbridge-fp8") == L.stack_of("a100-megatron-2021"), "Megatron eras are one stack")
expect(L.stack_of("a100-deepspeed-2021") != L.stack_of("a100-megatron-2021"), "DeepSpeed is its own stack")

# Rows whose error falls as 1/eta grows: a row with errs e_j at the grid has its best fit
# where the error crosses zero. Two stacks on one generation, fitted without each other.
F = L.Fitter([0.45, 0.55, 0.65, 0.75, 0.85])


def row(stack, zero_at, stacked=False):
    # projected MFU grows with eta: error(eta) = eta / zero_at - 1 (zero at eta = zero_at)
    return {"gen": "Hopper", "stack": stack, "family": stack, "stacked": stacked,
            "errs": [eta / zero_at - 1 for eta in F.etas]}


rows = [row("A", 0.55), row("A", 0.55), row("B", 0.75), row("B", 0.75)]
eta_a, how_a = F.value_without_stack(rows, "Hopper", "A")
expect(how_a == "fit" and abs(eta_a - 0.75) < 0.011, f"A held out fits on B's rows (0.75): {eta_a} {how_a}")
eta_b, _ = F.value_without_stack(rows, "Hopper", "B")
expect(abs(eta_b - 0.55) < 0.011, f"B held out fits on A's rows (0.55): {eta_b}")
# A stacked row of B (its error the same at every eta) moves nothing.
flat = {"gen": "Hopper", "stack": "B", "family": "B", "stacked": True, "errs": [0.5] * 5}
eta_a2, _ = F.value_without_stack(rows + [flat], "Hopper", "A")
expect(eta_a2 == eta_a, f"a --stack row moved the fit: {eta_a} -> {eta_a2}")
# Only one stack on the generation: the prior.
eta_p, how_p = F.value_without_stack(rows[:2], "Hopper", "A")
expect(how_p == "prior" and eta_p == L.PRIOR["Hopper"], f"one stack: the prior, got {eta_p} {how_p}")

# A family naming no stack is refused before anything is fitted, naming the family.
with tempfile.TemporaryDirectory() as d:
    rows_path = os.path.join(d, "rows.tsv")
    with open(rows_path, "w") as f:
        f.write("\t".join(["h100-mystery-bf16", "llama3-8b", "dgx-h100", "8", "tp1", "-", "1", "mfu_percent",
                           "40", "-", "41", "0.02", "10", "0"]) + "\n")
    p = subprocess.run([sys.executable, os.path.join(src, "scripts", "lofo_fit.py"), "--catalog", d,
                        "--rows", rows_path], capture_output=True, text=True)
    expect(p.returncode == 2, f"unknown stack: exit {p.returncode}, expected 2")
    expect("h100-mystery-bf16" in p.stderr and "STACK" in p.stderr, f"unknown stack message: {p.stderr!r}")

for f_ in failures:
    print("check_lofo_stacks: FAIL:", f_)
if failures:
    sys.exit(1)
print(f"check_lofo_stacks: ok ({len(families)} families, each a stack; LOSO fits and refusals as stated)")
