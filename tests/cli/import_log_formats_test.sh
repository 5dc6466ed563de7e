#!/usr/bin/env bash
# import_log_formats_test.sh IBT DIR: `ibt import-log` on NeMo and torchtitan log excerpts
# written for this test in each framework's documented format (import_log/, not copied
# logs; their times measure nothing):
#   1. NeMo 1.x (config dump in the log, tqdm bar with '\r' redraws), NeMo 2.0
#      (ProgressPrinter lines, layout from --config YAML) and torchtitan (coloured metrics
#      lines, layout from --config TOML and --world-size): the layout, the step times,
#      tokens/s and the logged TFLOP/s read back from the HDF5, provenance with SHA-256s;
#   2. each run in project-compare beside its projection, torchtitan's in scaling --measured;
#   3. torchtitan's ANSI colours make no difference (the same log without them stores the
#      same steps);
#   4. bad input: no step lines, a layout that contradicts --model or itself, a missing config or
#      world size, --config on a megatron log: exit 2 and one line naming the problem.
set -eu
ibt=$1 dir=$2 here=$(dirname "$0")
py=/usr/bin/python3
rm -rf "$dir" && mkdir -p "$dir"
fail() { echo "import_log_formats_test: FAIL: $*" >&2; exit 1; }
data=$here/import_log
common=(--model llama3-8b --topology dgx-h100)
sha() { sha256sum "$1" | cut -d' ' -f1; }

# check_run FILE.h5 FORMAT LOG CONFIG|- ITERATIONS STEP_TIMES LOGGED_TFLOPS: the stored run.
check_run() {
  "$py" - "$@" <<'PY' || fail "stored $2 run ($1)"
import sys, hashlib, h5py, math
path, fmt, log, config, iters, times, tflops = sys.argv[1:8]
sha = lambda p: hashlib.sha256(open(p, "rb").read()).hexdigest()
f = h5py.File(path); run = f["runs"][sorted(f["runs"])[-1]]; a = run.attrs
assert a["source_format"] == fmt and a["parser_version"] == fmt + "-2", dict(a)
assert a["source_sha256"] == sha(log), a["source_sha256"]
if config != "-":
    assert a["source_config_sha256"] == sha(config) and a["source_config_file"] == config
assert a["world_size"] == 16 and a["split"].startswith("dp4 tp2 pp2 ep1 vpp1 m16 b1"), a["split"]
s = run["steps"][:]
want_t = [float(x) for x in times.split(",")]
assert list(s["iteration"]) == [int(x) for x in iters.split(",")], s["iteration"]
assert list(s["step"]) == [0, 1, 2, 3], s["step"]
assert all(math.isclose(g, w, rel_tol=1e-9) for g, w in zip(s["step_time"], want_t)), s["step_time"]
assert all(math.isclose(g, 64 * 8192 / w, rel_tol=1e-9) for g, w in zip(s["tokens_per_s"], want_t)), s["tokens_per_s"]
assert list(s["logged_tflops_per_gpu"]) == [float(x) for x in tflops.split(",")], s["logged_tflops_per_gpu"]
assert all(math.isnan(x) for x in s["compute"]), "a log has no breakdown"
print(fmt, "stored run: ok")
PY
}

# compared FILE.h5 FORMAT: project-compare prints the measured step beside the projection.
compared() {
  "$ibt" project-compare "$1" --topology dgx-h100 > "$dir/pc-$2.txt" || true
  grep -Eq "^  step +[0-9.]+ +[0-9.]+ .*\(a $2 log has no time breakdown\)" "$dir/pc-$2.txt" ||
    { cat "$dir/pc-$2.txt"; fail "$2: no measured step beside its projection"; }
}

# NeMo 1.x: the configuration dump in the log; the bar redraws step 9 (stored once).
"$ibt" import-log "$data/nemo1_llama3_8b.log" --format nemo "${common[@]}" --out "$dir/n1.h5" > "$dir/n1.txt"
grep -q "dp4 tp2 pp2 ep1 vpp1 m16 b1 1f1b sp zero1 recompute=full on 16 x" "$dir/n1.txt" &&
  grep -q "median iteration 7.1 s" "$dir/n1.txt" || { cat "$dir/n1.txt"; fail "nemo 1.x layout or median"; }
check_run "$dir/n1.h5" nemo "$data/nemo1_llama3_8b.log" - 9,19,29,39 9.1,7.0,7.2,7.1 420,546,531,538
compared "$dir/n1.h5" nemo

# NeMo 2.0: the layout from the run's YAML (NeMo 2.0's nesting: strategy, data, model.config).
"$ibt" import-log "$data/nemo2_llama3_8b.log" --format nemo --config "$data/nemo2_llama3_8b.yaml" "${common[@]}" \
  --out "$dir/n2.h5" > "$dir/n2.txt"
grep -q "dp4 tp2 pp2 ep1 vpp1 m16 b1 1f1b sp zero1 recompute=none on 16 x" "$dir/n2.txt" ||
  { cat "$dir/n2.txt"; fail "nemo 2.0 layout from --config"; }
check_run "$dir/n2.h5" nemo "$data/nemo2_llama3_8b.log" "$data/nemo2_llama3_8b.yaml" 10,20,30,40 \
  9.1,7.0,7.2,7.1 420,546,531,538

# torchtitan: step time = 64 sequences x 8192 tokens / (tps x 16 ranks): 2,048 tps -> 16 s,
# 5,120 -> 6.4 s, 4,096 -> 8 s, 4,000 -> 8.192 s; median of the timed three 8 s.
titan=(--format torchtitan --config "$data/torchtitan_llama3_8b.toml" --world-size 16 "${common[@]}")
"$ibt" import-log "$data/torchtitan_llama3_8b.log" "${titan[@]}" --out "$dir/t.h5" > "$dir/t.txt"
grep -q "dp4 tp2 pp2 ep1 vpp1 m16 b1 1f1b sp zero3 recompute=selective on 16 x" "$dir/t.txt" &&
  grep -q "median iteration 8 s" "$dir/t.txt" || { cat "$dir/t.txt"; fail "torchtitan layout or median"; }
check_run "$dir/t.h5" torchtitan "$data/torchtitan_llama3_8b.log" "$data/torchtitan_llama3_8b.toml" 1,10,20,30 \
  16,6.4,8,8.192 103.2,258,206.4,201.6
compared "$dir/t.h5" torchtitan
"$ibt" scaling --model llama3-8b --topology dgx-h100 --gpus 16 --global-batch 64 --measured "$dir/t.h5" > "$dir/sc.txt"
grep -q "measured ($dir/t.h5): 1 point" "$dir/sc.txt" || { cat "$dir/sc.txt"; fail "scaling --measured lacks the torchtitan run"; }
# The same log printed with metrics.disable_color_printing: the same steps.
grep -q $'\x1b\\[' "$data/torchtitan_llama3_8b.log" || fail "the torchtitan excerpt has no colour codes to test"
sed 's/\x1b\[[0-9;]*m//g' "$data/torchtitan_llama3_8b.log" > "$dir/plain.log"
"$ibt" import-log "$dir/plain.log" "${titan[@]}" --out "$dir/plain.h5" > /dev/null
check_run "$dir/plain.h5" torchtitan "$dir/plain.log" "$data/torchtitan_llama3_8b.toml" 1,10,20,30 \
  16,6.4,8,8.192 103.2,258,206.4,201.6

bad() {  # bad EXPECTED-TEXT ARGS...: exit 2 with the text, on one line
  local want=$1; shift
  set +e; "$ibt" import-log "$@" --out "$dir/bad.h5" > "$dir/bad.txt" 2>&1; local rc=$?; set -e
  [[ $rc == 2 && $(wc -l < "$dir/bad.txt") == 1 ]] && grep -q "$want" "$dir/bad.txt" ||
    { cat "$dir/bad.txt"; fail "expected exit 2 and one line with '$want'"; }
}
bad "no '... global_step: N" "$data/nemo_truncated.log" --format nemo "${common[@]}"
bad "num_layers is 32 but model 'llama3-70b' has 80" "$data/nemo1_llama3_8b.log" --format nemo \
  --model llama3-70b --topology dgx-h100
sed 's/tensor_model_parallel_size: 2/tensor_model_parallel_size: 3/' "$data/nemo2_llama3_8b.yaml" > "$dir/tp3.yaml"
bad "world_size 16 is not data x tensor x pipeline x context" "$data/nemo2_llama3_8b.log" --format nemo \
  --config "$dir/tp3.yaml" "${common[@]}"
sed '0,/seq_length: 8192/s//seq_length: 4096/' "$data/nemo2_llama3_8b.yaml" > "$dir/seq.yaml"
bad "'data.seq_length' is 4096 but 'model.config.seq_length' is 8192" "$data/nemo2_llama3_8b.log" --format nemo \
  --config "$dir/seq.yaml" "${common[@]}"
bad "no NeMo configuration dump" "$data/nemo2_llama3_8b.log" --format nemo "${common[@]}"
bad "trained 'llama3 8B' but --model is 'llama3-70b'" "$data/torchtitan_llama3_8b.log" --format torchtitan \
  --config "$data/torchtitan_llama3_8b.toml" --world-size 16 --model llama3-70b --topology dgx-h100
bad "give the job's TOML with --config" "$data/torchtitan_llama3_8b.log" --format torchtitan "${common[@]}"
bad "give the run's world size with --world-size" "$data/torchtitan_llama3_8b.log" --format torchtitan \
  --config "$data/torchtitan_llama3_8b.toml" "${common[@]}"
bad "no 'step: N  loss: X" "$data/nemo2_llama3_8b.log" "${titan[@]}"
bad "a megatron log carries its own layout" "$data/megatron_llama3_8b.log" --format megatron \
  --config "$data/nemo2_llama3_8b.yaml" "${common[@]}"
echo "import_log_formats_test: ok"
