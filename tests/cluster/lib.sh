# shellcheck shell=bash
# Shared by the emulated-cluster tests (sourced). Each test makes its own cluster with a
# name unique to its process, removes it on exit whatever happened, and then checks that
# nothing with that name is left.

scripts=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../scripts/cluster" && pwd)
test_name=${0##*/}

fail() { echo "$test_name: FAIL: $*" >&2; exit 1; }

# Exit 77 (CTest SKIP_RETURN_CODE), saying why, when network namespaces cannot be made.
skip_unless_netns() {
  if [[ $(id -u) -ne 0 ]]; then
    echo "$test_name: SKIP: needs root to create network namespaces"; exit 77
  fi
  if ! command -v ip >/dev/null || ! command -v tc >/dev/null; then
    echo "$test_name: SKIP: 'ip'/'tc' not installed (Debian package iproute2)"; exit 77
  fi
  local probe=ibt-probe$$
  if ! ip netns add "$probe" 2>/dev/null; then
    echo "$test_name: SKIP: 'ip netns add' does not work here (no network namespace support)"; exit 77
  fi
  if ! ip netns exec "$probe" unshare --uts true 2>/dev/null; then
    ip netns del "$probe"
    echo "$test_name: SKIP: 'ip netns exec' or 'unshare --uts' is not permitted here (a restricted container?)"; exit 77
  fi
  ip netns del "$probe"
}

# leftovers NAME: prints any namespace or state the cluster NAME still has.
leftovers() {
  ip netns list | awk '{print $1}' | grep "^$1-" || true
  [[ ! -e ${IBT_CLUSTER_STATE_ROOT:-/run/ibt-cluster}/$1 ]] || echo "state directory of $1"
}

# remove_and_verify NAME: the EXIT trap of every test: teardown, then fail the test if
# anything of NAME survived (also when the test itself had failed).
remove_and_verify() {
  local status=$? name=$1 left
  "$scripts/teardown.sh" --name "$name" >/dev/null || status=1
  left=$(leftovers "$name")
  if [[ -n $left ]]; then
    echo "$test_name: FAIL: after teardown, still present: $left" >&2
    status=1
  fi
  exit "$status"
}
