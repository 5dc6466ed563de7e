#!/usr/bin/env bash
# create.sh: an emulated multi-host cluster on one machine, for running ibt across a
# real (if virtual) network. Run scripts/cluster/create.sh --help for the details.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=common.sh
source "$here/common.sh"

usage() {
  cat <<EOF
usage: create.sh --name ibt-XXX [--hosts K] [--rate RATE] [--delay D] [--subnet A.B.C]

Creates K emulated hosts, each a network namespace NAME-h<i>, joined through a bridge
that lives in its own "switch" namespace NAME-sw. Host i has one link, interface
$IBT_CLUSTER_IFACE with address A.B.C.<i+1>/24, a veth pair to port p<i> of the bridge
($IBT_CLUSTER_BRIDGE, A.B.C.254, where launch.sh runs mpiexec). Nothing is created in, or
connected to, the machine's own network namespace: no route leads out of the cluster, so
its traffic stays inside the namespaces made here.

Options:
  --name NAME     cluster name, 'ibt-' + 1-16 lowercase letters/digits (required);
                  every namespace is called NAME-...
  --hosts K       number of hosts (default 2, at most 253)
  --rate RATE     shape each host's link to RATE in each direction, with tc's token
                  bucket (tbf) on both veth ends; tc syntax: <integer>bit|kbit|mbit|gbit,
                  e.g. 200mbit (default: unshaped, veth speed)
  --delay D       one-way delay on each host's outgoing link (tc netem, e.g. 5ms).
                  Needs the kernel's sch_netem; where the kernel lacks it (as on the
                  machines this project is built on) create.sh refuses rather than build
                  a cluster without the delay asked for
  --subnet A.B.C  private /24 for the hosts (default 10.99.0); it is only ever used
                  inside the cluster's namespaces

State: $IBT_CLUSTER_STATE_ROOT/NAME/ (override with IBT_CLUSTER_STATE_ROOT). Remove the
cluster with teardown.sh --name NAME; run jobs on it with launch.sh --name NAME.
Hosts get their own UTS name (the namespace name) when launch.sh starts processes there,
so MPI sees K separate nodes (see launch.sh --help for how ranks of one host talk).
EOF
}

name="" hosts=2 rate="" delay="" subnet=10.99.0
while (($#)); do
  case $1 in
    --name) name=${2-}; shift 2 ;;
    --hosts) hosts=${2-}; shift 2 ;;
    --rate) rate=${2-}; shift 2 ;;
    --delay) delay=${2-}; shift 2 ;;
    --subnet) subnet=${2-}; shift 2 ;;
    -h | --help) usage; exit 0 ;;
    *) die "unknown argument '$1' (see --help)" ;;
  esac
done

[[ -n $name ]] || die "--name is required (e.g. --name ibt-$$)"
check_cluster_name "$name"
[[ $hosts =~ ^[0-9]+$ ]] && ((hosts >= 1 && hosts <= 253)) || die "--hosts '$hosts' must be an integer from 1 to 253"

# A /24 of the private ranges (RFC 1918) only.
[[ $subnet =~ ^([0-9]+)\.([0-9]+)\.([0-9]+)$ ]] || die "--subnet '$subnet' is not of the form A.B.C"
a=${BASH_REMATCH[1]} b=${BASH_REMATCH[2]} c=${BASH_REMATCH[3]}
((b <= 255 && c <= 255)) && { ((a == 10)) || ((a == 172 && b >= 16 && b <= 31)) || ((a == 192 && b == 168)); } ||
  die "--subnet '$subnet' is not inside a private range (10/8, 172.16/12, 192.168/16)"

rate_bps=0
if [[ -n $rate ]]; then
  [[ $rate =~ ^([0-9]+)(bit|kbit|mbit|gbit)$ ]] || die "--rate '$rate' is not <integer>bit|kbit|mbit|gbit (e.g. 200mbit)"
  case ${BASH_REMATCH[2]} in
    bit) scale=1 ;; kbit) scale=1000 ;; mbit) scale=1000000 ;; gbit) scale=1000000000 ;;
  esac
  rate_bps=$((BASH_REMATCH[1] * scale))
  ((rate_bps >= 100000)) || die "--rate '$rate' is below 100kbit: MPI start-up alone would take minutes"
fi
if [[ -n $delay ]]; then
  [[ $delay =~ ^[0-9]+(\.[0-9]+)?(us|ms|s)$ ]] || die "--delay '$delay' is not a time such as 5ms"
fi

require_netns
dir=$(state_dir "$name")
mkdir -p "$IBT_CLUSTER_STATE_ROOT"
# mkdir is atomic: two creates of one name cannot both proceed.
mkdir "$dir" 2>/dev/null || die "cluster '$name' already exists (state in $dir); remove it with teardown.sh --name $name"
: >"$dir/created"

# From here on, any failure removes what was made so far.
created_ok=0
cleanup_on_failure() {
  ((created_ok)) && return
  echo "create.sh: creation failed; removing what was made" >&2
  "$here/teardown.sh" --name "$name" >&2 || true
}
trap cleanup_on_failure EXIT

# add_namespace NS: refuses a name that exists (it would not be ours), and records the
# namespace only once it exists, so teardown never deletes something it did not make.
add_namespace() {
  if ip netns list | awk '{print $1}' | grep -qxF "$1"; then
    die "network namespace '$1' already exists and is not this run's; refusing to touch it"
  fi
  ip netns add "$1"
  echo "netns $1" >>"$dir/created"
  ip -n "$1" link set lo up
}

# shape NS DEV: the token bucket for --rate on one end of a link. The bucket holds 2 ms
# at the rate (what the kernel's timers can refill smoothly), at least 4 KiB (two full
# frames; tbf splits larger GSO packets into frames). A bigger bucket would let messages
# up to its size through at veth speed, so small transfers would not see the link rate.
# The queue holds 50 ms at the rate, so TCP sees a bounded buffer, as at a switch port.
shape() {
  local ns=$1 dev=$2 parent=(root) burst
  burst=$((rate_bps / 8 / 500))
  ((burst >= 4096)) || burst=4096
  if [[ $3 == under-netem ]]; then parent=(parent 1: handle 2:); fi
  tc -n "$ns" qdisc add dev "$dev" "${parent[@]}" tbf rate "$rate" burst "$burst" latency 50ms
}

switch_ns=$name-sw
add_namespace "$switch_ns"
ip -n "$switch_ns" link add "$IBT_CLUSTER_BRIDGE" type bridge
ip -n "$switch_ns" addr add "$subnet.254/24" dev "$IBT_CLUSTER_BRIDGE"
ip -n "$switch_ns" link set "$IBT_CLUSTER_BRIDGE" up

host_list=() address_list=()
for ((i = 0; i < hosts; i++)); do
  ns=$name-h$i port=p$i address=$subnet.$((i + 1))
  add_namespace "$ns"
  # Both ends are created directly inside our namespaces: the pair never exists in the
  # machine's own namespace, not even for a moment.
  ip -n "$switch_ns" link add "$port" type veth peer name "$IBT_CLUSTER_IFACE" netns "$ns"
  ip -n "$switch_ns" link set "$port" master "$IBT_CLUSTER_BRIDGE" up
  ip -n "$ns" addr add "$address/24" dev "$IBT_CLUSTER_IFACE"
  ip -n "$ns" link set "$IBT_CLUSTER_IFACE" up

  host_mode=root
  if [[ -n $delay ]]; then
    if ! err=$(tc -n "$ns" qdisc add dev "$IBT_CLUSTER_IFACE" root handle 1: netem delay "$delay" 2>&1); then
      die "--delay $delay: this kernel cannot add delay (tc netem failed: ${err//$'\n'/ }; the module sch_netem is missing here). Refusing to build a cluster without the delay asked for; rerun without --delay for rate shaping only"
    fi
    host_mode=under-netem
  fi
  if [[ -n $rate ]]; then
    shape "$ns" "$IBT_CLUSTER_IFACE" "$host_mode"   # host -> switch
    shape "$switch_ns" "$port" root                  # switch -> host
  fi
  host_list+=("$ns") address_list+=("$address")
done

{
  echo "name=$name"
  echo "hosts=$hosts"
  echo "host_namespaces=$(IFS=,; echo "${host_list[*]}")"
  echo "host_addresses=$(IFS=,; echo "${address_list[*]}")"
  echo "switch_namespace=$switch_ns"
  echo "switch_address=$subnet.254"
  echo "iface=$IBT_CLUSTER_IFACE"
  echo "bridge=$IBT_CLUSTER_BRIDGE"
  echo "rate=${rate:-unshaped}"
  echo "rate_bps=$rate_bps"
  echo "delay=${delay:-none}"
} >"$dir/config"
created_ok=1

echo "cluster $name: $hosts hosts (${host_list[*]}), link ${rate:-unshaped}${delay:+, +$delay one-way}, subnet $subnet.0/24"
echo "  run:    $here/launch.sh --name $name --ppn N -- COMMAND..."
echo "  remove: $here/teardown.sh --name $name"
