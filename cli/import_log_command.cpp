// ibt import-log: a Megatron-LM, NeMo or torchtitan training log as a measured run in an HDF5 results file,
// in the shape `ibt train` writes (attributes model and split, table "steps"), so that
// `ibt scaling --measured`, `ibt project-compare` and `ibt report` show it beside the
// projections. Provenance: the log's path, format, SHA-256 and the parser's version.
#include <algorithm>
#include <boost/program_options.hpp>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <limits>
#include <sstream>

#include "cli/cli.hpp"
#include "cli/commands.hpp"
#include "collectives/runtime/run_recorder.hpp"
#include "core/errors.hpp"
#include "core/input_file.hpp"
#include "core/output_file.hpp"
#include "ibt/version.hpp"
#include "models/plan/accounting.hpp"
#include "models/plan/model_file.hpp"
#include "reports/ingest/log_format.hpp"
#include "reports/ingest/sha256.hpp"
#include "reports/ingest/training_log.hpp"
#include "reports/tables/steps_table.hpp"
#include "topologies/hardware/topology.hpp"
#include "topologies/projection/projection_report.hpp"

namespace ibt::suites {
namespace {

namespace po = boost::program_options;

struct ImportArgs {
  std::string file, format, config, model_name, topology, dtype = "bf16", out;
  int warmup = 1;
  long long world_size = 0;
};

// The formats read and whether their layout comes from --config.
struct LogFormat {
  const char* name;
  TrainingLog (*parse)(const LogSource&);
  bool takes_config, takes_world_size;
};
const LogFormat kFormats[] = {{"megatron", parse_megatron_log, false, false},
                              {"nemo", parse_nemo_log, true, false},
                              {"torchtitan", parse_torchtitan_log, true, true}};

// The format named (--format, or the one the log's lines show): its row of kFormats,
// refused when the options given do not apply to it.
const LogFormat& find_format(const std::string& name, const ImportArgs& a) {
  for (const LogFormat& f : kFormats) {
    if (name != f.name) continue;
    const std::string which = a.format.empty() ? "this " + name + " log (detected)" : "a " + name + " log";
    if (!a.config.empty() && !f.takes_config)
      throw UsageError("--config: " + which + " carries its own layout (nemo and torchtitan take --config)");
    if (a.world_size != 0 && !f.takes_world_size)
      throw UsageError("--world-size: only torchtitan logs take it (their config may leave the world open), not " +
                       which);
    return f;
  }
  throw UsageError("--format '" + name + "': the formats read are megatron, nemo and torchtitan");
}

// Lower-case letters and digits only: "llama3 8B" and "llama3-8b" name one model.
std::string model_key(const std::string& name) {
  std::string key;
  for (const char c : name)
    if (std::isalnum(static_cast<unsigned char>(c)))
      key += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return key;
}

// The log's model must be the catalog model named: its layers, width and sequence length,
// or where the log names the model instead of sizing it (torchtitan), that name.
void check_model(const TrainingLog& log, const models::ModelConfig& model) {
  const auto named = log.arguments.find("model_name");
  if (named != log.arguments.end() && model_key(named->second) != model_key(model.name))
    throw UsageError(log.file + ": the run trained '" + named->second + "' but --model is '" + model.name +
                     "': name the catalog model (or a .json) the log trained");
  const bool sized = named == log.arguments.end();
  const std::pair<const char*, long long> expected[] = {{"num_layers", sized ? model.layers : -1},
                                                        {"hidden_size", sized ? model.hidden : -1},
                                                        {"seq_length", model.seq_len}};
  for (const auto& [name, want] : expected) {
    if (want < 0) continue;
    const long long got = log.integer(name);
    if (got != want)
      throw UsageError(log.file + ": " + name + " is " + std::to_string(got) + " but model '" + model.name + "' has " +
                       std::to_string(want) + ": name the catalog model (or a .json) the log trained");
  }
}

// The parallel layout from Megatron's arguments.
models::ParallelSplit log_split(const TrainingLog& log) {
  const LogLayout layout = read_log_layout(log);  // every number checked against its meaning
  models::ParallelSplit s;
  s.tp = layout.tp;
  s.pp = layout.pp;
  s.cp = layout.cp;
  s.ep = layout.ep;
  s.dp = layout.dp;
  s.micro_batch_size = layout.micro_batch_size;
  s.microbatches = layout.microbatches;
  s.vpp = layout.vpp;
  if (s.vpp > 1) s.schedule = models::ScheduleKind::interleaved;
  const auto sp = log.arguments.find("sequence_parallel");
  s.sequence_parallel = sp != log.arguments.end() && sp->second == "True";
  const auto rc = log.arguments.find("recompute_granularity");
  if (rc != log.arguments.end() && rc->second != "None") s.recompute = models::parse_recompute(rc->second);
  const auto zero = log.arguments.find("use_distributed_optimizer");
  if (zero != log.arguments.end() && zero->second == "True") s.zero = 1;
  s.zero = static_cast<int>(log.integer("zero_stage", s.zero));
  s.shard_group = static_cast<int>(log.integer("zero_shard_group", 0));
  return s;
}

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

const char* kAbout =
    "Reads a training log and stores it as a measured run: the layout (tp, pp, cp, dp,\n"
    "micro-batches, vpp, sequence parallelism, recompute, ZeRO), one row per logged step in\n"
    "table 'steps' (the first --warmup as step 0, which readers leave out), MFU against the\n"
    "--topology device's --dtype peak, and provenance: the log's path, format, SHA-256 and\n"
    "the parser version. The model sizes the log gives must match --model. A log has no\n"
    "time breakdown: compute and communication columns are NaN. Without --format the format is\n"
    "the one the log's lines show (below); a log showing none, or two, is refused saying what\n"
    "it found where: then name it with --format. Formats:\n"
    "  megatron    Megatron-LM: the arguments block, then 'iteration N/ M | ... elapsed time\n"
    "              per iteration (ms): X | throughput per GPU (TFLOP/s/GPU): Y' lines.\n"
    "  nemo        NeMo (Lightning): the YAML config NeMo 1.x prints after 'Experiment\n"
    "              configuration' (a NeMo 2.0 log lacks it: give the YAML with --config), then\n"
    "              'global_step: N | ... train_step_timing in s: X' lines (ProgressPrinter's\n"
    "              '|' form or the tqdm bar's 'key=value' form; tflops_per_sec_per_gpu if logged).\n"
    "  torchtitan  torchtitan: the log has no layout, so --config job.toml is required (and\n"
    "              --world-size N where data_parallel_shard_degree is -1); then 'step: N  loss: X\n"
    "              ... tps: N  tflops: X  mfu: X%' lines, ANSI colours or not. The step time is\n"
    "              the global batch's tokens over tps (per device) times the world size; the\n"
    "              config's [model] name and flavor must name --model.\n";

}  // namespace

int import_log_main(int argc, char** argv) {
  ImportArgs a;
  po::options_description opts("options");
  opts.add_options()("help,h", "show this help")("log", po::value(&a.file), "the training log (positional)")(
      "format", po::value(&a.format),
      "the log's format: megatron, nemo or torchtitan (default: the one its lines show)")(
      "config", po::value(&a.config), "nemo: the run's YAML config; torchtitan: the job's TOML (required)")(
      "world-size", po::value(&a.world_size), "torchtitan: ranks in the run, where the config leaves dp open")(
      "model", po::value(&a.model_name), "the catalog model (or .json) the log trained")(
      "topology", po::value(&a.topology), "the system it ran on (catalog name or .json): the device and its peak")(
      "dtype", po::value(&a.dtype)->default_value(a.dtype), "the dtype MFU refers to")(
      "warmup", po::value(&a.warmup)->default_value(a.warmup), "logged intervals left out as warm-up")(
      "out", po::value(&a.out), "HDF5 results file to append the run to");
  po::positional_options_description pos;
  pos.add("log", 1);
  po::variables_map vm;
  if (!parse_command_line(argc, argv, opts, vm, &pos)) {
    print_help(std::cout, "ibt import-log LOG [--format F] [--config C] --model M --topology T --out FILE.h5", kAbout,
               opts,
               {"ibt import-log train.log --model llama3-8b --topology dgx-h100 --out runs.h5",
                "ibt import-log titan.log --format torchtitan --config llama3_8b.toml --world-size 16 "
                "--model llama3-8b --topology dgx-h100 --out runs.h5"});
    return kExitOk;
  }
  if (a.file.empty()) throw UsageError("give the training log to import (ibt import-log LOG ...)");
  if (!a.format.empty()) find_format(a.format, a);  // a misspelt --format is refused before the log is read
  if (a.model_name.empty()) throw UsageError("--model is required: the catalog model the log trained");
  if (a.topology.empty()) throw UsageError("--topology is required: the system the log ran on");
  if (a.out.empty()) throw UsageError("--out is required: the HDF5 file to store the run in");
  if (a.warmup < 0) throw UsageError("--warmup must be 0 or more logged intervals");
  if (a.world_size < 0) throw UsageError("--world-size must be a positive number of ranks");
  refuse_output_over_inputs(
      a.out, "--out",
      {{"the log", a.file}, {"--config", a.config}, {"--model", a.model_name}, {"--topology", a.topology}});
  store::check_appendable(a.out);

  // Read through one descriptor each: a FIFO, device or folder is refused, never waited on.
  LogSource source{read_input_file(a.file, "log", kMaxLogBytes), a.file, "", a.config, a.world_size};
  if (!a.config.empty()) source.config_text = read_input_file(a.config, "--config", kMaxInputFileBytes);
  const std::string& text = source.text;
  // Without --format the log's own lines say which framework wrote it (log_format.hpp).
  const LogFormatMark mark = a.format.empty() ? detect_log_format(text, a.file) : LogFormatMark{a.format, 0, ""};
  const LogFormat& format = find_format(mark.format, a);
  const TrainingLog log = format.parse(source);
  const models::ModelConfig model = models::load_model(a.model_name);
  check_model(log, model);
  const models::ParallelSplit split = log_split(log);
  const topo::Topology system = topo::load_topology(a.topology);
  const double peak_gflops = system.device.peak(a.dtype).get() * 1e3;
  const size_t warm = std::min<size_t>(static_cast<size_t>(a.warmup), log.iterations.size() - 1);

  const int ranks = split.world_size();
  const double sequences = static_cast<double>(split.global_batch());
  const double flops = models::model_flops_per_step(model, sequences);
  std::vector<double> kept;
  RunRecorder recorder(a.out, "train");
  for (size_t i = 0; i < log.iterations.size(); ++i) {
    const LoggedIteration& it = log.iterations[i];
    const bool timed = i >= warm;
    if (timed) kept.push_back(it.step_s);
    tables::StepRow row;  // a log has no time breakdown: those fields stay NaN
    row.step = static_cast<std::int64_t>(timed ? i - warm + 1 : 0);
    row.iteration = static_cast<std::int64_t>(it.iteration);
    row.step_time = it.step_s;
    row.tokens_per_s = sequences * model.seq_len / it.step_s;
    row.model_tflops = flops / it.step_s / 1e12;
    row.mfu = flops / (it.step_s * ranks * peak_gflops * 1e9);
    if (it.tflops_per_gpu >= 0) row.logged_tflops_per_gpu = it.tflops_per_gpu;
    recorder.append(tables::StepRow::kLoggedLayout, row);
  }
  const double median_s = median_of(kept);
  recorder.set_attr("command_line", joined_command_line(argc, argv));
  recorder.set_attr("ibt_version", std::string(kVersion));
  recorder.set_attr("git_commit", std::string(kGitCommit));
  recorder.set_attr("backend", std::string("imported log"));
  recorder.set_attr("model", model.name);
  recorder.set_attr("model_json", topo::model_file_text(a.model_name));
  recorder.set_attr("split", models::describe(split));
  recorder.set_attr("world_size", static_cast<std::int64_t>(ranks));
  recorder.set_attr("topology", system.name);
  recorder.set_attr("gpu_name", system.device.name);
  recorder.set_attr("dtype", a.dtype);
  recorder.set_attr("model_flops_per_step", flops);
  recorder.set_attr("peak_gflops_per_rank", peak_gflops);
  recorder.set_attr("median_step_s", median_s);
  recorder.set_attr("source_file", a.file);
  recorder.set_attr("source_format", std::string(format.name));
  recorder.set_attr("source_format_from", a.format.empty()
                                              ? "detected from line " + std::to_string(mark.line) + ": " + mark.evidence
                                              : std::string("--format"));
  recorder.set_attr("source_sha256", sha256_hex(text));
  recorder.set_attr("parser_version", log.parser_version);
  if (!a.config.empty()) {
    recorder.set_attr("source_config_file", a.config);
    recorder.set_attr("source_config_sha256", sha256_hex(source.config_text));
  }
  recorder.finish(store::RunStatus::complete);

  const std::string detected = a.format.empty() ? " detected from line " + std::to_string(mark.line) : "";
  std::printf("ibt import-log: %s (%s%s, %zu logged intervals, %zu after %zu warm-up)\n", a.file.c_str(), format.name,
              detected.c_str(), log.iterations.size(), kept.size(), warm);
  std::printf("  %s, %s on %d x %s\n", model.name.c_str(), models::describe(split).c_str(), ranks,
              system.device.name.c_str());
  std::printf(
      "  median iteration %.4g s, %.4g tokens/s (%.4g per device), %.4g model TFLOP/s per device, "
      "MFU %.1f%% of %s peak\n",
      median_s, sequences * model.seq_len / median_s, sequences * model.seq_len / median_s / ranks,
      flops / median_s / ranks / 1e12, 100 * flops / (median_s * ranks * peak_gflops * 1e9), a.dtype.c_str());
  std::printf("run %s written to %s\n", recorder.run_id().c_str(), a.out.c_str());
  return kExitOk;
}

}  // namespace ibt::suites
