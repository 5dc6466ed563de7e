#include "collectives/acceptance/accept_where.hpp"

#include <cstddef>

namespace ibt::suites {
namespace {

std::string host_of(int rank, const std::vector<std::string>& hosts) {
  const bool known = rank >= 0 && static_cast<std::size_t>(rank) < hosts.size() && !hosts[rank].empty();
  return known ? hosts[rank] : "?";
}

std::string rank_on_host(int rank, const std::vector<std::string>& hosts) {
  return "rank " + std::to_string(rank) + " (host " + host_of(rank, hosts) + ")";
}

}  // namespace

std::string wrong_values_where(const Measurement& m, const std::vector<std::string>& hosts) {
  std::string where = m.op + " " + m.scope + " " + m.dtype + " " + std::to_string(m.bytes) + " B: ";
  if (m.wrong_ranks.empty()) return where + std::to_string(m.wrong) + " wrong values (no rank recorded)";
  for (std::size_t i = 0; i < m.wrong_ranks.size(); ++i) {
    const auto& [rank, count] = m.wrong_ranks[i];
    where += (i ? ", " : "") + std::to_string(count) + " wrong value" + (count == 1 ? "" : "s") + " on " +
             rank_on_host(rank, hosts);
  }
  return where;
}

std::string wrong_bytes_where(const P2pResult& r, const std::vector<std::string>& hosts) {
  return "p2p " + std::to_string(r.bytes) + " B between " + rank_on_host(r.rank_a, hosts) + " and " +
         rank_on_host(r.rank_b, hosts) + ": " + std::to_string(r.wrong) + " wrong byte" + (r.wrong == 1 ? "" : "s");
}

std::string timeout_with_hosts(const TimeoutError& e, const std::vector<std::string>& hosts) {
  // The gate names each missing rank's pid and host itself (rank_identity.hpp) once the
  // job's identities are known: nothing to add then.
  if (e.missing.empty() || std::string(e.what()).find(" on host ") != std::string::npos) return e.what();
  std::string on;
  for (std::size_t i = 0; i < e.missing.size(); ++i)
    on += (i ? ", " : "") + std::string("rank ") + std::to_string(e.missing[i]) + " is on host " +
          host_of(e.missing[i], hosts);
  return std::string(e.what()) + " (" + on + ")";
}

std::string wrong_values_summary(std::uint64_t wrong, const std::vector<std::string>& where) {
  constexpr std::size_t kShown = 8;
  std::string text = std::to_string(wrong) + " wrong values in collectives or p2p transfers";
  for (std::size_t i = 0; i < where.size() && i < kShown; ++i) text += (i ? "; " : ": ") + where[i];
  if (where.size() > kShown) text += "; and " + std::to_string(where.size() - kShown) + " more";
  return text;
}

}  // namespace ibt::suites
