#!/usr/bin/env bash
# cli_test.sh IBT: one CLI vocabulary (issue 17, item 4):
#   - every command's --help opens with a usage line, has examples, prints no float default
#     as its binary round trip (=0.0030000000000000001), and `ibt help CMD` prints the same;
#   - old spellings still work for one release, with a note naming the new one, and giving
#     both spellings of one option is refused (exit 2);
#   - `-o` is --out wherever it is not nccl-tests' reduce op (collectives).
set -u
ibt=$1 expect=$(dirname "$0")/../expect_exit.sh
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "cli_test: FAIL: $*" >&2; exit 1; }
commands=$("$ibt" --help | awk '/^commands:/ { on = 1; next } on && /^  [a-z]/ { print $1 } on && /^$/ { exit }')
[[ -n $commands ]] || fail "no commands listed by ibt --help"
for cmd in $commands; do
  [[ $cmd == gemm ]] && ! "$ibt" gemm --help > /dev/null 2>&1 && continue  # a build without CUDA
  [[ $cmd == collectives ]] && continue  # its help and flags are nccl-tests' (h-nccl's issue-17 item 1)
  help=$("$ibt" "$cmd" --help 2>&1) || fail "ibt $cmd --help exited non-zero"
  grep -q "^usage: " <<<"$help" || fail "ibt $cmd --help has no usage line"
  grep -qi "^examples:" <<<"$help" || fail "ibt $cmd --help has no examples"
  if grep -Eq "=[0-9]*\.[0-9]*0000000[0-9]|=[0-9]*\.[0-9]*9999999[0-9]" <<<"$help"; then
    fail "ibt $cmd --help prints a float default as its binary round trip: $(grep -Eo '=[0-9.]{12,}' <<<"$help" | head -1)"
  fi
  [[ $("$ibt" help "$cmd" 2>&1) == "$help" ]] || fail "ibt help $cmd differs from ibt $cmd --help"
done
# Old spellings: they work, say what the new one is, and cannot be combined with it.
"$ibt" project --model tiny-dense --topology local-cpu --gpus 2 --global-batch 8 --mbs 2 > "$dir/mbs.log" 2> "$dir/mbs.err" ||
  fail "--mbs no longer works"
grep -q "note: --mbs is now --micro-batch-size" "$dir/mbs.err" || fail "--mbs gave no note"
grep -q " b2 " "$dir/mbs.log" || fail "--mbs 2 did not set the micro batch size"
"$expect" 2 "--mbs and --micro-batch-size are one option" "$ibt" project --model tiny-dense --topology local-cpu \
  --gpus 2 --mbs 2 --micro-batch-size 2 || exit 1
# (Whether the crossover itself then succeeds is not this test's business: only that both
# spellings are taken.)
"$ibt" crossover --model tiny-dense --gpus 4 --global-batch 8 --domain-sizes 2 --scale-out-gbps 100 --base-topology local-cpu \
  > /dev/null 2> "$dir/base.err"
grep -q "note: --base-topology is now --topology" "$dir/base.err" || fail "--base-topology gave no note"
"$ibt" crossover --model tiny-dense --gpus 4 --global-batch 8 --domain-sizes 2 --scale-out-gbps 100 --topology local-cpu \
  > /dev/null 2> "$dir/topology.err"
if grep -qi "unrecognised option\|unrecognized option" "$dir/base.err" "$dir/topology.err"; then fail "crossover --topology"; fi
"$ibt" project --model tiny-dense --topology local-cpu --gpus 2 --global-batch 8 -o "$dir/p.h5" > /dev/null || fail "project -o"
"$ibt" export "$dir/p.h5" --json -o "$dir/p.json" && [[ -s $dir/p.json ]] || fail "export -o"
"$ibt" export "$dir/p.h5" --json --output "$dir/q.json" 2> "$dir/out.err" && [[ -s $dir/q.json ]] ||
  fail "export --output no longer works"
grep -q "note: --output is now --out" "$dir/out.err" || fail "--output gave no note"
"$expect" 2 "unknown command 'nope'" "$ibt" help nope || exit 1
echo "cli_test: ok"
