#!/usr/bin/env bash
# Installs what ibt needs from Debian's packages (idempotent: only what is missing) and
# configures and builds it in ./build. Used by both README commands and by CI.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
  build-essential cmake git pkg-config
  mpich libmpich-dev                      # MPI (the default flavour)
  libhdf5-dev hdf5-tools                  # the results store, h5dump
  zlib1g-dev                              # CRC-32 of checkpoint shards (models/checkpoint)
  libboost-program-options-dev nlohmann-json3-dev
  libopenblas-dev                         # GEMMs of the CPU training engine
  libssl-dev libtomlplusplus-dev libyaml-cpp-dev libre2-dev  # import-log: SHA-256, TOML, YAML, RE2
  libgtest-dev libgmock-dev libbenchmark-dev
  python3-h5py python3-numpy python3-matplotlib  # `ibt report` figures, the README's h5py example
  chromium                                # the report's headless-browser test
  iproute2                                # the emulated multi-host cluster (network namespaces)
  clang-format python3                    # the layout tests: formatting and the layering check (tests/layout)
  munge slurmctld slurmd slurm-client     # the local Slurm test (srun --mpi=pmi2)
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}" >&2
  sudo_cmd=()
  [[ $(id -u) -eq 0 ]] || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

build_type=${IBT_BUILD_TYPE:-RelWithDebInfo}
# shellcheck disable=SC2086  # IBT_CMAKE_ARGS is a list of -D flags
cmake -S . -B build -DCMAKE_BUILD_TYPE="$build_type" ${IBT_CMAKE_ARGS:-} >/dev/null
cmake --build build -j"$(nproc)"
