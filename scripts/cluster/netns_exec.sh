#!/usr/bin/env bash
# shellcheck disable=SC2154  # the cfg_* variables are set by load_config (common.sh)
# netns_exec.sh: stands in for ssh under MPICH's hydra (-launcher ssh -launcher-exec),
# so that "logging in to host H" means entering the cluster's network namespace H with a
# UTS namespace of its own whose hostname is H. Hydra calls it as ssh would be called:
#   netns_exec.sh [ssh options] HOST word...
# and, like ssh, the words are joined and run by a shell (hydra quotes them for that).
# Only hosts of the cluster named by IBT_CLUSTER_NAME (set by launch.sh) are accepted.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=common.sh
source "$here/common.sh"

# Skip ssh options; those that take a value take the next word too.
while (($#)) && [[ $1 == -* ]]; do
  case $1 in
    -[bcDEeFIiJLlmOopQRSWw]) shift 2 ;;
    *) shift ;;
  esac
done
(($# >= 2)) || die "expected HOST and a command, as ssh would get them"
host=$1
shift

cluster=${IBT_CLUSTER_NAME:-}
[[ -n $cluster ]] || die "IBT_CLUSTER_NAME is not set (run jobs through launch.sh)"
load_config "$cluster"
[[ ,$cfg_host_namespaces, == *",$host,"* ]] || die "'$host' is not a host of cluster $cluster ($cfg_host_namespaces)"

# The hostname is set inside the new UTS namespace only; the machine's own is untouched.
exec ip netns exec "$host" unshare --uts -- \
  sh -c 'hostname "$1" || exit 1; shift; eval "exec $*"' netns_exec "$host" "$@"
