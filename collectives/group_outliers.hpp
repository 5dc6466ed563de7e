#pragma once
// A slow group of a scope (a domain in intra, a rail in inter), named by the rule
// `ibt p2p-matrix` uses for pairs: at sizes >= bandwidth_min_bytes a group whose busbw is
// below median x (1 - threshold), below that size a group whose time is above
// median x (1 + threshold), the median taken over the scope's groups at that size.
#include <cstddef>
#include <string>
#include <vector>

#include "collectives/harness.hpp"

namespace ibt {

struct GroupOutlier {
  int group = 0;
  std::string metric;  // "bandwidth" (busbw, GB/s) or "latency" (time, us)
  double value = 0;    // the group's value
  double median = 0;   // the median over the scope's groups
  double ratio = 0;    // value / median
};

std::vector<GroupOutlier> find_group_outliers(const std::vector<Measurement::GroupTime>& groups, std::size_t bytes,
                                              double threshold, std::size_t bandwidth_min_bytes);

}  // namespace ibt
