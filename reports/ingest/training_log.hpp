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
// Lines are matched by RE2, whose time is linear in the line and which never recurses:
// std::regex recursed once per character and overflowed the stack on a 2 MB line.
// Megatron's arguments block and its "| key: value |" fields stay read here: they are
// Megatron's own print format, no grammar a library parses (the YAML and TOML configs
// are read by yaml-cpp and toml++).
#include <re2/re2.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace ibt::suites {

// Each parser's version, bumped whenever what it accepts or derives changes; stored with
// every import.
inline constexpr const char* kMegatronParserVersion = "megatron-2";
inline constexpr const char* kNemoParserVersion = "nemo-2";
inline constexpr const char* kTorchtitanParserVersion = "torchtitan-2";

// A log is read whole into memory, so its size is bounded; 512 MiB holds a million
// Megatron log intervals of about 500 bytes each. A line longer than 4 MiB is no
// framework's output (a progress bar's '\r' redraws are split into lines first).
inline constexpr std::uint64_t kMaxLogBytes = 512ull << 20;
inline constexpr std::size_t kMaxLogLineBytes = 4u << 20;

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
  // it is absent (and `fallback` < 0), not a whole number, or outside what it can mean
  // (log_argument_range: a parallel degree of 0 or 2^32+2, a global batch of -64).
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

// The values a layout or batch argument may take: [min, max]. The degrees and batches
// are held as int by the split they become, so their bound is int's; the sizes are
// bounded as model files bound them (models/plan/model_file.cpp).
struct ArgumentRange {
  long long min, max;
};
ArgumentRange log_argument_range(const std::string& name);
// `text` as a whole number in [min, max]: decimal digits (a sign allowed), or a number
// like "64.0" or "9e18" that is whole. UsageError "`where`: `what` is 'TEXT', ..." when
// it is not a whole number or is out of range (saying the range).
long long read_log_integer(const std::string& text, const std::string& what, const std::string& where,
                           ArgumentRange range);
// A number that is the whole text and finite.
bool read_log_number(const std::string& text, double& out);
// The log's lines, split at '\n' and (`at_cr`) at '\r' too (a progress bar redraws its
// line with '\r', so one stored line holds many updates). UsageError naming `file` and
// the line when a line is longer than kMaxLogLineBytes.
std::vector<std::string> split_log_lines(const std::string& text, const std::string& file, bool at_cr = true);
// The number `pattern`'s first group captures in `line`, thousands commas dropped; false
// when the pattern is absent or its group is not a number.
bool find_log_number(const std::string& line, const re2::RE2& pattern, double& out);
// The step number `pattern`'s first group captures, a whole number 0 .. 2^63-1
// (UsageError at `where` otherwise); false when the pattern is absent.
bool find_log_step(const std::string& line, const re2::RE2& pattern, const std::string& where, long long& out);
// The same iteration logged again (a progress bar's redraws) replaces the earlier entry.
void add_logged_iteration(TrainingLog& log, const LoggedIteration& it);
// UsageError naming the file, the `expected` step line and why it matters, when the log
// has no step line.
void require_logged_iterations(const TrainingLog& log, const std::string& expected);

// The layout and batch of a parsed log, each number checked against its meaning: every
// degree 1 or more and their product (the world) within int, world_size (where logged)
// equal to dp x tp x pp x cp, the global batch a whole number (1 or more) of micro-batches
// per data-parallel replica, vpp 1 or more. UsageError naming the file and the argument.
struct LogLayout {
  int tp = 1, pp = 1, cp = 1, ep = 1, dp = 1, vpp = 1;
  int micro_batch_size = 1, microbatches = 1;
};
LogLayout read_log_layout(const TrainingLog& log);

// Parses a Megatron-LM log's text. UsageError naming `file` and the line when the
// arguments block is missing or unterminated, a line of the block or an iteration line
// cannot be read, or there is no iteration line.
TrainingLog parse_megatron_log(const LogSource& source);
// NeMo (nemo_log.cpp) and torchtitan (torchtitan_log.cpp): UsageError naming the file
// when the layout or the step lines are missing or cannot be read.
TrainingLog parse_nemo_log(const LogSource& source);
TrainingLog parse_torchtitan_log(const LogSource& source);

}  // namespace ibt::suites
