#pragma once
// ibt collectives' results as they come, on rank 0: each size printed (ibt's table or
// nccl-tests' lines), stored as a row of the collectives table plus one row per group
// (domain or rail) with slow groups named, and summed for the summary lines.
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "cli/collectives_args.hpp"
#include "collectives/harness.hpp"
#include "collectives/nccl_tests_format.hpp"
#include "collectives/results_table.hpp"
#include "collectives/runtime/backends.hpp"
#include "collectives/runtime/run_recorder.hpp"
#include "reports/store/store.hpp"
#include "reports/tables/collectives_table.hpp"

namespace ibt::suites {

// A measurement as a row of the collectives table; `backend` is the backend's name.
// `ibt accept` stores its measurements the same way.
tables::CollectiveRow collectives_row(const Measurement& m, const std::string& backend);

// "0-3" or "0,2,4": world ranks of a group.
std::string rank_list(const std::vector<int>& ranks);

// The distinct hosts of a group's ranks, in rank order.
std::string hosts_of(const std::vector<int>& ranks, const std::vector<std::string>& host_of_rank);

// The average bus bandwidth per (op, scope), in the order first measured, and the wrong
// values counted.
struct Summary {
  std::map<std::pair<std::string, std::string>, std::pair<double, int>> busbw;  // (op, scope) -> sum, n
  std::vector<std::pair<std::string, std::string>> order;
  std::uint64_t wrong = 0;
  void add(const Measurement& m) {
    auto key = std::make_pair(m.op, m.scope);
    if (!busbw.count(key)) order.push_back(key);
    busbw[key].first += m.busbw_GBps;
    busbw[key].second += 1;
    wrong += m.wrong;
  }
};

// ibt's table for this command line and job of `ranks` ranks (--wide, the largest size).
ResultsTable results_table(const CollectivesArgs& args, int ranks);

// Each size's results as they come (rank 0): printed in the chosen format, summed for the
// summary, stored with one row per group, and slow groups named on stderr.
class SizeResults {
 public:
  SizeResults(const CollectivesArgs& args, std::size_t outlier_bandwidth_from, const Backend& backend,
              RunRecorder* recorder, std::vector<std::string> host_of_rank);

  void on_size(const SizeResult& r);

  // nccl-tests' header facts: the version line, one "Rank ... device" line per rank.
  NcclTestsRunFacts& nccl_facts() { return nccl_printer_.facts(); }
  // An (op, scope) whose average bus bandwidth is below 90% of NCCL_TESTS_MIN_BW.
  bool below_min_bw() const { return below_min_bw_ || nccl_printer_.below_min_bw(); }

  // The summary lines below the table (rank 0); the wrong values counted.
  std::uint64_t print_summary(bool checked);

 private:
  // One row per group of the measurement; a group slower than the others is flagged.
  void record_groups(const Measurement& m);

  const CollectivesArgs& args_;
  std::size_t outlier_bandwidth_from_;
  bool nccl_format_;
  const Backend& backend_;
  RunRecorder* recorder_;
  std::vector<std::string> host_of_rank_;
  Summary summary_;
  NcclTestsPrinter nccl_printer_;
  ResultsTable table_;
  std::size_t outliers_ = 0;
  bool below_min_bw_ = false;
};

}  // namespace ibt::suites
