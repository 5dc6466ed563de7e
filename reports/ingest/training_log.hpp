#pragma once
// Training logs read as measured runs (`ibt import-log`). Each format's parser fills the
// same TrainingLog: the layout and model sizes under Megatron-LM's argument names (the
// names `ibt import-log` reads the layout by), and one LoggedIteration per logged step.
// Megatron-LM (training_log.cpp): two parts of the log matter:
// - the arguments block Megatron prints at start-up, between
//   "------------------------ arguments ------------------------" and
//   "-------------------- end of arguments ---------------------", one "  name ..... value"
//   line per argument (tensor_model_parallel_size, pipeline_model_parallel_size,
//   data_parallel_size, world_size, global_batch_size, micro_batch_size, seq_length,
//   num_layers, hidden_size, ...);
// - the training_log lines, one per log interval:
//   " [time] iteration  N/  M | consumed samples: S | elapsed time per iteration (ms): X |
//    throughput per GPU (TFLOP/s/GPU): Y | ... | global batch size: B | lm loss: L | ..."
//   (elapsed time is the mean over the interval; throughput appears with --log-throughput).
// NeMo (nemo_log.cpp) and torchtitan (torchtitan_log.cpp) say what they read there.
#include <map>
#include <regex>
#include <string>
#include <vector>

namespace ibt::suites {

// Each parser's version, bumped whenever what it accepts or derives changes; stored with
// every import.
inline constexpr const char* kMegatronParserVersion = "megatron-1";
inline constexpr const char* kNemoParserVersion = "nemo-1";
inline constexpr const char* kTorchtitanParserVersion = "torchtitan-1";

struct LoggedIteration {
  long long iteration = 0;
  double step_s = 0;           // elapsed time per iteration
  double tflops_per_gpu = -1;  // < 0: not logged
  long long global_batch = 0;  // 0: not logged on this line
};

struct TrainingLog {
  // Megatron argument name -> value text ("True"/"False", "None" for unset); besides
  // Megatron's own, zero_stage and zero_shard_group (FSDP/HSDP) and model_name (the
  // framework's name for the model, where the log has no layer count to check).
  std::map<std::string, std::string> arguments;
  std::vector<LoggedIteration> iterations;  // in log order
  // The argument `name` as a whole number; UsageError naming the file and argument when
  // it is absent (and `fallback` < 0) or not a number.
  long long integer(const std::string& name, long long fallback = -1) const;
  std::string file;
  std::string parser_version;
};

// What a parser reads: the log, and for formats whose log lacks the layout the job's
// config (--config) and world size (--world-size).
struct LogSource {
  std::string text, file;
  std::string config_text, config_file;  // empty: no --config
  long long world_size = 0;              // 0: no --world-size
};

// A number that is the whole text and finite.
bool read_log_number(const std::string& text, double& out);
// The log's lines, split at '\n' and at '\r' too (a progress bar redraws its line with
// '\r', so one stored line holds many updates).
std::vector<std::string> split_log_lines(const std::string& text);
// The number `pattern`'s first group captures in `line`, thousands commas dropped; false
// when the pattern is absent or its group is not a number.
bool find_log_number(const std::string& line, const std::regex& pattern, double& out);
// The same iteration logged again (a progress bar's redraws) replaces the earlier entry.
void add_logged_iteration(TrainingLog& log, const LoggedIteration& it);
// UsageError naming the file, the `expected` step line and why it matters, when the log
// has no step line.
void require_logged_iterations(const TrainingLog& log, const std::string& expected);

// Parses a Megatron-LM log's text. UsageError naming `file` and the line when the
// arguments block is missing or unterminated, a line of the block or an iteration line
// cannot be read, or there is no iteration line.
TrainingLog parse_megatron_log(const LogSource& source);
// NeMo (nemo_log.cpp) and torchtitan (torchtitan_log.cpp): UsageError naming the file
// when the layout or the step lines are missing or cannot be read.
TrainingLog parse_nemo_log(const LogSource& source);
TrainingLog parse_torchtitan_log(const LogSource& source);

}  // namespace ibt::suites
