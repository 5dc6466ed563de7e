#include "collectives/group_outliers.hpp"

#include "core/stats.hpp"

namespace ibt {

std::vector<GroupOutlier> find_group_outliers(const std::vector<Measurement::GroupTime>& groups, std::size_t bytes,
                                              double threshold, std::size_t bandwidth_min_bytes) {
  std::vector<GroupOutlier> out;
  if (groups.size() < 2) return out;
  const bool bandwidth = bytes >= bandwidth_min_bytes;
  const auto value = [&](const Measurement::GroupTime& g) { return bandwidth ? g.busbw_GBps : g.time_us; };
  std::vector<double> values;
  for (const auto& g : groups) values.push_back(value(g));
  const double median = quantile(values, 0.5);
  if (!(median > 0)) return out;
  for (const auto& g : groups) {
    const double v = value(g);
    // Bandwidth is bad when low, latency when high.
    const bool slow = bandwidth ? v < median * (1 - threshold) : v > median * (1 + threshold);
    if (slow) out.push_back({g.group, bandwidth ? "bandwidth" : "latency", v, median, v / median});
  }
  return out;
}

}  // namespace ibt
