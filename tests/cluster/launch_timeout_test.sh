#!/usr/bin/env bash
# A job that does not end is ended at --timeout (status 124) and leaves no process behind
# in the hosts' namespaces; an MPI job that does end returns its status and ran with each
# host's own hostname (its UTS namespace), which is how MPI tells the hosts apart.
set -uo pipefail
source "$(dirname "$0")/lib.sh"
skip_unless_netns

name=ibt-tt$$
trap 'remove_and_verify $name' EXIT
"$scripts/create.sh" --name "$name" --hosts 2 || fail "create.sh failed"

names=$("$scripts/launch.sh" --name "$name" --ppn 1 --timeout 60 -- hostname 2>/dev/null | sort | tr '\n' ' ')
[[ $names == "$name-h0 $name-h1 " ]] || fail "ranks saw hostnames '$names', expected $name-h0 and $name-h1"
[[ $(hostname) != "$name"-* ]] || fail "the machine's own hostname changed to $(hostname)"
echo "$test_name: ok: ranks ran as $names; this machine is still $(hostname)"

start=$SECONDS
"$scripts/launch.sh" --name "$name" --ppn 1 --timeout 3 -- sleep 300
status=$?
elapsed=$((SECONDS - start))
((status == 124)) || fail "a job past its timeout exited $status, expected 124"
((elapsed < 30)) || fail "the 3 s timeout took ${elapsed}s"
for ns in "$name-h0" "$name-h1"; do
  left=$(ip netns pids "$ns")
  [[ -z $left ]] || fail "processes left in $ns after the timeout: $left"
done
echo "$test_name: PASS (timed-out job ended after ${elapsed}s, status 124, no process left)"
