#pragma once
// The tables of a collectives run in the HDF5 store, one schema each (core/row_schema.hpp),
// written by `ibt collectives` and `ibt accept`, read by `accept --from`, calibration and
// the report:
// "collectives", one row per (op, scope, dtype, size, placement), and
// "collectives_groups", one row per group of an intra or inter scope beside it.
// Sizes follow nccl-tests: `bytes` is the total buffer of the op as nccl-tests counts it
// (all_gather: the gathered output; reduce_scatter and all_to_all: the whole input).
// GB/s means 1e9 bytes per second. Times are per iteration, in microseconds.
#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/row_schema.hpp"

namespace ibt::tables {

struct CollectiveRow {
  std::string op, scope, backend, dtype, reduce_op, placement;
  std::int64_t group_size = 0, groups = 0;
  std::uint64_t bytes = 0, count = 0;
  std::int64_t iters = 0;
  double time_us = 0, p50_us = 0, p99_us = 0, algbw_GBps = 0, busbw_GBps = 0;
  std::uint64_t wrong = 0;

  static constexpr std::string_view kTable = "collectives";
  static constexpr std::array<store::Field<CollectiveRow>, 17> kFields{{
      {"op", &CollectiveRow::op, "",
       "all_reduce, all_gather, reduce_scatter, all_to_all, broadcast, send_recv, ping_pong"},
      {"scope", &CollectiveRow::scope, "", "intra, inter or world"},
      {"backend", &CollectiveRow::backend, "", "mpi, ..."},
      {"dtype", &CollectiveRow::dtype, "", "float32, float64, int32, bfloat16, float16"},
      {"reduce_op", &CollectiveRow::reduce_op, "", "sum, prod, min, max, avg (reductions; avg on nccl only)"},
      {"placement", &CollectiveRow::placement, "", "out (out-of-place) or in (in-place)"},
      {"group_size", &CollectiveRow::group_size, "ranks", "ranks in each group"},
      {"groups", &CollectiveRow::groups, "groups", "groups measured concurrently (e.g. one per domain for intra)"},
      {"bytes", &CollectiveRow::bytes, "B", "the op's buffer as nccl-tests counts it"},
      {"count", &CollectiveRow::count, "elements", "the count argument passed to the collective call"},
      {"iters", &CollectiveRow::iters, "iterations", "timed iterations"},
      {"time_us", &CollectiveRow::time_us, "us", "mean time per iteration, combined over ranks by --average"},
      {"p50_us", &CollectiveRow::p50_us, "us", "per-iteration median of the slowest rank"},
      {"p99_us", &CollectiveRow::p99_us, "us", "per-iteration 99th percentile of the slowest rank"},
      {"algbw_GBps", &CollectiveRow::algbw_GBps, "GB/s", "bytes / time"},
      {"busbw_GBps", &CollectiveRow::busbw_GBps, "GB/s", "algbw x the op's bus factor (nccl-tests' convention)"},
      {"wrong", &CollectiveRow::wrong, "elements", "wrong values found by the checking pass, summed over ranks"},
  }};
};

// One row per group of an intra or inter scope (a domain, or a rail: the ranks with one
// local index), beside each "collectives" row of that scope: which ranks and hosts, the
// group's time (its slowest rank's mean per call) and busbw, and whether it is an outlier
// by p2p-matrix's rule (--outlier-threshold).
struct CollectiveGroupRow {
  std::string op, scope, dtype, placement;
  std::uint64_t bytes = 0;
  std::int64_t group = 0;
  std::string ranks, hosts;
  double time_us = 0, busbw_GBps = 0;
  std::int64_t outlier = 0;
  double ratio_to_median = 0;

  static constexpr std::string_view kTable = "collectives_groups";
  static constexpr std::array<store::Field<CollectiveGroupRow>, 12> kFields{{
      {"op", &CollectiveGroupRow::op, "", "the collective, as in the collectives table"},
      {"scope", &CollectiveGroupRow::scope, "", "intra or inter"},
      {"dtype", &CollectiveGroupRow::dtype, "", "the element type"},
      {"placement", &CollectiveGroupRow::placement, "", "out (out-of-place) or in (in-place)"},
      {"bytes", &CollectiveGroupRow::bytes, "B", "the op's buffer as nccl-tests counts it"},
      {"group", &CollectiveGroupRow::group, "", "intra: the domain's index; inter: the local rank"},
      {"ranks", &CollectiveGroupRow::ranks, "", "the group's world ranks, \"0-3\" or \"0,4,8\""},
      {"hosts", &CollectiveGroupRow::hosts, "", "the distinct hosts of its ranks, in rank order"},
      {"time_us", &CollectiveGroupRow::time_us, "us", "the group's slowest rank's mean time per call"},
      {"busbw_GBps", &CollectiveGroupRow::busbw_GBps, "GB/s", "the group's bus bandwidth"},
      {"outlier", &CollectiveGroupRow::outlier, "", "1 when slower than the other groups by the outlier rule"},
      {"ratio_to_median", &CollectiveGroupRow::ratio_to_median, "", "an outlier's value / the median, else 0"},
  }};
};

}  // namespace ibt::tables
