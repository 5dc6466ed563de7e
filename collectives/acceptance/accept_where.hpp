#pragma once
// Who a failure of `ibt accept` happened on, as its verdict and the JUnit file name it: the
// world rank and host that held wrong values (the harness gathers them, harness.hpp
// Measurement::wrong_ranks; a p2p pair knows its two ranks) and the ranks that stopped
// arriving before a measurement (the gate's TimeoutError::missing), each with its host.
#include <string>
#include <vector>

#include "collectives/arrival_gate.hpp"
#include "collectives/harness.hpp"
#include "collectives/p2p_matrix.hpp"

namespace ibt::suites {

// "all_reduce world float32 1024 B: 3 wrong values on rank 1 (host a)"; several ranks
// are listed in rank order. `hosts`: host per world rank ("?" past its end).
std::string wrong_values_where(const Measurement& m, const std::vector<std::string>& hosts);
// "p2p 8 B between rank 0 (host a) and rank 1 (host b): 8 wrong bytes".
std::string wrong_bytes_where(const P2pResult& r, const std::vector<std::string>& hosts);
// The gate's message with the host of each rank that did not arrive:
// "...: rank 1 did not arrive (rank 1 is on host b)". Unchanged when no rank is named or
// the gate already named the host ("rank 1 did not arrive (pid 4712 on host b)").
std::string timeout_with_hosts(const TimeoutError& e, const std::vector<std::string>& hosts);
// "N wrong values in collectives or p2p transfers", then where (the first 8 places, and
// how many more): the JUnit correctness failure and the verdict's line.
std::string wrong_values_summary(std::uint64_t wrong, const std::vector<std::string>& where);

}  // namespace ibt::suites
