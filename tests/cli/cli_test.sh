#!/usr/bin/env bash
# cli_test.sh IBT: one CLI vocabulary (the help pages' layout is
# help_pages_test.sh's):
#   - old spellings still work for one release, with a note naming the new one, and giving
#     both spellings of one option is refused (exit 2);
#   - a short option has one meaning: -o, -r, -t are nccl-tests' in collectives, and their
#     old meanings elsewhere (--out, --run, --table) are hidden aliases with a note.
set -u
ibt=$1 expect=$(dirname "$0")/../expect_exit.sh
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "cli_test: FAIL: $*" >&2; exit 1; }
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
grep -q "note: --scale-out-gbps is now --scale-out-Gbps" "$dir/base.err" || fail "--scale-out-gbps gave no note"
"$ibt" crossover --model tiny-dense --gpus 4 --global-batch 8 --domain-sizes 2 --scale-out-Gbps 100 --topology local-cpu \
  > /dev/null 2> "$dir/topology.err"
if grep -qi "unrecognised option\|unrecognized option" "$dir/base.err" "$dir/topology.err"; then fail "crossover --topology"; fi
# -o, -r, -t mean nccl-tests' reduce op, root and threads (ibt collectives); the old meanings
# elsewhere (--out; show/export's --run and --table) still work, with a note.
"$ibt" project --model tiny-dense --topology local-cpu --gpus 2 --global-batch 8 -o "$dir/p.h5" > /dev/null \
  2> "$dir/o.err" || fail "project -o"
grep -q "note: -o is now --out (-o is --reduce-op in ibt collectives" "$dir/o.err" || fail "project -o gave no note"
"$ibt" export "$dir/p.h5" --json -o "$dir/p.json" && [[ -s $dir/p.json ]] || fail "export -o"
"$ibt" show "$dir/p.h5" -r last -t projections > "$dir/show-rt.log" 2> "$dir/rt.err" || fail "show -r -t"
grep -q "note: -r is now --run" "$dir/rt.err" && grep -q "note: -t is now --table" "$dir/rt.err" ||
  fail "show -r/-t gave no note"
"$ibt" show "$dir/p.h5" --run last --table projections > "$dir/show-long.log" || fail "show --run --table"
cmp -s "$dir/show-rt.log" "$dir/show-long.log" || fail "show -r -t and --run --table differ"
for cmd in p2p-matrix accept train sweep project crossover scaling calibrate checkpoint-bench report show export; do
  if "$ibt" "$cmd" --help | grep -Eq '^  -[ort] \['; then fail "ibt $cmd --help shows -o, -r or -t (collectives' letters)"; fi
done
"$ibt" collectives --help | grep -q '^  -o \[ --reduce-op \]' || fail "collectives -o is not --reduce-op"
"$ibt" collectives --help | grep -q '^  -r \[ --root \]' || fail "collectives -r is not --root"
"$ibt" export "$dir/p.h5" --json --output "$dir/q.json" 2> "$dir/out.err" && [[ -s $dir/q.json ]] ||
  fail "export --output no longer works"
grep -q "note: --output is now --out" "$dir/out.err" || fail "--output gave no note"
"$expect" 2 "unknown command 'nope'" "$ibt" help nope || exit 1
echo "cli_test: ok"
