#pragma once
// The pairwise point-to-point matrix: ping-pong latency and bandwidth between every pair
// of ranks, or of scale-up domains, the first thing to look at when one cable, NIC or
// host is slow. Pairs are scheduled as a round-robin tournament (the circle method):
// n units meet in n-1 rounds (n rounds when n is odd, one unit resting per round), every
// unit in at most one pair per round, so all pairs of a round run concurrently without
// sharing a rank.
//
// Units are ranks by default. With domains, units are scale-up domains and a pair of
// domains is measured rail-aligned: local rank l of one domain with local rank l of the
// other, all local ranks at once (as the `inter` scope), one row per rank pair.
//
// Each pair runs ping-pong: the lower unit sends `bytes`, the other returns them; the time
// is half the round trip (OSU's latency convention) and bandwidth = bytes / that time.
// A separate, untimed pass checks that every byte arrived intact in both directions.
#include <mpi.h>

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "collectives/arrival_gate.hpp"
#include "collectives/domains.hpp"
#include "collectives/watchdog.hpp"

namespace ibt {

// rounds[r] lists the pairs (a, b), a < b, of units 0..n-1 that meet in round r.
// Every pair appears exactly once; no unit appears twice in a round.
std::vector<std::vector<std::pair<int, int>>> round_robin_rounds(int units);

struct P2pOptions {
  std::vector<std::size_t> sizes{8, 4u << 20};  // message sizes, bytes
  int iters = 20;
  int warmup_iters = 5;
  bool check = true;
  bool by_domain = false;  // units are domains (rail-aligned pairs of ranks)
  bool concurrent = true;  // false: one pair at a time (no contention between pairs)
  double timeout_seconds = 60;
  // Testing hook: this world rank waits delay_us before every send of the timed loop,
  // as a rank behind a slow link would, so outlier detection can be exercised.
  int delay_rank = -1;
  double delay_us = 0;
};

// One measured pair of ranks at one size (known on rank 0).
struct P2pResult {
  int round = 0;
  int unit_a = 0, unit_b = 0;  // ranks, or domains with by_domain
  int rank_a = 0, rank_b = 0;  // world ranks; rank_a initiated
  std::size_t bytes = 0;
  int iters = 0;
  double time_us = 0;  // mean half round trip
  double p50_us = 0, p99_us = 0;
  double bandwidth_GBps = 0;  // bytes / mean half round trip
  std::uint64_t wrong = 0;    // bytes that arrived wrong, both directions
};

struct P2pEvents {
  std::function<void(int round, int rounds, std::size_t pairs)> on_round;  // rank 0, before a round
  std::function<void(const P2pResult&)> on_result;                         // rank 0
};

// Collective over world. Throws TimeoutError (from the gate) when a rank stops arriving
// before a round, UsageError when domains are requested but unequal in size or fewer than 2,
// or when there are fewer than 2 units.
void run_p2p_matrix(MPI_Comm world, const DomainLayout& layout, const P2pOptions& options, ArrivalGate& gate,
                    Watchdog* watchdog, const P2pEvents& events);

// ---- Outliers: a pair or a rank clearly slower than the rest ----
struct P2pOutlier {
  std::string kind;    // "pair" or "rank"
  std::string metric;  // "bandwidth" or "latency"
  std::size_t bytes = 0;
  int rank_a = 0, rank_b = -1;  // rank_b is -1 for a rank outlier
  double value = 0;             // the pair's value, or the rank's median over its pairs
  double median = 0;            // the median over all pairs (or ranks) at this size
  double ratio = 0;             // value / median
};

// At each size: a pair whose bandwidth is below median x (1 - threshold), or whose
// latency (time) is above median x (1 + threshold); a rank whose median over its pairs
// is past the same bounds relative to the median of ranks. Bandwidth is judged at sizes
// >= bandwidth_min_bytes, latency below it.
std::vector<P2pOutlier> find_p2p_outliers(const std::vector<P2pResult>& results, double threshold,
                                          std::size_t bandwidth_min_bytes);

}  // namespace ibt
