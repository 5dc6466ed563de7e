#pragma once
// Megatron-LM training logs read as measured runs (`ibt import-log`). Two parts of the
// log matter:
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
#include <map>
#include <string>
#include <vector>

namespace ibt::suites {

// Bumped whenever what the parser accepts or derives changes; stored with every import.
inline constexpr const char* kTrainingLogParserVersion = "megatron-1";

struct LoggedIteration {
  long long iteration = 0;
  double step_s = 0;                 // elapsed time per iteration
  double tflops_per_gpu = -1;        // < 0: not logged
  long long global_batch = 0;        // 0: not logged on this line
};

struct TrainingLog {
  std::map<std::string, std::string> arguments;  // name -> value text, as printed
  std::vector<LoggedIteration> iterations;       // in log order
  // The argument `name` as a whole number; UsageError naming the file and argument when
  // it is absent (and `fallback` < 0) or not a number.
  long long integer(const std::string& name, long long fallback = -1) const;
  std::string file;
};

// Parses a Megatron-LM log's text. UsageError naming `file` and the line when the
// arguments block is missing or unterminated, a line of the block or an iteration line
// cannot be read, or there is no iteration line.
TrainingLog parse_megatron_log(const std::string& text, const std::string& file);

}  // namespace ibt::suites
