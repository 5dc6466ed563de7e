#!/usr/bin/env python3
"""ibt's serial CPU engine against PyTorch fp32 on the same model, weights and batches.

  bench/engine_vs_pytorch.py --ibt build/ibt --models small-dense,tiny-moe --rounds 5 --threads 1

For each model: `ibt train --dump` writes the initial weights and every step's batch;
then, for --rounds rounds, one serial `ibt train` run and one PyTorch run
(bench/torch_reference.py, which rebuilds the model from the dump and checks its losses
against ibt's) alternate, the order swapped every round so that a slow spell of a shared
machine hits both. Each run's figure is the median step time over steps 1..N-1 (step 0
warms up); the table gives every round's ibt/torch ratio and the median over rounds.
Both sides use --threads BLAS/intra-op threads (ibt --threads, torch.set_num_threads).

A second figure is robust to a loaded machine, where wall time mostly measures the
scheduler: CPU seconds per step (user + system, all threads), from a run of N steps
less a run of 1 step of the same program (startup, weight init and the warm-up step
cancel), divided by N-1; "nan" where the steps are too short to stand out of the
startup's noise (under 5% of the run's CPU time: tiny models).

Not part of CI's pass/fail: it skips (exit 0, reason printed) where PyTorch or h5py is
missing from --python (Debian: apt-get install python3-torch python3-h5py). Exit 1 when
a run fails or PyTorch's losses differ from ibt's (not the same model), 2 on bad input.
"""
import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def children_cpu_seconds():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run(cmd, env):
    """The command's output and its CPU seconds (user + system, all threads)."""
    before = children_cpu_seconds()
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if p.returncode != 0:
        sys.exit(f"engine_vs_pytorch: {' '.join(cmd)} failed (exit {p.returncode}):\n{p.stdout[-3000:]}")
    return p.stdout, children_cpu_seconds() - before


def with_steps(cmd, steps):
    i = cmd.index("--steps")
    return cmd[: i + 1] + [str(steps)] + cmd[i + 2 :]


def ibt_step_times(output):
    """Per-step wall times from `ibt train`'s step lines: `  <step> <loss> <time_s> ...`."""
    times = []
    for line in output.splitlines():
        f = line.split()
        if len(f) > 3 and not line.startswith("#") and f[0].isdigit():
            times.append(float(f[2]))
    return times


def torch_step_times(output):
    return [float(line.split()[3]) for line in output.splitlines() if line.startswith("torch_step ")]


def median_after_warmup(times, what):
    if len(times) < 2:
        sys.exit(f"engine_vs_pytorch: {what} printed {len(times)} step times, need at least 2")
    return statistics.median(times[1:])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ibt", default=os.path.join(ROOT, "build", "ibt"))
    ap.add_argument("--python", default="/usr/bin/python3", help="a Python that has torch and h5py")
    ap.add_argument("--models", default="small-dense,tiny-moe")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--steps", type=int, default=6, help="steps per run (step 0 is not timed)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--lr", type=float, default=3e-3, help="as ibt train's default")
    a = ap.parse_args()
    if a.rounds < 1 or a.steps < 2 or a.threads < 1:
        print("engine_vs_pytorch: --rounds >= 1, --steps >= 2 and --threads >= 1 are required", file=sys.stderr)
        return 2
    if not os.access(a.ibt, os.X_OK):
        print(f"engine_vs_pytorch: {a.ibt} is not an executable (build ibt first)", file=sys.stderr)
        return 2
    probe = subprocess.run([a.python, "-c", "import torch, h5py; print(torch.__version__)"],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if probe.returncode != 0:
        last = probe.stdout.strip().splitlines()[-1] if probe.stdout.strip() else "not runnable"
        print(f"SKIP: no PyTorch to compare with: {a.python}: {last} "
              "(Debian: apt-get install python3-torch python3-h5py)")
        return 0
    torch_version = probe.stdout.strip()
    env = dict(os.environ, OPENBLAS_NUM_THREADS=str(a.threads), OMP_NUM_THREADS=str(a.threads))
    print(f"# ibt {a.ibt} vs PyTorch {torch_version} ({a.python}), fp32 CPU, {a.threads} thread(s), "
          f"{a.steps} steps per run (median of steps 1..{a.steps - 1}), {a.rounds} alternating rounds")
    print(f"# load average at start: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    summary = []
    with tempfile.TemporaryDirectory(prefix="ibt-vs-torch-") as tmp:
        for model in a.models.split(","):
            model_file = os.path.join(ROOT, "models", "catalog", model + ".json")
            if not os.path.exists(model_file):
                print(f"engine_vs_pytorch: no catalog model {model} ({model_file})", file=sys.stderr)
                return 2
            dump = os.path.join(tmp, model + ".h5")
            common = ["--model", model, "--steps", str(a.steps), "--lr", str(a.lr)]
            run([a.ibt, "train", *common, "--dump", dump, "--threads", str(a.threads)], env)
            ibt_cmd = [a.ibt, "train", *common, "--threads", str(a.threads)]
            torch_cmd = [a.python, os.path.join(HERE, "torch_reference.py"), "--dump", dump, "--model-file",
                         model_file, "--threads", str(a.threads), "--lr", str(a.lr), "--steps", str(a.steps)]
            print(f"\n## {model}   (wall: median step time; cpu: CPU seconds per step)\n"
                  f"# {'round':>5} {'ibt_wall':>10} {'torch_wall':>10} {'ratio':>7} {'ibt_cpu':>9} {'torch_cpu':>9} {'ratio':>7}")
            ratios, ibt_all, torch_all, cpu_ratios, ibt_cpu_all, torch_cpu_all = [], [], [], [], [], []
            for r in range(a.rounds):
                order = [("ibt", ibt_cmd), ("torch", torch_cmd)]
                if r % 2:
                    order.reverse()
                got, cpu = {}, {}
                for name, cmd in order:
                    out, cpu_n = run(cmd, env)
                    _, cpu_1 = run(with_steps(cmd, 1), env)
                    times = ibt_step_times(out) if name == "ibt" else torch_step_times(out)
                    got[name] = median_after_warmup(times, name)
                    # Steps too short to stand out of the startup's noise give no figure.
                    steady = cpu_n - cpu_1
                    cpu[name] = steady / (a.steps - 1) if steady > 0.05 * cpu_n else float("nan")
                ratios.append(got["ibt"] / got["torch"])
                ibt_all.append(got["ibt"])
                torch_all.append(got["torch"])
                cpu_ratios.append(cpu["ibt"] / cpu["torch"])
                ibt_cpu_all.append(cpu["ibt"])
                torch_cpu_all.append(cpu["torch"])
                print(f"  {r:>5} {got['ibt']:>10.4f} {got['torch']:>10.4f} {ratios[-1]:>7.3f} "
                      f"{cpu['ibt']:>9.4f} {cpu['torch']:>9.4f} {cpu_ratios[-1]:>7.3f}", flush=True)
            def med(values):
                finite = [v for v in values if v == v]
                return statistics.median(finite) if finite else float("nan")

            def lo_hi(values):
                finite = [v for v in values if v == v] or [float("nan")]
                return min(finite), max(finite)
            summary.append((model, med(ibt_all), med(torch_all), med(ratios), *lo_hi(ratios),
                            med(ibt_cpu_all), med(torch_cpu_all), med(cpu_ratios), *lo_hi(cpu_ratios)))
    print(f"\n# {'model':<12} {'clock':<5} {'ibt_s':>9} {'torch_s':>9} {'ratio':>7} {'min':>7} {'max':>7}"
          "  (medians over rounds; ratio = ibt / torch)")
    for row in summary:
        print(f"  {row[0]:<12} {'wall':<5} {row[1]:>9.4f} {row[2]:>9.4f} {row[3]:>7.3f} {row[4]:>7.3f} {row[5]:>7.3f}")
        print(f"  {row[0]:<12} {'cpu':<5} {row[6]:>9.4f} {row[7]:>9.4f} {row[8]:>7.3f} {row[9]:>7.3f} {row[10]:>7.3f}")
    print(f"# load average at end: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
