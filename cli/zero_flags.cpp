#include "cli/zero_flags.hpp"

#include <sstream>
#include <vector>

#include "core/errors.hpp"

namespace ibt::suites {

namespace po = boost::program_options;

namespace {

int integer(const std::string& text, const char* flag) {
  size_t used = 0;
  int v = 0;
  try {
    v = std::stoi(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size())
    throw UsageError(std::string("--") + flag + ": '" + text + "' is not an integer");
  return v;
}

std::vector<int> integers(const std::string& list, const char* flag) {
  std::vector<int> out;
  std::stringstream in(list);
  std::string item;
  while (std::getline(in, item, ',')) out.push_back(integer(item, flag));
  if (out.empty()) throw UsageError(std::string("--") + flag + " is empty");
  return out;
}

}  // namespace

void add_zero_options(po::options_description& visible, po::options_description& hidden, ZeroFlags& f, bool search) {
  if (search) {
    visible.add_options()("zero", po::value(&f.zero),
                          "ZeRO stages to search, comma list of 0..3 (0 always included): 1 shards optimizer states, "
                          "2 also gradients, 3 (FSDP) also parameters, gathered per layer with prefetch")(
        "shard-group", po::value(&f.shard_group),
        "HSDP shard-group sizes to search with ZeRO-3, comma list (each must properly divide dp)");
  } else {
    visible.add_options()("zero", po::value(&f.zero),
                          "ZeRO stage 0..3: 1 shards AdamW states over dp, 2 also gradients (reduce-scatter), "
                          "3 (FSDP) also parameters (all-gathered per layer before forward and backward)")(
        "shard-group", po::value(&f.shard_group),
        "hybrid sharding (HSDP): shard the ZeRO states over groups of N consecutive DP ranks and "
        "replicate across the dp/N groups (1 < N < dp, N divides dp; needs --zero >= 1)");
  }
  hidden.add_options()("zero1", po::bool_switch(&f.zero1_alias), "old spelling of --zero 1");
}

void apply_zero_flags(const ZeroFlags& f, models::ParallelSplit& split) {
  if (!f.zero.empty()) split.zero = integer(f.zero, "zero");
  if (f.zero1_alias) {
    if (!f.zero.empty() && split.zero != 1) throw UsageError("--zero1 contradicts --zero " + f.zero);
    split.zero = 1;
  }
  if (!f.shard_group.empty()) split.shard_group = integer(f.shard_group, "shard-group");
}

void apply_zero_flags(const ZeroFlags& f, models::SplitSearch& search) {
  if (f.zero1_alias) throw UsageError("--zero1 names one split; a search takes --zero 0,1,...");
  if (!f.zero.empty()) {
    search.zero_stages = integers(f.zero, "zero");
    for (int z : search.zero_stages)
      if (z < 0 || z > 3) throw UsageError("--zero: stage " + std::to_string(z) + " is not 0, 1, 2 or 3");
  }
  if (!f.shard_group.empty()) {
    search.shard_groups = integers(f.shard_group, "shard-group");
    for (int g : search.shard_groups)
      if (g < 2) throw UsageError("--shard-group: " + std::to_string(g) + " is not a group of 2 or more ranks");
  }
}

}  // namespace ibt::suites
