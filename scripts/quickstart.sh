#!/usr/bin/env bash
# The README's first command: set up, build, and run the main job on the embedded
# default: 4 local MPI ranks (MPICH) in 2 emulated domains of 2, the whole collective
# suite in every scope, appended to results/quickstart.h5, then list the file's runs.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
mkdir -p results
ranks=${IBT_RANKS:-4}
preload=()
if (( ranks > $(nproc) )); then
  # More ranks than cores: MPICH would busy-poll; the shim makes idle ranks yield.
  preload=(-genv LD_PRELOAD "$PWD/build/scripts/libibt-ucx-yield.so")
  echo "quickstart: $ranks ranks on $(nproc) cores (oversubscribed): timings show the harness working, not this machine's interconnect" >&2
fi
mpiexec.mpich -n "$ranks" "${preload[@]}" build/ibt collectives --scope all --domain-size 2 \
  -b 8 -e 1M -f 4 --dtype float32,bfloat16 --out results/quickstart.h5 "$@"
build/ibt show results/quickstart.h5
