// NeMo training logs (NeMo 1.x scripts and NeMo 2.0 / NeMo-Run, both Megatron-Core under
// PyTorch Lightning) read as measured runs. Two parts matter:
// - the run's configuration as YAML: NeMo 1.x's pretraining scripts print it after
//   "************** Experiment configuration ***********" (OmegaConf.to_yaml of the
//   config: trainer.devices, trainer.num_nodes, model.tensor_model_parallel_size, ...);
//   a NeMo 2.0 log has no such dump, so the YAML is then given with --config. Keys are
//   looked up by their last name wherever they sit (NeMo 2.0 keeps the parallel sizes on
//   the strategy, the batch sizes on the data module, the sizes on model.config);
// - the per-step metrics Lightning prints: NeMo 2.0's ProgressPrinter
//   "Training epoch 0, iteration 10/100 | lr: ... | global_step: 10 | reduced_train_loss:
//   ... | train_step_timing in s: 7.0 | consumed_samples: ..." (metrics averaged over the
//   log interval) or the tqdm bar "Epoch 0: ... [..., global_step=9.00, ...,
//   train_step_timing in s=7.0]"; the FLOPs callback adds "tflops_per_sec_per_gpu".
// The YAML is parsed by yaml-cpp (flow style, quoting, anchors and block scalars as YAML
// defines them); what stays here is where the dump ends inside a log and which keys mean
// what.
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <utility>
#include <vector>

#include "core/errors.hpp"
#include "reports/ingest/training_log.hpp"

namespace ibt::suites {
namespace {

using Leaves = std::vector<std::pair<std::string, std::string>>;  // dotted path -> scalar text

// A YAML scalar as Megatron's arguments block would print it (yaml-cpp has removed quotes).
std::string megatron_spelling(const std::string& value) {
  if (value == "true" || value == "True") return "True";
  if (value == "false" || value == "False") return "False";
  if (value == "null" || value == "~" || value.empty()) return "None";
  return value;
}

// The config's nesting is a few levels; a deeper one is no NeMo config, and a bound keeps
// this walk's recursion from growing with the input.
constexpr int kMaxYamlDepth = 32;

// The scalar leaves under `node` (lists are skipped: no key read here sits in one).
void collect_leaves(const YAML::Node& node, const std::string& path, int depth, const std::string& where,
                    Leaves& leaves) {
  if (depth > kMaxYamlDepth)
    throw UsageError(where + ": the YAML nests deeper than " + std::to_string(kMaxYamlDepth) + " levels at '" + path +
                     "' (not a NeMo config)");
  for (const auto& entry : node) {
    if (!entry.first.IsScalar()) continue;
    const std::string key = path.empty() ? entry.first.Scalar() : path + "." + entry.first.Scalar();
    const YAML::Node& value = entry.second;
    if (value.IsMap())
      collect_leaves(value, key, depth + 1, where, leaves);
    else if (value.IsNull())
      leaves.emplace_back(key, "None");
    else if (value.IsScalar())
      leaves.emplace_back(key, megatron_spelling(value.Scalar()));
  }
}

// A top-level "key:" of block-style YAML (what OmegaConf.to_yaml writes).
const re2::RE2& top_key() {
  static const re2::RE2 pattern(R"(^[A-Za-z_][\w.-]*:(\s|$))");
  return pattern;
}

// Whether a line can be part of block-style YAML: blank, a comment, indented, a list item
// or a top-level key. A log line ("[NeMo I ...") is not.
bool yaml_line(const std::string& line) {
  return line.empty() || line[0] == ' ' || line[0] == '\t' || line[0] == '#' || line[0] == '-' ||
         re2::RE2::PartialMatch(line, top_key());
}

// The scalar leaves of the YAML in lines[first..]: from the first top-level key to the
// first line that is not YAML (the log going on).
Leaves yaml_leaves(const std::vector<std::string>& lines, size_t first, const std::string& file) {
  while (first < lines.size() && !re2::RE2::PartialMatch(lines[first], top_key())) ++first;
  std::string text;
  for (size_t last = first; last < lines.size() && yaml_line(lines[last]); ++last) text += lines[last] + "\n";
  Leaves leaves;
  const std::string where = file + ":" + std::to_string(first + 1);
  try {
    const YAML::Node root = YAML::Load(text);
    if (root.IsMap()) collect_leaves(root, "", 0, where, leaves);
  } catch (const YAML::Exception& e) {
    // e.mark.line counts from 0 within the YAML text, which starts at line first + 1.
    throw UsageError(file + ":" + std::to_string(first + 1 + static_cast<size_t>(std::max(0, e.mark.line))) +
                     ": not YAML (" + e.msg + ")");
  }
  return leaves;
}

// The value of the leaf named `name` (the last part of its path). Interpolations
// ("${model.x}") are left to the leaf they point at; two different values are an error.
std::string leaf(const Leaves& leaves, const std::string& name, const std::string& where) {
  std::string found, found_path;
  for (const auto& [path, value] : leaves) {
    const bool named = path == name || (path.size() > name.size() && path.ends_with("." + name));
    if (!named || value.starts_with("${")) continue;
    if (!found_path.empty() && value != found) {
      throw UsageError(where + ": '" + found_path + "' is " + found + " but '" + path + "' is " + value +
                       ": the configuration contradicts itself");
    }
    found = value;
    found_path = path;
  }
  return found;
}

Leaves nemo_config(const LogSource& source, const std::vector<std::string>& log_lines) {
  if (!source.config_text.empty()) {
    const Leaves leaves = yaml_leaves(split_log_lines(source.config_text, source.config_file), 0, source.config_file);
    if (leaves.empty()) throw UsageError(source.config_file + ": no YAML 'key: value' lines in the NeMo config");
    return leaves;
  }
  for (size_t i = 0; i < log_lines.size(); ++i)
    if (log_lines[i].find("Experiment configuration") != std::string::npos)
      return yaml_leaves(log_lines, i + 1, source.file);
  throw UsageError(source.file + ": no NeMo configuration dump ('Experiment configuration' then YAML) in the log: " +
                   "give the run's config with --config FILE.yaml");
}

// The layout and model sizes under Megatron's argument names.
void read_layout(TrainingLog& log, const Leaves& leaves, const std::string& where) {
  for (const char* name :
       {"tensor_model_parallel_size", "pipeline_model_parallel_size", "context_parallel_size",
        "expert_model_parallel_size", "virtual_pipeline_model_parallel_size", "micro_batch_size", "global_batch_size",
        "num_layers", "hidden_size", "sequence_parallel", "use_distributed_optimizer"}) {
    const std::string value = leaf(leaves, name, where);
    if (!value.empty()) log.arguments[name] = value;
  }
  // NeMo 1.x names the sequence length encoder_seq_length (model.data.seq_length refers
  // to it) and recompute activations_checkpoint_granularity.
  std::string seq = leaf(leaves, "encoder_seq_length", where);
  if (seq.empty()) seq = leaf(leaves, "seq_length", where);
  if (!seq.empty()) log.arguments["seq_length"] = seq;
  std::string recompute = leaf(leaves, "recompute_granularity", where);
  if (recompute.empty()) recompute = leaf(leaves, "activations_checkpoint_granularity", where);
  if (!recompute.empty()) log.arguments["recompute_granularity"] = recompute;
  if (leaf(leaves, "optim.name", where) == "distributed_fused_adam")
    log.arguments["use_distributed_optimizer"] = "True";
  const std::string devices = leaf(leaves, "devices", where), nodes = leaf(leaves, "num_nodes", where);
  double d = 0, n = 1;
  if (!read_log_number(devices, d) || (!nodes.empty() && !read_log_number(nodes, n)) || d < 1 || n < 1)
    throw UsageError(where + ": trainer.devices '" + devices + "' and trainer.num_nodes '" + nodes +
                     "' do not give the world size (devices per node times nodes)");
  log.arguments["world_size"] = std::to_string(static_cast<long long>(d * n));
}

}  // namespace

TrainingLog parse_nemo_log(const LogSource& source) {
  static const re2::RE2 step_time(R"(train_step_timing in s\s*[:=]\s*([-+0-9.eE]+))");
  static const re2::RE2 global_step(R"(\bglobal_step\s*[:=]\s*([0-9.]+))");
  static const re2::RE2 iteration(R"(\biteration\s+(\d+)\s*/)");
  static const re2::RE2 tflops(R"(\btflops_per_sec_per_gpu\s*[:=]\s*([-+0-9.eE]+))");
  static const re2::RE2 batch(R"(\bglobal_batch_size\s*[:=]\s*([0-9.]+))");
  TrainingLog log;
  log.file = source.file;
  log.parser_version = kNemoParserVersion;
  const std::vector<std::string> lines = split_log_lines(source.text, source.file);
  read_layout(log, nemo_config(source, lines), source.config_text.empty() ? source.file : source.config_file);
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string& line = lines[i];
    if (line.find("train_step_timing in s") == std::string::npos) continue;
    const std::string where = source.file + ":" + std::to_string(i + 1);
    LoggedIteration it;
    double x = 0;
    if (!find_log_number(line, step_time, x) || !(x > 0))
      throw UsageError(where + ": 'train_step_timing in s' is not a positive number of seconds");
    it.step_s = x;
    if (!find_log_step(line, global_step, where, it.iteration) && !find_log_step(line, iteration, where, it.iteration))
      throw UsageError(where + ": a step line with neither 'global_step' nor 'iteration N/M'");
    if (find_log_number(line, tflops, x)) it.tflops_per_gpu = x;
    std::string batch_text;
    if (re2::RE2::PartialMatch(line, batch, &batch_text))
      it.global_batch =
          read_log_integer(batch_text, "global_batch_size", where, log_argument_range("global_batch_size"));
    add_logged_iteration(log, it);
  }
  require_logged_iterations(log, "'... global_step: N | ... train_step_timing in s: X' (Lightning's progress)");
  return log;
}

}  // namespace ibt::suites
