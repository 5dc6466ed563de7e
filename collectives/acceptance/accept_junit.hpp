#pragma once
// ibt accept's JUnit XML report for CI: one testcase per metric plus "correctness".
#include <cstdint>
#include <string>
#include <vector>

#include "collectives/acceptance/accept_judge.hpp"

namespace ibt::suites {

// Writes the JUnit file (refusing to replace it unless --force was checked before).
// `run_failure` (not empty): the run ended before its verdict (a timeout, a crash, a
// signal); then one testcase "run" fails with that message and the metrics are listed as
// skipped, so CI sees a failed suite rather than no file.
void write_junit(const std::string& path, const AcceptReference& ref, const std::vector<Verdict>& verdicts,
                 std::uint64_t wrong, double seconds, const std::string& run_failure = "");

}  // namespace ibt::suites
