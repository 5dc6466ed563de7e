#pragma once
// The flags of one parallel split, spelled and explained the same in `ibt train` (the split
// it runs) and `ibt project` (the split it prices):
//   --dp --tp --pp --ep --cp --cp-comm --vpp --microbatches --micro-batch-size --schedule
// (the ZeRO flags are zero_flags.hpp's), and the global batch flags project and crossover
// share:
//   --global-batch --global-batch-tokens
#include <boost/program_options.hpp>

#include <string>

namespace ibt::suites {

// Who reads the split flags. A run (train) takes every degree as given, each defaulting
// to 1. A projection (project) derives --dp, --vpp and --microbatches from the other flags
// when they are not given (0 in SplitFlags), and its --cp and --cp-comm also say what
// --all searches.
enum class SplitFlagsFor { run, projection };

// The degrees as the command holds them: int in train (boost refuses a value past int's
// range), long in project (which refuses it naming the flag, project_suite.cpp).
// dp, vpp and microbatches start at 0 ("derive it"); a run's option defaults set them to 1.
template <typename Int>
struct SplitFlags {
  Int dp = 0, tp = 1, pp = 1, ep = 1, cp = 1, vpp = 0, microbatches = 0, micro_batch_size = 1;
  std::string cp_comm = "all_gather";
  std::string schedule = "1f1b";
};

// Adds the ten split flags to `opts`, in the order of the comment above.
void add_split_options(boost::program_options::options_description& opts, SplitFlags<int>& f, SplitFlagsFor use);
void add_split_options(boost::program_options::options_description& opts, SplitFlags<long>& f, SplitFlagsFor use);

struct GlobalBatchFlags {
  long long sequences = -1;               // --global-batch; -1: not given (from tokens)
  long long tokens = 16LL * 1024 * 1024;  // --global-batch-tokens
  // Either flag moved from its default (by value, as the commands have always judged it).
  bool given() const { return sequences >= 0 || tokens != GlobalBatchFlags{}.tokens; }
  // The global batch in sequences: --global-batch, else the tokens over the sequence
  // length (at least 1). UsageError for a batch of 0 (either flag).
  long long in_sequences(int seq_len) const;
};

void add_global_batch_options(boost::program_options::options_description& opts, GlobalBatchFlags& f);

// A split search builds pipeline schedules whose size grows with the microbatches:
// planned before any work for the largest one it may meet (dp and micro-batch size 1,
// so global_batch microbatches, on as many stages as the devices and the model's layers
// allow, `chunks` model chunks each), once per search thread. UsageError naming `flag`
// with the bytes needed against those available (core/memory_plan.hpp).
void require_search_memory(long long global_batch, long devices, int layers, int chunks, int jobs,
                           const std::string& flag);

}  // namespace ibt::suites
