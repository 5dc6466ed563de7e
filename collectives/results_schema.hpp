#pragma once
// The columns of the "collectives" table of a collectives run in the HDF5 store.
// Sizes follow nccl-tests: `bytes` is the total buffer of the op as nccl-tests counts it
// (all_gather: the gathered output; reduce_scatter and all_to_all: the whole input).
// GB/s means 1e9 bytes per second. Times are per iteration, in microseconds.
#include <vector>

#include "core/columns.hpp"

namespace ibt {

inline const char* kCollectivesTable = "collectives";

inline std::vector<store::Column> collectives_columns() {
  using store::ColumnType;
  return {
      {"op", ColumnType::str},
      {"scope", ColumnType::str},
      {"backend", ColumnType::str},
      {"dtype", ColumnType::str},
      {"reduce_op", ColumnType::str},
      {"placement", ColumnType::str},  // "out" (out-of-place) or "in" (in-place)
      {"group_size", ColumnType::i64, "ranks"},
      {"groups", ColumnType::i64, "groups"},  // groups measured concurrently
      {"bytes", ColumnType::u64, "B"},
      {"count", ColumnType::u64, "elements"},
      {"iters", ColumnType::i64, "iterations"},
      {"time_us", ColumnType::f64, "us"},  // mean per iteration, aggregated over ranks
      {"p50_us", ColumnType::f64, "us"},   // per-iteration percentiles of the slowest rank
      {"p99_us", ColumnType::f64, "us"},
      {"algbw_GBps", ColumnType::f64, "GB/s"},
      {"busbw_GBps", ColumnType::f64, "GB/s"},
      {"wrong", ColumnType::u64, "elements"},  // wrong values summed over ranks
  };
}

// One row per group of an intra or inter scope (a domain, or a rail: the ranks with one
// local index), beside each "collectives" row of that scope: which ranks and hosts, the
// group's time (its slowest rank's mean per call) and busbw, and whether it is an outlier
// by p2p-matrix's rule (--outlier-threshold).
inline const char* kCollectivesGroupsTable = "collectives_groups";

inline std::vector<store::Column> collectives_groups_columns() {
  using store::ColumnType;
  return {
      {"op", ColumnType::str},
      {"scope", ColumnType::str},
      {"dtype", ColumnType::str},
      {"placement", ColumnType::str},
      {"bytes", ColumnType::u64, "B"},
      {"group", ColumnType::i64, ""},  // intra: the domain index; inter: the local rank
      {"ranks", ColumnType::str},      // world ranks, "0-3" or "0,4,8"
      {"hosts", ColumnType::str},
      {"time_us", ColumnType::f64, "us"},
      {"busbw_GBps", ColumnType::f64, "GB/s"},
      {"outlier", ColumnType::i64, ""},          // 1 when slower than the others by the rule
      {"ratio_to_median", ColumnType::f64, ""},  // value / median for an outlier, else 0
  };
}

}  // namespace ibt
