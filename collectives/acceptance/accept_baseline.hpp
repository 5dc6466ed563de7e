#pragma once
// ibt accept --generate-reference RESULTS.h5: a reference whose targets are what a
// known-good run measured, the way ReFrame's references are kept (a system's own good
// runs, not its datasheet). The catalog route (accept_generate.hpp) judges a cluster
// before anyone has measured it; this one guards a cluster once it is known good.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace ibt::suites {

// Targets from the runs `run_specs` name of results file `file` ("last": the newest run
// with a collectives table; "all": every such run; else run ids or numbers), and from the
// newest p2p matrix in it when there is one:
//   - per (op, scope, dtype) measured: busbw over the sizes >= 64 MiB (the two largest
//     sizes when none is that large, never one below 256 KiB: there a busbw is a latency),
//     the minimum over them as `accept` judges it, failing below 80% of it; and the p50
//     time of the smallest size when it is <= 4 KiB, failing above 3x;
//   - p2p: the worst pair's bandwidth at the largest size (when >= 256 KiB; failing below
//     80%) and the worst pair's latency at the smallest (failing above 3x).
// Each target is the median over the runs of what `accept --from` judges on each, so one
// noisy run cannot set it; a metric spreading over 20% across the runs, a latency size with
// outliers (p99 over 5x p50) and an oversubscribed run are warned about on stderr. Runs of
// different job sizes, a run named twice and a run with wrong values are refused. The job
// section repeats the (last) run's ranks, domain size, iterations and warm-up.
nlohmann::json reference_from_runs(const std::string& file, const std::vector<std::string>& run_specs);

// One metric's target from the values its runs measured: the median; the note says how
// many runs and their range; `warning` is set when they spread over 20% (not ok when there
// are no values).
struct BaselineTarget {
  bool ok = false;
  double target = 0;
  std::string note, warning;
};
BaselineTarget baseline_target(const std::string& name, std::vector<double> values, const std::string& unit);

// True when `source` names an HDF5 file (HDF5's own check), else when it ends in ".h5".
bool is_results_file(const std::string& source);

}  // namespace ibt::suites
