#pragma once
// The tables of an `ibt checkpoint-bench` run (core/row_schema.hpp): "samples", one row
// per rank and repeat, and "summary", one row per direction (write, read). The columns
// keep the names, types, units and order files have always had.
#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/row_schema.hpp"

namespace ibt::checkpoint {

// One rank's shard in one repeat: written, then read back.
struct BenchSampleRow {
  std::int64_t repeat = 0, rank = 0;
  double bytes = 0, write_s = 0, write_GBps = 0, read_s = 0, read_GBps = 0, resident_before_read = 0;

  static constexpr std::string_view kTable = "samples";
  static constexpr std::array<store::Field<BenchSampleRow>, 8> kFields{{
      {"repeat", &BenchSampleRow::repeat, "", "the repeat's number, from 0"},
      {"rank", &BenchSampleRow::rank, "", "the rank that wrote and read the shard"},
      {"bytes", &BenchSampleRow::bytes, "B", "the rank's shard"},
      {"write_s", &BenchSampleRow::write_s, "s", "the rank's write time, fsync included"},
      {"write_GBps", &BenchSampleRow::write_GBps, "GB/s", "the shard's bytes over its write time"},
      {"read_s", &BenchSampleRow::read_s, "s", "the rank's time to read its shard back"},
      {"read_GBps", &BenchSampleRow::read_GBps, "GB/s", "the shard's bytes over its read time"},
      {"resident_before_read", &BenchSampleRow::resident_before_read, "",
       "the fraction of the shard's pages in the page cache when the read began"},
  }};
};

// One direction over all repeats: per-rank and aggregate bandwidths.
struct BenchSummaryRow {
  std::string op;
  double per_rank_median_GBps = 0, per_rank_min_GBps = 0, per_rank_max_GBps = 0;
  double aggregate_median_GBps = 0, aggregate_min_GBps = 0, aggregate_max_GBps = 0;

  static constexpr std::string_view kTable = "summary";
  static constexpr std::array<store::Field<BenchSummaryRow>, 7> kFields{{
      {"op", &BenchSummaryRow::op, "", "write or read"},
      {"per_rank_median_GBps", &BenchSummaryRow::per_rank_median_GBps, "GB/s",
       "the median of every rank's bandwidth in every repeat"},
      {"per_rank_min_GBps", &BenchSummaryRow::per_rank_min_GBps, "GB/s", "the slowest rank-repeat"},
      {"per_rank_max_GBps", &BenchSummaryRow::per_rank_max_GBps, "GB/s", "the fastest rank-repeat"},
      {"aggregate_median_GBps", &BenchSummaryRow::aggregate_median_GBps, "GB/s",
       "the median over repeats of all shards' bytes over the slowest rank's time"},
      {"aggregate_min_GBps", &BenchSummaryRow::aggregate_min_GBps, "GB/s", "the slowest repeat's aggregate"},
      {"aggregate_max_GBps", &BenchSummaryRow::aggregate_max_GBps, "GB/s", "the fastest repeat's aggregate"},
  }};
};

}  // namespace ibt::checkpoint
