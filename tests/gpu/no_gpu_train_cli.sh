#!/usr/bin/env bash
# no_gpu_train_cli.sh IBT [EXPECTED_PREFIX]: `ibt train --executor cuda` on a machine
# without a usable GPU (or in a build without CUDA) must exit 2 with exactly one line on
# stderr and nothing on stdout, the line starting with EXPECTED_PREFIX. Where a GPU is
# present the command trains instead: exit 77 (CTest's skip) saying so.
set -u
ibt=$1
prefix=${2:-"ibt train: error: --executor cuda: no CUDA device: "}
err=$(mktemp) out=$(mktemp)
trap 'rm -f "$err" "$out"' EXIT
"$ibt" train --executor cuda --model tiny-dense --steps 1 >"$out" 2>"$err"
status=$?
if [[ $status -eq 0 ]]; then
  echo "skipped: a usable GPU is present, so the no-GPU path cannot be exercised here"
  exit 77
fi
lines=$(wc -l <"$err")
cat "$out" "$err"
if [[ $status -ne 2 ]]; then echo "FAIL: exit status $status, expected 2" >&2; exit 1; fi
if [[ $lines -ne 1 ]]; then echo "FAIL: $lines lines on stderr, expected 1" >&2; exit 1; fi
if [[ -s $out ]]; then echo "FAIL: output on stdout" >&2; exit 1; fi
if [[ $(head -c ${#prefix} "$err") != "$prefix" ]]; then echo "FAIL: the line does not start with: $prefix" >&2; exit 1; fi
echo "ok: one line, exit 2"
