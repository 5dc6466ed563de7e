#!/usr/bin/env bash
# shellcheck disable=SC2154  # the cfg_* variables are set by load_config (common.sh)
# launch.sh: runs an MPI job across the hosts of a cluster made by create.sh.
# Run scripts/cluster/launch.sh --help for the details.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=common.sh
source "$here/common.sh"

usage() {
  cat <<EOF
usage: launch.sh --name NAME [--ppn N] [--hosts M] [--timeout S] [--preload LIB]
                 [--mpiexec PATH] -- COMMAND [ARG...]

Runs COMMAND as an MPI job with N ranks on each of the first M hosts (default: all) of
cluster NAME, through MPICH's hydra: mpiexec runs in the switch namespace, on the bridge
(-iface), and starts one proxy per host through netns_exec.sh, which enters the host's
network namespace under a UTS namespace named after the host. UCX is restricted to
UCX_TLS=tcp,self and UCX_NET_DEVICES=$IBT_CLUSTER_IFACE, so ranks on different hosts
talk over the (shaped) link: UCX's shared-memory transports (sm) reach across network
namespaces on one machine, and with them the link carries nothing. Ranks of one host
then talk over TCP on that host's loopback (unshaped, never on the link; measured: an
intra-only run put its traffic on lo, not on $IBT_CLUSTER_IFACE). IBT_CLUSTER_UCX_TLS
overrides the transports (for experiments only).

  --ppn N        ranks per host (default 1)
  --hosts M      use the first M hosts (default: all of them)
  --timeout S    end the job after S seconds (default 600), then end what is left of it
                 in the hosts' namespaces; exit status 124. A job must never run without
                 a limit here: see --result
  --preload LIB  LD_PRELOAD for the ranks, e.g. build/scripts/libibt-ucx-yield.so when
                 there are more ranks than cores (MPICH busy-polls otherwise)
  --mpiexec P    the hydra mpiexec (default mpiexec.mpich)
  --result FILE  the HDF5 file the job appends its runs to (ibt --out FILE). Once the
                 newest run is closed with a final status (complete, partial, failed)
                 and no newer run has begun for --finalize-grace seconds (default 20),
                 a job that has not exited is ended with a warning; exit status 0 if
                 that run is complete, 1 if not. On these machines MPICH 4.0.2 over
                 UCX 1.13's TCP transport hangs in MPI_Finalize in a large share of
                 runs with 3 or more ranks (also without namespaces), after ibt has
                 stored and closed every result

One job at a time per cluster. Exit status: the job's, 124 on timeout, 2 on bad usage.
EOF
}

name="" ppn=1 use_hosts="" limit=600 preload="" mpiexec=mpiexec.mpich result="" grace=20
while (($#)); do
  case $1 in
    --name) name=${2-}; shift 2 ;;
    --ppn) ppn=${2-}; shift 2 ;;
    --hosts) use_hosts=${2-}; shift 2 ;;
    --timeout) limit=${2-}; shift 2 ;;
    --preload) preload=${2-}; shift 2 ;;
    --mpiexec) mpiexec=${2-}; shift 2 ;;
    --result) result=${2-}; shift 2 ;;
    --finalize-grace) grace=${2-}; shift 2 ;;
    -h | --help) usage; exit 0 ;;
    --) shift; break ;;
    *) die "unknown argument '$1' (put the command after --; see --help)" ;;
  esac
done
(($#)) || die "no command given (after --)"
[[ -n $name ]] || die "--name is required"
check_cluster_name "$name"
require_netns
load_config "$name"

[[ $ppn =~ ^[1-9][0-9]*$ ]] || die "--ppn '$ppn' must be a positive integer"
[[ $limit =~ ^[1-9][0-9]*$ ]] || die "--timeout '$limit' must be a positive number of seconds"
IFS=, read -r -a all_hosts <<<"$cfg_host_namespaces"
use_hosts=${use_hosts:-${#all_hosts[@]}}
[[ $use_hosts =~ ^[1-9][0-9]*$ ]] && ((use_hosts <= ${#all_hosts[@]})) ||
  die "--hosts '$use_hosts' must be from 1 to ${#all_hosts[@]} (the cluster's hosts)"
command -v "$mpiexec" >/dev/null || die "--mpiexec '$mpiexec' not found (Debian package mpich)"
if [[ -n $preload && ! -r $preload ]]; then die "--preload '$preload': no such file"; fi
[[ $grace =~ ^[0-9]+$ ]] || die "--finalize-grace '$grace' must be a number of seconds"
if [[ -n $result ]]; then
  command -v h5ls >/dev/null && command -v h5dump >/dev/null || die "--result needs h5ls and h5dump (Debian package hdf5-tools)"
fi

hosts=("${all_hosts[@]:0:use_hosts}")
ranks=$((use_hosts * ppn))
if ((ranks > $(nproc))) && [[ -z $preload ]]; then
  echo "launch.sh: $ranks ranks on $(nproc) cores without --preload: MPICH's busy polling will dominate the timings" >&2
fi
if ((ranks >= 3)) && [[ -z $result ]]; then
  echo "launch.sh: $ranks ranks over UCX/TCP may hang in MPI_Finalize (see --help); without --result the job ends only at --timeout (${limit}s)" >&2
fi

env_args=(-genv UCX_TLS "${IBT_CLUSTER_UCX_TLS:-tcp,self}" -genv UCX_NET_DEVICES "$IBT_CLUSTER_IFACE")
[[ -z $preload ]] || env_args+=(-genv LD_PRELOAD "$(readlink -f "$preload")")

# The newest run id in the result file, or nothing. Read without taking HDF5's file lock
# (HDF5_USE_FILE_LOCKING=FALSE), so this look never makes the writer's open fail; a read
# that races with the writer just fails and is tried again.
last_run() {
  HDF5_USE_FILE_LOCKING=FALSE h5ls "$result/runs" 2>/dev/null | awk '$2 == "Group" {print $1}' | sort | tail -n 1
}
# run_closed ID: true once run ID carries a final status, which it leaves in run_status.
run_status=""
run_closed() {
  run_status=$(HDF5_USE_FILE_LOCKING=FALSE h5dump -a "/runs/$1/status" "$result" 2>/dev/null |
    sed -n 's/^ *(0): "\([a-z]*\)"$/\1/p')
  [[ -n $run_status && $run_status != running ]]
}

runs_before=""
[[ -z $result ]] || runs_before=$(last_run)

export IBT_CLUSTER_NAME=$name
ip netns exec "$cfg_switch_namespace" timeout --kill-after=10 "$limit" \
  "$mpiexec" -launcher ssh -launcher-exec "$here/netns_exec.sh" -iface "$cfg_bridge" \
  -hosts "$(IFS=,; echo "${hosts[*]}")" -ppn "$ppn" -n "$ranks" "${env_args[@]}" "$@" &
job=$!  # `ip netns exec` execs `timeout`: this is timeout's pid
# Stopping launch.sh stops the job too (timeout passes the signal on to mpiexec).
trap 'kill -TERM "$job" 2>/dev/null' INT TERM

# The job counts as finished once the newest run is closed and stays the newest for
# --finalize-grace seconds (a sweep closes one run and opens the next many times).
closed_run="" closed_at=0
hung_in_finalize=0
while kill -0 "$job" 2>/dev/null; do
  sleep 1
  [[ -n $result ]] || continue
  run=$(last_run)
  if [[ -n $run && $run > $runs_before ]] && run_closed "$run"; then
    if [[ $run != "$closed_run" ]]; then
      closed_run=$run closed_at=$SECONDS
    elif ((SECONDS - closed_at >= grace)) && kill -0 "$job" 2>/dev/null; then
      echo "launch.sh: run $run in $result is $run_status but the job has not exited ${grace}s later (MPICH over UCX/TCP hanging in MPI_Finalize); ending it" >&2
      hung_in_finalize=1
      kill -TERM "$job" 2>/dev/null
      break
    fi
  else
    closed_run=""
  fi
done
wait "$job"
status=$?

if ((hung_in_finalize)); then
  for ns in "${hosts[@]}"; do kill_namespace_processes "$ns"; done
  [[ $run_status == complete ]] && exit 0
  exit 1
fi
if ((status == 124 || status == 137)); then
  echo "launch.sh: the job did not end within ${limit}s; ending what is left of it on ${hosts[*]}" >&2
  for ns in "${hosts[@]}"; do kill_namespace_processes "$ns"; done
  exit 124
fi
exit "$status"
