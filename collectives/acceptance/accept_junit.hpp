#pragma once
// ibt accept's JUnit XML report for CI: one testcase per metric plus "correctness".
#include <cstdint>
#include <string>
#include <vector>

#include "collectives/acceptance/accept_judge.hpp"

namespace ibt::suites {

// Writes the JUnit file (refusing to replace it unless --force was checked before). The
// correctness testcase's failure names where the `wrong` values were seen (`wrong_where`:
// op, size, rank and host, accept_where.hpp).
// `run_failure` (not empty): the run ended before its verdict (a timeout, a crash, a
// signal); then one testcase "run" fails with that message and the metrics are listed as
// skipped, so CI sees a failed suite rather than no file.
void write_junit(const std::string& path, const AcceptReference& ref, const std::vector<Verdict>& verdicts,
                 std::uint64_t wrong, const std::vector<std::string>& wrong_where, double seconds,
                 const std::string& run_failure = "");

}  // namespace ibt::suites
