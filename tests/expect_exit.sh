#!/usr/bin/env bash
# expect_exit.sh CODE REGEX COMMAND...: runs COMMAND and passes when it exits with CODE
# and its combined output matches the extended regular expression REGEX.
set -u
want=$1 pattern=$2
shift 2
output=$("$@" 2>&1)
got=$?
if [[ $got -ne $want ]]; then
  printf '%s\n' "$output"
  echo "expect_exit: exit status $got, expected $want: $*" >&2
  exit 1
fi
if ! grep -Eq -- "$pattern" <<<"$output"; then
  printf '%s\n' "$output"
  echo "expect_exit: output does not match /$pattern/: $*" >&2
  exit 1
fi
echo "expect_exit: ok (status $got, output matches /$pattern/)"
