#!/usr/bin/env bash
# teardown.sh --name NAME: removes exactly what create.sh recorded for cluster NAME (its
# network namespaces, and with them every interface, address and qdisc inside), after
# ending any process still running in them. Safe to run twice, or after a failed create.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=common.sh
source "$here/common.sh"

name=""
while (($#)); do
  case $1 in
    --name) name=${2-}; shift 2 ;;
    -h | --help)
      echo "usage: teardown.sh --name NAME   (removes the cluster recorded in $IBT_CLUSTER_STATE_ROOT/NAME)"
      exit 0 ;;
    *) die "unknown argument '$1' (see --help)" ;;
  esac
done
[[ -n $name ]] || die "--name is required"
check_cluster_name "$name"
require_netns

dir=$(state_dir "$name")
if [[ ! -d $dir ]]; then
  echo "teardown.sh: no cluster '$name' recorded in $IBT_CLUSTER_STATE_ROOT; nothing to remove"
  exit 0
fi

mapfile -t namespaces < <(created_namespaces "$name")
failed=0
# Hosts before the switch (reverse order of creation).
for ((i = ${#namespaces[@]} - 1; i >= 0; i--)); do
  ns=${namespaces[i]}
  if ! ip netns list | awk '{print $1}' | grep -qxF "$ns"; then
    continue  # already gone
  fi
  kill_namespace_processes "$ns"
  if ! ip netns del "$ns"; then
    echo "teardown.sh: could not delete network namespace $ns" >&2
    failed=1
  fi
done

if ((failed)); then
  echo "teardown.sh: state kept in $dir so a second teardown can retry" >&2
  exit 1
fi
rm -rf -- "$dir"
echo "teardown.sh: removed cluster $name (${#namespaces[@]} namespaces)"
