#!/usr/bin/env bash
# A one-node Slurm on loopback, private to this test: munged, slurmctld and slurmd with
# their own key, socket, ports, spool and config under DIR (never /etc/slurm or the
# system's munge). A small ibt job goes through srun --mpi=pmi2 and its HDF5 file is
# read back with h5dump. Every daemon is stopped on exit, by the pid it wrote.
# Usage: slurm_local_test.sh IBT DIR
set -uo pipefail
test_name=${0##*/}
ibt=$1 dir=$2
fail() { echo "$test_name: FAIL: $*" >&2; exit 1; }
skip() { echo "$test_name: SKIP: $*"; exit 77; }

[[ $(id -u) -eq 0 ]] || skip "needs root to run slurmd"
for tool in munged slurmctld slurmd srun sinfo; do
  command -v $tool >/dev/null || skip "'$tool' not installed (Debian packages munge slurmctld slurmd slurm-client)"
done

rm -rf "$dir" && mkdir -p "$dir"/{state,spool} && chmod 700 "$dir"
stop_daemons() {
  local status=$? pidfile
  for pidfile in "$dir"/slurmd.pid "$dir"/slurmctld.pid "$dir"/munged.pid; do
    [[ -s $pidfile ]] && kill "$(cat "$pidfile")" 2>/dev/null
  done
  sleep 1
  for pidfile in "$dir"/slurmd.pid "$dir"/slurmctld.pid "$dir"/munged.pid; do
    [[ -s $pidfile ]] && kill -KILL "$(cat "$pidfile")" 2>/dev/null
  done
  if ((status != 0)); then
    for log in "$dir"/*.log; do echo "--- $log"; tail -n 20 "$log"; done
  fi
  exit "$status"
}
trap stop_daemons EXIT

# Ports from this process's id, so two runs of the test do not collide.
ctld_port=$((20000 + $$ % 20000 * 2)) slurmd_port=$((20001 + $$ % 20000 * 2))
node=$(hostname -s)

head -c 1024 /dev/urandom >"$dir/munge.key" && chmod 400 "$dir/munge.key"
munged --force --socket="$dir/munge.sock" --key-file="$dir/munge.key" --pid-file="$dir/munged.pid" \
  --log-file="$dir/munged.log" --seed-file="$dir/munge.seed" || fail "munged did not start"

export SLURM_CONF=$dir/slurm.conf
cat >"$SLURM_CONF" <<EOF
ClusterName=ibttest
SlurmctldHost=$node(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
AuthType=auth/munge
AuthInfo=socket=$dir/munge.sock
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
ReturnToService=2
NodeName=$node NodeAddr=127.0.0.1 CPUs=$(nproc) State=UNKNOWN
PartitionName=ibt Nodes=$node Default=YES MaxTime=10 State=UP
EOF

slurmctld -i -f "$SLURM_CONF" || fail "slurmctld did not start"
slurmd -f "$SLURM_CONF" -N "$node" || fail "slurmd did not start"
for _ in $(seq 30); do
  [[ $(sinfo -h -n "$node" -o %t 2>/dev/null) == idle ]] && break
  sleep 1
done
[[ $(sinfo -h -n "$node" -o %t 2>/dev/null) == idle ]] || fail "the node did not become idle: $(sinfo 2>&1)"
echo "$test_name: local Slurm up ($(srun --version), node $node, ports $ctld_port/$slurmd_port)"

file=$dir/slurm.h5
timeout 120 srun --mpi=pmi2 -n 2 -t 2 "$ibt" collectives --op all_reduce --scope world -b 8 -e 64K -f 8 -n 5 -w 1 --out "$file" ||
  fail "srun of ibt collectives failed"

attr() { h5dump -a "/runs/000001/$1" "$file" | sed -n 's/^ *(0): //p' | tr -d '"'; }
[[ $(attr status) == complete ]] || fail "run status '$(attr status)', not complete"
[[ $(attr world_size) == 2 ]] || fail "world_size '$(attr world_size)', expected the 2 tasks srun started"
rows=$(h5dump -H -d /runs/000001/collectives "$file" | grep -o 'SIMPLE { ( [0-9]* )' | grep -o '[0-9]*')
((rows > 0)) || fail "no rows in the collectives table"
h5dump -a /runs/000001/environment/SLURM_JOB_ID "$file" >/dev/null 2>&1 || fail "the run did not record SLURM_JOB_ID"
echo "$test_name: ok: srun ran 2 ranks, run complete with $rows rows, SLURM_JOB_ID recorded"

# The sbatch template itself, sized down to this node on the command line (options
# given to sbatch override the script's #SBATCH lines): no GPU, so the mpi backend.
template=$(cd "$(dirname "$0")/../../scripts/slurm" && pwd)/collectives.sbatch
sbatch_file=$dir/sbatch.h5
IBT=$ibt IBT_RESULTS=$sbatch_file IBT_SRUN_MPI=pmi2 IBT_BACKEND=mpi IBT_ARGS="--op all_reduce -b 8 -e 1K -f 8 -n 3 -w 1" \
  timeout 120 sbatch --wait --nodes=1 --ntasks-per-node=2 --cpus-per-task=1 --gpus-per-node=0 \
  --time=2 --chdir="$dir" --output="$dir/sbatch-%j.out" "$template" || { cat "$dir"/sbatch-*.out; fail "the sbatch template failed"; }
sbatch_status=$(h5dump -a /runs/000001/status "$sbatch_file" | sed -n 's/^ *(0): //p' | tr -d '"')
[[ $sbatch_status == complete ]] || { cat "$dir"/sbatch-*.out; fail "the template's run is '$sbatch_status', not complete"; }
echo "$test_name: PASS (srun and the collectives.sbatch template both stored complete runs)"
