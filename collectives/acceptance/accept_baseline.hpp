#pragma once
// ibt accept --generate-reference RESULTS.h5: a reference whose targets are what a
// known-good run measured, the way ReFrame's references are kept (a system's own good
// runs, not its datasheet). The catalog route (accept_generate.hpp) judges a cluster
// before anyone has measured it; this one guards a cluster once it is known good.
#include <nlohmann/json.hpp>
#include <string>

namespace ibt::suites {

// Targets from run `run_spec` ("last": the newest run with a collectives table) of results
// file `file`, and from the newest p2p matrix in it when there is one:
//   - per (op, scope, dtype) measured: busbw over the sizes >= 64 MiB (the two largest
//     sizes when none is that large), the minimum over them as `accept` judges it,
//     failing below 80% of it; and the p50 time of the smallest size when it is <= 4 KiB,
//     failing above 3x;
//   - p2p: the worst pair's bandwidth at the largest size (failing below 80%) and the
//     worst pair's latency at the smallest (failing above 3x).
// Each target is computed by the same code `accept --from` judges with, so the run it came
// from passes its own reference. The job section repeats the run's ranks, domain size,
// iterations and warm-up.
nlohmann::json reference_from_run(const std::string& file, const std::string& run_spec);

// True when `source` names an HDF5 file (HDF5's own check), else when it ends in ".h5".
bool is_results_file(const std::string& source);

}  // namespace ibt::suites
