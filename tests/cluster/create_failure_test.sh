#!/usr/bin/env bash
# A create that fails half way removes what it made, and only that: a namespace it finds
# already there (made here by the test, standing for someone else's) is left untouched.
set -uo pipefail
source "$(dirname "$0")/lib.sh"
skip_unless_netns

name=ibt-tf$$
foreign=$name-h1
# The stand-in is removed first, keeping the test's status for remove_and_verify.
# shellcheck disable=SC2154  # s is assigned inside the trap
trap 's=$?; ip netns del "$foreign" 2>/dev/null; (exit $s); remove_and_verify $name' EXIT
ip netns add "$foreign" || fail "could not make the stand-in namespace $foreign"

output=$("$scripts/create.sh" --name "$name" --hosts 3 --rate 100mbit 2>&1)
status=$?
printf '%s\n' "$output"
((status == 2)) || fail "create.sh exited $status, expected 2"
grep -q "'$foreign' already exists and is not this run's" <<<"$output" || fail "the error does not name $foreign"
ip netns list | awk '{print $1}' | grep -qxF "$foreign" || fail "create.sh removed $foreign, which it did not make"
left=$(leftovers "$name" | grep -vxF "$foreign")
[[ -z $left ]] || fail "after the failed create, still present: $left"
echo "$test_name: PASS (failed create removed its switch and host 0, kept $foreign)"
