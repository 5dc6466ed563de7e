#!/usr/bin/env bash
# import_log_inputs_test.sh IBT DIR: `ibt import-log` judges its inputs like model files.
#   1. a 2 MB run of spaces, a 1 MB run of dots and 300,000 digits where each format's
#      patterns look (std::regex overflowed the stack on them: SIGSEGV) import as before, or
#      are refused as no metrics line;
#   2. layouts, batches and counts outside their meaning: tp 2^32+2 (once read as tp2), a
#      global batch of 0, -64 or 9e18, vpp -3, a torchtitan local batch of 0, an iteration
#      number beyond int64 (once "stoll");
#   3. special files as the log or --config: /dev/zero (once read until bad_alloc), a FIFO
#      (once blocked forever), a folder; a log over 512 MiB, a line over 4 MiB.
# Each refusal: exit 2, one line naming the problem, and no results file written.
set -eu
ibt=$1 dir=$2 here=$(dirname "$0")
rm -rf "$dir" && mkdir -p "$dir"
fail() { echo "import_log_inputs_test: FAIL: $*" >&2; exit 1; }
data=$here/import_log
common=(--model llama3-8b --topology dgx-h100)
titan=(--format torchtitan --config "$data/torchtitan_llama3_8b.toml" --world-size 16 "${common[@]}")

bad() {  # bad EXPECTED-TEXT ARGS...: exit 2 with the text, on one line, no results file
  local want=$1; shift
  rm -f "$dir/bad.h5"
  set +e; timeout 60 "$ibt" import-log "$@" --out "$dir/bad.h5" > "$dir/bad.txt" 2>&1; local rc=$?; set -e
  [[ $rc == 2 && $(wc -l < "$dir/bad.txt") == 1 ]] && grep -qF -- "$want" "$dir/bad.txt" ||
    { cat "$dir/bad.txt"; fail "exit $rc, expected 2 and one line with '$want'"; }
  [[ ! -e $dir/bad.h5 ]] || fail "a refused import wrote $dir/bad.h5"
}
# 1. Long runs of one character where each parser's patterns look: after "iteration" in a
# Megatron log, as a YAML value in a NeMo config, after "step:" in a torchtitan metrics line.
# Each crashed the std::regex parsers (SIGSEGV); the torchtitan line is no metrics line (exit 2).
good() {  # good EXPECTED-TEXT ARGS...: exit 0 with the text
  local want=$1; shift
  rm -f "$dir/good.h5"
  set +e; timeout 60 "$ibt" import-log "$@" --out "$dir/good.h5" > "$dir/good.txt" 2>&1; local rc=$?; set -e
  [[ $rc == 0 ]] && grep -q "$want" "$dir/good.txt" || { cat "$dir/good.txt"; fail "exit $rc, expected 0 and '$want'"; }
}
run_of() { head -c "$2" /dev/zero | tr '\0' "$1"; }
for run in "' ' $((2 << 20))" "'.' $((1 << 20))" "'7' 300000"; do
  eval "chars=\$(run_of $run)"
  { head -1 "$data/megatron_llama3_8b.log"; echo "iteration$chars"; tail -n +2 "$data/megatron_llama3_8b.log"; } \
    > "$dir/m.log"
  good "median iteration 7.1 s" "$dir/m.log" --format megatron "${common[@]}"
  { cat "$data/nemo2_llama3_8b.yaml"; echo "zz: $chars"; } > "$dir/n.yaml"
  good "median iteration 7.1 s" "$data/nemo2_llama3_8b.log" --format nemo --config "$dir/n.yaml" "${common[@]}"
  { echo "step: $chars loss: tps:"; cat "$data/torchtitan_llama3_8b.log"; } > "$dir/t.log"
  if [[ ${chars:0:1} == 7 ]]; then
    want="t.log:1: the step number is '7777777777777777777777777777777777777777... (300000 characters)', beyond"
  else
    want="t.log:1: a metrics line without 'step: N'"
  fi
  bad "$want" "$dir/t.log" "${titan[@]}"
done

# megatron ARG VALUE: the Megatron excerpt with one argument's value replaced.
megatron() { sed -E "s/^(  $1 \.+ ).*/\1$2/" "$data/megatron_llama3_8b.log" > "$dir/arg.log"; echo "$dir/arg.log"; }
bad "argument 'tensor_model_parallel_size' is 4294967298, out of range (it must be 1 .. 2147483647)" \
  "$(megatron tensor_model_parallel_size 4294967298)" --format megatron "${common[@]}"
for batch in 0 -64; do
  bad "argument 'global_batch_size' is $batch, out of range" "$(megatron global_batch_size $batch)" \
    --format megatron "${common[@]}"
done
bad "argument 'global_batch_size' is '9e18', out of range" "$(megatron global_batch_size 9e18)" --format megatron \
  "${common[@]}"
bad "argument 'virtual_pipeline_model_parallel_size' is -3, out of range" \
  "$(megatron virtual_pipeline_model_parallel_size -3)" --format megatron "${common[@]}"
sed 's/virtual_pipeline_model_parallel_size: null/virtual_pipeline_model_parallel_size: -3/' \
  "$data/nemo2_llama3_8b.yaml" > "$dir/vpp.yaml"
bad "argument 'virtual_pipeline_model_parallel_size' is -3, out of range" "$data/nemo2_llama3_8b.log" --format nemo \
  --config "$dir/vpp.yaml" "${common[@]}"
sed 's/^local_batch_size = 16/local_batch_size = 0/' "$data/torchtitan_llama3_8b.toml" > "$dir/local0.toml"
bad "training.local_batch_size (or batch_size) must be 1 or more sequences" "$data/torchtitan_llama3_8b.log" \
  --format torchtitan --config "$dir/local0.toml" --world-size 16 "${common[@]}"
sed 's/iteration       40\//iteration 99999999999999999999\//' "$data/megatron_llama3_8b.log" > "$dir/it.log"
bad "the iteration number is '99999999999999999999', beyond a 64-bit integer" "$dir/it.log" --format megatron \
  "${common[@]}"

# 3. Special files and sizes. A FIFO nobody writes to: the import must not wait on it.
mkfifo "$dir/fifo"
bad "log '/dev/zero' is not a regular file" /dev/zero --format megatron "${common[@]}"
bad "log '$dir/fifo' is not a regular file" "$dir/fifo" --format megatron "${common[@]}"
bad "log '$dir' is a directory" "$dir" --format megatron "${common[@]}"
bad "--config '/dev/zero' is not a regular file" "$data/nemo2_llama3_8b.log" --format nemo --config /dev/zero \
  "${common[@]}"
bad "--config '$dir/fifo' is not a regular file" "$data/torchtitan_llama3_8b.log" --format torchtitan \
  --config "$dir/fifo" --world-size 16 "${common[@]}"
truncate -s 600M "$dir/huge.log"  # sparse: no disk used
bad "log '$dir/huge.log' is 629145600 bytes, more than the 536870912 it may have" "$dir/huge.log" --format megatron \
  "${common[@]}"
{ head -c $((5 << 20)) /dev/zero | tr '\0' '.'; echo; cat "$data/megatron_llama3_8b.log"; } > "$dir/wide.log"
bad "$dir/wide.log:1: a line of 5242880 bytes, more than the 4194304 a log line may have" "$dir/wide.log" \
  --format megatron "${common[@]}"
echo "import_log_inputs_test: ok"
