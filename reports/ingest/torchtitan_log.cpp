// torchtitan training logs read as measured runs. torchtitan's log has no layout, so two
// inputs matter:
// - the job's TOML config (--config): [parallelism] data_parallel_replicate_degree,
//   data_parallel_shard_degree (-1: the rest of the world, which --world-size then
//   gives), tensor_parallel_degree, pipeline_parallel_degree, context_parallel_degree,
//   expert_parallel_degree, pipeline_parallel_microbatch_size; [training]
//   local_batch_size (batch_size in older configs), global_batch_size, seq_len;
//   [activation_checkpoint] mode; [model] name and flavor;
// - the metrics line MetricsProcessor.log prints at step 1 and every metrics.log_freq
//   steps, coloured with ANSI codes unless metrics.disable_color_printing:
//   "step: 10  loss:  7.9000  [grad_norm: 2.0000  ]memory: 61.20GiB(77.33%)  tps: 1,234
//   tflops: 420.50  mfu: 42.52%". tps is tokens per second per device; the line has no
//   step time, so the step time is the global batch's tokens over tps times the world.
// The TOML is parsed by toml++ (strings, escapes, inline tables, multi-line arrays as the
// TOML spec has them); what stays here is which keys make the layout.
#include <toml++/toml.h>

#include <limits>
#include <optional>
#include <utility>

#include "core/errors.hpp"
#include "reports/ingest/training_log.hpp"

namespace ibt::suites {
namespace {

// The whole number at the dotted `key`; absent, `fallback`, or (fallback 0) a UsageError:
// the key is required. A degree beyond int (2^32+2) or a float is refused, never cut.
long long toml_integer(const toml::table& toml, const std::string& key, long long fallback, const std::string& file) {
  const toml::node_view<const toml::node> node = toml.at_path(key);
  if (!node) {
    if (fallback != 0) return fallback;
    throw UsageError(file + ": no '" + key + "' (needed for the run's layout)");
  }
  const std::optional<std::int64_t> x = node.value_exact<std::int64_t>();
  if (!x) throw UsageError(file + ": '" + key + "' is not a whole number (a TOML integer)");
  if (*x < -1 || *x > std::numeric_limits<int>::max())
    throw UsageError(file + ": '" + key + "' is " + std::to_string(*x) + ", out of range (it must be 1 .. " +
                     std::to_string(std::numeric_limits<int>::max()) + ")");
  return *x;
}

// The string at the dotted `key`, or none.
std::optional<std::string> toml_string(const toml::table& toml, const std::string& key, const std::string& file) {
  const toml::node_view<const toml::node> node = toml.at_path(key);
  if (!node) return std::nullopt;
  std::optional<std::string> text = node.value_exact<std::string>();
  if (!text) throw UsageError(file + ": '" + key + "' is not a string");
  return text;
}

toml::table parse_toml(const LogSource& source) {
  try {
    return toml::parse(source.config_text, source.config_file);
  } catch (const toml::parse_error& e) {
    throw UsageError(source.config_file + ":" + std::to_string(e.source().begin.line) + ": not TOML (" +
                     std::string(e.description()) + ")");
  }
}

struct Layout {
  long long dp_replicate = 1, dp_shard = 1, tp = 1, pp = 1, cp = 1, ep = 1;
  long long world() const { return dp_replicate * dp_shard * tp * pp * cp; }
};

Layout read_parallelism(const toml::table& toml, const LogSource& source) {
  const std::string& file = source.config_file;
  Layout l;
  l.dp_replicate = toml_integer(toml, "parallelism.data_parallel_replicate_degree", 1, file);
  l.tp = toml_integer(toml, "parallelism.tensor_parallel_degree", 1, file);
  l.pp = toml_integer(toml, "parallelism.pipeline_parallel_degree", 1, file);
  l.cp = toml_integer(toml, "parallelism.context_parallel_degree", 1, file);
  l.ep = toml_integer(toml, "parallelism.expert_parallel_degree", 1, file);
  l.dp_shard = toml_integer(toml, "parallelism.data_parallel_shard_degree", -1, file);
  const std::pair<const char*, long long> degrees[] = {{"data_parallel_replicate_degree", l.dp_replicate},
                                                       {"tensor_parallel_degree", l.tp},
                                                       {"pipeline_parallel_degree", l.pp},
                                                       {"context_parallel_degree", l.cp},
                                                       {"expert_parallel_degree", l.ep}};
  for (const auto& [key, degree] : degrees)
    if (degree < 1)
      throw UsageError(file + ": parallelism." + key + " is " + std::to_string(degree) + ": a degree is 1 or more");
  // Each degree is at most int's largest, so the product of four fits in a long long only
  // when checked step by step.
  long long others = 1;
  for (const long long d : {l.dp_replicate, l.tp, l.pp, l.cp})
    if (__builtin_mul_overflow(others, d, &others) || others > std::numeric_limits<int>::max())
      throw UsageError(file + ": the replicate x tensor x pipeline x context degrees are beyond " +
                       std::to_string(std::numeric_limits<int>::max()) + " ranks");
  if (l.dp_shard == -1) {
    if (source.world_size <= 0)
      throw UsageError(file + ": data_parallel_shard_degree is -1 (the rest of the world): give the run's world " +
                       "size with --world-size N");
    if (source.world_size % others != 0)
      throw UsageError("--world-size " + std::to_string(source.world_size) + " is not a multiple of the " +
                       "replicate x tensor x pipeline x context degrees (" + std::to_string(others) + ") in " + file);
    l.dp_shard = source.world_size / others;
  }
  if (l.dp_shard < 1)
    throw UsageError(file + ": parallelism.data_parallel_shard_degree is " + std::to_string(l.dp_shard) +
                     ": a degree is 1 or more (or -1, the rest of the world)");
  if (l.world() > std::numeric_limits<int>::max())
    throw UsageError(file + ": the parallel degrees lay out " + std::to_string(l.world()) + " ranks, beyond " +
                     std::to_string(std::numeric_limits<int>::max()));
  if (source.world_size > 0 && source.world_size != l.world())
    throw UsageError("--world-size " + std::to_string(source.world_size) + " but " + file + " lays out " +
                     std::to_string(l.world()) + " ranks");
  return l;
}

// The layout and model under Megatron's argument names.
void read_layout(TrainingLog& log, const LogSource& source) {
  const toml::table toml = parse_toml(source);
  const std::string& file = source.config_file;
  const Layout l = read_parallelism(toml, source);
  const long long dp = l.dp_replicate * l.dp_shard;
  const long long local = toml.at_path("training.local_batch_size")
                              ? toml_integer(toml, "training.local_batch_size", 0, file)
                              : toml_integer(toml, "training.batch_size", 0, file);
  const long long global = toml_integer(toml, "training.global_batch_size", -1, file);
  // Under pipeline parallelism a local batch is cut into microbatches of this size.
  const long long micro =
      l.pp > 1 ? toml_integer(toml, "parallelism.pipeline_parallel_microbatch_size", 1, file) : local;
  // torchtitan's default global batch of -1 means local x dp; every other value is sequences.
  const std::pair<const char*, bool> batches[] = {{"training.local_batch_size (or batch_size)", local >= 1},
                                                  {"training.global_batch_size", global >= 1 || global == -1},
                                                  {"parallelism.pipeline_parallel_microbatch_size", micro >= 1}};
  for (const auto& [key, fine] : batches)
    if (!fine) throw UsageError(file + ": " + key + " must be 1 or more sequences");
  auto& a = log.arguments;
  a["tensor_model_parallel_size"] = std::to_string(l.tp);
  a["pipeline_model_parallel_size"] = std::to_string(l.pp);
  a["context_parallel_size"] = std::to_string(l.cp);
  a["expert_model_parallel_size"] = std::to_string(l.ep);
  a["data_parallel_size"] = std::to_string(dp);
  a["world_size"] = std::to_string(l.world());
  a["micro_batch_size"] = std::to_string(micro);
  a["global_batch_size"] = std::to_string(global > 0 ? global : local * dp);
  a["seq_length"] = std::to_string(toml_integer(toml, "training.seq_len", 0, file));
  // torchtitan's tensor parallel plan shards the norms' activations over the sequence.
  a["sequence_parallel"] = l.tp > 1 ? "True" : "False";
  // FSDP2 over the shard degree is ZeRO-3; with replicas (HSDP) its groups are that size.
  if (l.dp_shard > 1) a["zero_stage"] = "3";
  if (l.dp_shard > 1 && l.dp_replicate > 1) a["zero_shard_group"] = std::to_string(l.dp_shard);
  const auto mode = toml_string(toml, "activation_checkpoint.mode", file);
  if (mode) a["recompute_granularity"] = *mode == "none" ? "None" : *mode;
  const auto name = toml_string(toml, "model.name", file), flavor = toml_string(toml, "model.flavor", file);
  if (!name || !flavor) throw UsageError(file + ": no [model] name and flavor (the model the run trained)");
  a["model_name"] = *name + " " + *flavor;
}

// One metrics line, its ANSI colour codes already removed.
LoggedIteration read_step(const std::string& line, const std::string& where, double tokens_per_step, long long world) {
  static const re2::RE2 step(R"((?:^|\s)step:\s*(\d+)\s)");
  static const re2::RE2 tps(R"(\btps:\s*([\d,]+(?:\.\d+)?))");
  static const re2::RE2 tflops(R"(\btflops:\s*([\d,]+(?:\.\d+)?))");
  LoggedIteration it;
  double x = 0;
  if (!find_log_step(line, step, where, it.iteration))
    throw UsageError(where + ": a metrics line without 'step: N' (not torchtitan's format)");
  if (!find_log_number(line, tps, x) || !(x > 0))
    throw UsageError(where + ": step " + std::to_string(it.iteration) + " has no positive 'tps: N'");
  it.step_s = tokens_per_step / (x * static_cast<double>(world));
  if (find_log_number(line, tflops, x)) it.tflops_per_gpu = x;
  return it;
}

}  // namespace

TrainingLog parse_torchtitan_log(const LogSource& source) {
  if (source.config_text.empty())
    throw UsageError(source.file + ": a torchtitan log has no layout: give the job's TOML with --config job.toml");
  static const re2::RE2 ansi("\x1b\\[[0-9;]*m");
  TrainingLog log;
  log.file = source.file;
  log.parser_version = kTorchtitanParserVersion;
  read_layout(log, source);
  const double tokens_per_step = static_cast<double>(log.integer("global_batch_size") * log.integer("seq_length"));
  const long long world = log.integer("world_size");
  const std::vector<std::string> lines = split_log_lines(source.text, source.file);
  for (size_t i = 0; i < lines.size(); ++i) {
    std::string line = lines[i];
    re2::RE2::GlobalReplace(&line, ansi, "");
    if (line.find("tps:") == std::string::npos || line.find("loss:") == std::string::npos) continue;
    if (line.find("validate step:") != std::string::npos) continue;  // validation, not a training step
    add_logged_iteration(log, read_step(line, source.file + ":" + std::to_string(i + 1), tokens_per_step, world));
  }
  require_logged_iterations(log, "'step: N  loss: X  ...  tps: N  tflops: X  mfu: X%' (torchtitan's metrics)");
  return log;
}

}  // namespace ibt::suites
