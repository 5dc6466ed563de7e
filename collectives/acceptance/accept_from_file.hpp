#pragma once
// ibt accept --from: the measurements an earlier `ibt collectives` run (and the newest
// p2p matrix in the same file) stored, read back to be judged without an MPI job.
#include <cstddef>
#include <cstdio>
#include <string>

#include "collectives/acceptance/accept_judge.hpp"

namespace ibt::suites {

// Reads run `run_spec` ("last": the newest run with a collectives table) of results file
// `from`. The run must be of the reference's job size (`reference_path` names the
// reference in that error). What was read is said on `log` ("# judging ..." lines, broken
// as comments to fit `width` columns; 0: one line each).
AcceptMeasurements read_accept_measurements(const std::string& from, const std::string& run_spec,
                                            const std::string& reference_path, const AcceptReference& ref,
                                            std::FILE* log = stdout, std::size_t width = 0);

}  // namespace ibt::suites
