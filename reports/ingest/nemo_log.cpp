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
#include <regex>
#include <utility>
#include <vector>

#include "core/errors.hpp"
#include "reports/ingest/training_log.hpp"

namespace ibt::suites {
namespace {

using Leaves = std::vector<std::pair<std::string, std::string>>;  // dotted path -> scalar text

// A YAML scalar as Megatron's arguments block would print it.
std::string megatron_spelling(std::string value) {
  if (value.size() >= 2 && (value.front() == '"' || value.front() == '\'') && value.back() == value.front())
    value = value.substr(1, value.size() - 2);
  if (value == "true" || value == "True") return "True";
  if (value == "false" || value == "False") return "False";
  if (value == "null" || value == "~" || value.empty()) return "None";
  return value;
}

// The scalar leaves of block-style YAML (what OmegaConf.to_yaml writes). Stops at the
// first line that is not YAML (the log going on) once a key has been read.
Leaves yaml_leaves(const std::vector<std::string>& lines, size_t first) {
  static const std::regex key_line(R"(^( *)([A-Za-z_][\w.-]*):(?: +(.*?))?\s*$)");
  static const std::regex list_item(R"(^ *- )");
  std::vector<std::pair<size_t, std::string>> parents;  // indent, key
  Leaves leaves;
  for (size_t i = first; i < lines.size(); ++i) {
    const std::string& line = lines[i];
    std::smatch m;
    const size_t text_at = line.find_first_not_of(" \t");
    if (text_at == std::string::npos || line[text_at] == '#' || std::regex_search(line, list_item)) continue;
    if (!std::regex_match(line, m, key_line)) {
      if (leaves.empty() && parents.empty()) continue;  // log lines before the YAML
      break;
    }
    const size_t indent = m[1].length();
    while (!parents.empty() && parents.back().first >= indent) parents.pop_back();
    std::string path;
    for (const auto& parent : parents) path += parent.second + ".";
    if (m[3].length() == 0)
      parents.emplace_back(indent, m[2].str());
    else
      leaves.emplace_back(path + m[2].str(), megatron_spelling(m[3].str()));
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
    const Leaves leaves = yaml_leaves(split_log_lines(source.config_text), 0);
    if (leaves.empty()) throw UsageError(source.config_file + ": no YAML 'key: value' lines in the NeMo config");
    return leaves;
  }
  for (size_t i = 0; i < log_lines.size(); ++i)
    if (log_lines[i].find("Experiment configuration") != std::string::npos) return yaml_leaves(log_lines, i + 1);
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
  static const std::regex step_time(R"(train_step_timing in s\s*[:=]\s*([-+0-9.eE]+))");
  static const std::regex global_step(R"(\bglobal_step\s*[:=]\s*([0-9.]+))");
  static const std::regex iteration(R"(\biteration\s+(\d+)\s*/)");
  static const std::regex tflops(R"(\btflops_per_sec_per_gpu\s*[:=]\s*([-+0-9.eE]+))");
  static const std::regex batch(R"(\bglobal_batch_size\s*[:=]\s*([0-9.]+))");
  TrainingLog log;
  log.file = source.file;
  log.parser_version = kNemoParserVersion;
  const std::vector<std::string> lines = split_log_lines(source.text);
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
    if (!find_log_number(line, global_step, x) && !find_log_number(line, iteration, x))
      throw UsageError(where + ": a step line with neither 'global_step' nor 'iteration N/M'");
    it.iteration = static_cast<long long>(x);
    if (find_log_number(line, tflops, x)) it.tflops_per_gpu = x;
    if (find_log_number(line, batch, x)) it.global_batch = static_cast<long long>(x);
    add_logged_iteration(log, it);
  }
  require_logged_iterations(log, "'... global_step: N | ... train_step_timing in s: X' (Lightning's progress)");
  return log;
}

}  // namespace ibt::suites
