#pragma once
// The HDF5 rows and the printed summary of a point-to-point matrix, shared by
// `ibt p2p-matrix` and `ibt accept` (which runs the matrix as one of its checks); the
// tables' schemas are in p2p_tables.hpp.
#include <cstdio>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "collectives/p2p_matrix.hpp"
#include "collectives/runtime/p2p_tables.hpp"
#include "collectives/runtime/run_recorder.hpp"
#include "collectives/sizes.hpp"
#include "core/text_wrap.hpp"
#include "reports/store/store.hpp"

namespace ibt::suites {

// "r0=host-a,r1=host-a,..." (JobFacts::host_of_rank_list) -> host per rank.
inline std::vector<std::string> hosts_by_rank(const std::string& host_of_rank_list, int world_size) {
  std::vector<std::string> hosts(world_size, "?");
  std::stringstream ss(host_of_rank_list);
  std::string item;
  while (std::getline(ss, item, ',')) {
    const auto eq = item.find('=');
    if (item.size() < 2 || item[0] != 'r' || eq == std::string::npos) continue;
    const int rank = std::atoi(item.substr(1, eq - 1).c_str());
    if (rank >= 0 && rank < world_size) hosts[rank] = item.substr(eq + 1);
  }
  return hosts;
}

// Rank 0: prints each pair as it finishes, stores it, and keeps it for the summary.
class P2pCollector {
 public:
  P2pCollector(RunRecorder* recorder, std::vector<std::string> hosts) : recorder_(recorder), hosts_(std::move(hosts)) {}

  P2pEvents events() {
    P2pEvents e;
    e.on_result = [this](const P2pResult& r) { add(r); };
    return e;
  }
  const std::vector<P2pResult>& results() const { return results_; }
  std::uint64_t wrong() const {
    std::uint64_t w = 0;
    for (const auto& r : results_) w += r.wrong;
    return w;
  }
  const std::string& host(int rank) const { return hosts_.at(rank); }

  // Stores and prints the outliers; returns them. Each line within `width` columns (its
  // ranks in a narrower field, a long host name continuing on a "#   " line); 0 (--wide):
  // the 48-column field it always had, one line each.
  std::vector<P2pOutlier> report_outliers(double threshold, std::size_t bandwidth_min_bytes, std::size_t width = 0) {
    auto outliers = find_p2p_outliers(results_, threshold, bandwidth_min_bytes);
    std::printf("# outliers (%s than the median by more than %.0f%%): %zu\n", "slower", 100 * threshold,
                outliers.size());
    for (const auto& o : outliers) {
      const std::string who = o.kind == "pair" ? "ranks " + std::to_string(o.rank_a) + " (" + host(o.rank_a) +
                                                     ") <-> " + std::to_string(o.rank_b) + " (" + host(o.rank_b) + ")"
                                               : "rank " + std::to_string(o.rank_a) + " (" + host(o.rank_a) + ")";
      char line[1024];
      std::snprintf(line, sizeof line, "#   %-4s %-9s %9s  %-*s %10.3f vs median %10.3f %s (x%.2f)\n", o.kind.c_str(),
                    o.metric.c_str(), format_size(o.bytes).c_str(), width ? 24 : 48, who.c_str(), o.value, o.median,
                    o.metric == "bandwidth" ? "GB/s" : "us", o.ratio);
      std::fputs(comment_lines(line, width).c_str(), stdout);
      if (recorder_)
        recorder_->append(P2pOutlierRow{o.kind, o.metric, o.bytes, o.rank_a, o.rank_b, host(o.rank_a),
                                        o.rank_b >= 0 ? host(o.rank_b) : std::string(), o.value, o.median, o.ratio});
    }
    return outliers;
  }

  // A units x units matrix of one size: bandwidth (GB/s) or time (us).
  void print_matrix(std::size_t bytes, bool bandwidth) const {
    std::map<std::pair<int, int>, double> cell;
    int units = 0;
    for (const auto& r : results_) {
      if (r.bytes != bytes) continue;
      units = std::max({units, r.unit_a + 1, r.unit_b + 1});
      // With domains several rank pairs share a cell: show the slowest.
      auto key = std::make_pair(r.unit_a, r.unit_b);
      const double v = bandwidth ? r.bandwidth_GBps : r.time_us;
      auto it = cell.find(key);
      if (it == cell.end())
        cell[key] = v;
      else
        it->second = bandwidth ? std::min(it->second, v) : std::max(it->second, v);
    }
    std::printf("# %s at %s (%s):\n#      ", bandwidth ? "bandwidth" : "latency", format_size(bytes).c_str(),
                bandwidth ? "GB/s" : "us");
    for (int b = 0; b < units; ++b) std::printf(" %9d", b);
    std::printf("\n");
    for (int a = 0; a < units; ++a) {
      std::printf("# %4d ", a);
      for (int b = 0; b < units; ++b) {
        auto it = cell.find({std::min(a, b), std::max(a, b)});
        if (a == b || it == cell.end())
          std::printf(" %9s", "-");
        else
          std::printf(" %9.3f", it->second);
      }
      std::printf("\n");
    }
  }

 private:
  void add(const P2pResult& r) {
    results_.push_back(r);
    std::printf("%5d %5d %5d %-16.16s %-16.16s %10zu %10.2f %10.2f %10.2f %10.3f %8llu\n", r.round, r.rank_a, r.rank_b,
                host(r.rank_a).c_str(), host(r.rank_b).c_str(), r.bytes, r.time_us, r.p50_us, r.p99_us,
                r.bandwidth_GBps, static_cast<unsigned long long>(r.wrong));
    std::fflush(stdout);
    if (recorder_)
      recorder_->append(P2pRow{r.round, r.unit_a, r.unit_b, r.rank_a, r.rank_b, host(r.rank_a), host(r.rank_b), r.bytes,
                               r.iters, r.time_us, r.p50_us, r.p99_us, r.bandwidth_GBps, r.wrong});
  }

  RunRecorder* recorder_;
  std::vector<std::string> hosts_;
  std::vector<P2pResult> results_;
};

inline void print_p2p_header() {
  std::printf("%5s %5s %5s %-16s %-16s %10s %10s %10s %10s %10s %8s\n", "round", "a", "b", "host a", "host b", "bytes",
              "time(us)", "p50(us)", "p99(us)", "bw(GB/s)", "#wrong");
}

}  // namespace ibt::suites
