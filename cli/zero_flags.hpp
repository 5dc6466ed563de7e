#pragma once
// The sharded-data-parallel flags, spelled the same in train, sweep, project and
// crossover:
//   --zero S          ZeRO stage 0..3 (train, project); the stages to search, "0,1,3"
//                     (sweep, crossover, project --all)
//   --shard-group G   hybrid sharding: shard over G consecutive DP ranks, replicate
//                     across dp/G groups (train, project); the sizes to search with
//                     ZeRO-3, "8,16" (sweep, crossover, project --all)
// and, hidden, the old spelling --zero1 (train: the same as --zero 1).
#include <boost/program_options.hpp>

#include <string>

#include "models/plan/parallel_split.hpp"

namespace ibt::suites {

struct ZeroFlags {
  std::string zero;  // as typed; empty = not given
  std::string shard_group;
  bool zero1_alias = false;
};

// Adds --zero and --shard-group to `visible` (help text for one split, or for a
// search when `search` is true) and --zero1 to `hidden`.
void add_zero_options(boost::program_options::options_description& visible,
                      boost::program_options::options_description& hidden, ZeroFlags& f, bool search);

// One split: sets split.zero and split.shard_group (UsageError naming the flag on a
// value that is not an integer, or --zero1 contradicting --zero). The split's
// validate() judges the values.
void apply_zero_flags(const ZeroFlags& f, models::ParallelSplit& split);

// A search: sets search.zero_stages and search.shard_groups from the lists when given
// (stages outside 0..3 and groups < 2 are refused, naming the flag).
void apply_zero_flags(const ZeroFlags& f, models::SplitSearch& search);

}  // namespace ibt::suites
