#pragma once
// The tables of a point-to-point matrix (`ibt p2p-matrix`, and `ibt accept` running it),
// one schema each (core/row_schema.hpp); read back by `accept --from` and the report.
//   p2p_matrix:   one row per (pair of ranks, message size)
//   p2p_outliers: one row per pair or rank slower than the median by the threshold
#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/row_schema.hpp"

namespace ibt::suites {

struct P2pRow {
  std::int64_t round = 0, unit_a = 0, unit_b = 0, rank_a = 0, rank_b = 0;
  std::string host_a, host_b;
  std::uint64_t bytes = 0;
  std::int64_t iters = 0;
  double time_us = 0, p50_us = 0, p99_us = 0, bandwidth_GBps = 0;
  std::uint64_t wrong = 0;

  static constexpr std::string_view kTable = "p2p_matrix";
  static constexpr std::array<store::Field<P2pRow>, 14> kFields{{
      {"round", &P2pRow::round, "", "the tournament round the pair ran in"},
      {"unit_a", &P2pRow::unit_a, "", "the rank, or the domain with --domains"},
      {"unit_b", &P2pRow::unit_b, "", "the other rank or domain"},
      {"rank_a", &P2pRow::rank_a, "", "the world rank that initiated"},
      {"rank_b", &P2pRow::rank_b, "", "the world rank that answered"},
      {"host_a", &P2pRow::host_a, "", "rank_a's host"},
      {"host_b", &P2pRow::host_b, "", "rank_b's host"},
      {"bytes", &P2pRow::bytes, "B", "the message size"},
      {"iters", &P2pRow::iters, "iterations", "timed round trips"},
      {"time_us", &P2pRow::time_us, "us", "the mean half round trip"},
      {"p50_us", &P2pRow::p50_us, "us", "the median half round trip"},
      {"p99_us", &P2pRow::p99_us, "us", "the 99th percentile half round trip"},
      {"bandwidth_GBps", &P2pRow::bandwidth_GBps, "GB/s", "bytes / the mean half round trip"},
      {"wrong", &P2pRow::wrong, "B", "bytes that arrived wrong, both directions"},
  }};
};

struct P2pOutlierRow {
  std::string kind, metric;
  std::uint64_t bytes = 0;
  std::int64_t rank_a = 0, rank_b = 0;
  std::string host_a, host_b;
  double value = 0, median = 0, ratio = 0;

  static constexpr std::string_view kTable = "p2p_outliers";
  static constexpr std::array<store::Field<P2pOutlierRow>, 10> kFields{{
      {"kind", &P2pOutlierRow::kind, "", "pair or rank"},
      {"metric", &P2pOutlierRow::metric, "", "bandwidth or latency"},
      {"bytes", &P2pOutlierRow::bytes, "B", "the message size"},
      {"rank_a", &P2pOutlierRow::rank_a, "", "the rank (of a pair, the first)"},
      {"rank_b", &P2pOutlierRow::rank_b, "", "the pair's other rank; -1 for a rank"},
      {"host_a", &P2pOutlierRow::host_a, "", "rank_a's host"},
      {"host_b", &P2pOutlierRow::host_b, "", "rank_b's host (empty for a rank)"},
      {"value", &P2pOutlierRow::value, "",
       "the pair's value, or the rank's median over its pairs: GB/s for bandwidth, us for latency"},
      {"median", &P2pOutlierRow::median, "", "the median over all pairs (or ranks) at this size, in the same unit"},
      {"ratio", &P2pOutlierRow::ratio, "", "value / median"},
  }};
};

}  // namespace ibt::suites
