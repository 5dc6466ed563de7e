# shellcheck shell=bash
# Shared by create.sh, teardown.sh, launch.sh and netns_exec.sh (sourced, not run).
#
# A cluster is named NAME (always "ibt-" + letters/digits). Everything it creates is a
# network namespace called NAME-sw (the switch) or NAME-h<i> (host i); interfaces, the
# bridge, addresses and qdiscs live only inside those namespaces and vanish with them.
# The state directory records what was created, so teardown removes exactly that:
#   $IBT_CLUSTER_STATE_ROOT/NAME/created   one "netns <ns>" line per namespace, appended
#                                          only after the namespace exists
#   $IBT_CLUSTER_STATE_ROOT/NAME/config    key=value lines, written once creation succeeded

IBT_CLUSTER_STATE_ROOT=${IBT_CLUSTER_STATE_ROOT:-/run/ibt-cluster}
# Inside every host namespace the link is called this; inside the switch namespace the
# bridge is br0 and host i's port is p<i>.
# shellcheck disable=SC2034  # used by the scripts that source this file
IBT_CLUSTER_IFACE=ibt0
# shellcheck disable=SC2034
IBT_CLUSTER_BRIDGE=br0

die() { echo "${0##*/}: $*" >&2; exit 2; }

# A cluster name must carry the ibt- prefix and nothing a path or `ip` could misread.
check_cluster_name() {
  [[ $1 =~ ^ibt-[a-z0-9]{1,16}$ ]] ||
    die "--name '$1' is not a cluster name: it must be 'ibt-' followed by 1-16 lowercase letters or digits"
}

state_dir() { echo "$IBT_CLUSTER_STATE_ROOT/$1"; }

# Root and a working `ip netns` are preconditions for every script.
require_netns() {
  [[ $(id -u) -eq 0 ]] || die "needs root (network namespaces); run as root or with sudo"
  command -v ip >/dev/null && command -v tc >/dev/null ||
    die "needs 'ip' and 'tc' (Debian package iproute2)"
  command -v unshare >/dev/null || die "needs 'unshare' (Debian package util-linux)"
}

# load_config NAME: sets cfg_<key> for every key=value line of the cluster's config.
load_config() {
  local file key value
  file=$(state_dir "$1")/config
  [[ -r $file ]] || die "no cluster '$1' (no $file); create it with scripts/cluster/create.sh --name $1"
  while IFS='=' read -r key value; do
    [[ $key =~ ^[a-z_]+$ ]] || die "$file: malformed line '$key=$value'"
    printf -v "cfg_$key" '%s' "$value"
  done <"$file"
}

# created_namespaces NAME: the namespaces the state file says this cluster created, each
# checked to carry the cluster's prefix so a damaged state file cannot name another one.
created_namespaces() {
  local name=$1 file kind ns
  file=$(state_dir "$name")/created
  [[ -r $file ]] || return 0
  while read -r kind ns; do
    [[ $kind == netns && $ns == "$name"-* ]] ||
      { echo "${0##*/}: ignoring unexpected line '$kind $ns' in $file" >&2; continue; }
    echo "$ns"
  done <"$file"
}

# kill_namespace_processes NS: ends what still runs inside one of our namespaces (ranks or
# hydra proxies left by a killed or hung job): TERM, then KILL after a grace period.
kill_namespace_processes() {
  local ns=$1 pids
  pids=$(ip netns pids "$ns" 2>/dev/null) || return 0
  [[ -n $pids ]] || return 0
  # shellcheck disable=SC2086  # a list of pids
  kill -TERM $pids 2>/dev/null
  for _ in 1 2 3 4 5 6 7 8 9 10; do
    sleep 0.3
    pids=$(ip netns pids "$ns" 2>/dev/null)
    [[ -n $pids ]] || return 0
  done
  # shellcheck disable=SC2086
  kill -KILL $pids 2>/dev/null
  sleep 0.2
}
