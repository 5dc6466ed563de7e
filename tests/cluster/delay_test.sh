#!/usr/bin/env bash
# --delay needs the kernel's netem. Where it is missing, create.sh must refuse (status 2,
# saying why) and leave nothing; where it exists, the delay must be on every host link.
set -uo pipefail
source "$(dirname "$0")/lib.sh"
skip_unless_netns

name=ibt-td$$
trap 'remove_and_verify $name' EXIT
output=$("$scripts/create.sh" --name "$name" --hosts 2 --rate 100mbit --delay 5ms 2>&1)
status=$?
printf '%s\n' "$output"
case $status in
  2)
    grep -q "this kernel cannot add delay" <<<"$output" || fail "refused without saying that the kernel cannot add delay"
    left=$(leftovers "$name")
    [[ -z $left ]] || fail "after refusing, still present: $left"
    echo "$test_name: PASS (no netem in this kernel: --delay refused, nothing left)" ;;
  0)
    for i in 0 1; do
      tc -n "$name-h$i" qdisc show dev ibt0 | grep -q "netem.*delay 5ms" || fail "host $i has no 5 ms netem delay"
      tc -n "$name-h$i" qdisc show dev ibt0 | grep -q "tbf.*rate 100Mbit" || fail "host $i lost its rate under netem"
    done
    echo "$test_name: PASS (netem present: 5 ms delay and 100 Mbit/s on both hosts)" ;;
  *) fail "create.sh exited $status" ;;
esac
