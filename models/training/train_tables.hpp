#pragma once
// The tables `ibt train` stores besides `steps` (reports/tables/steps_table.hpp), one
// schema each (core/row_schema.hpp): "memory", one row per rank, and with
// --checkpoint-every "checkpoints", one row per checkpoint, and "checkpoint_ranks", one
// row per rank of each. The columns keep the names, types and order files have had.
#include <array>
#include <cstdint>
#include <string_view>

#include "core/row_schema.hpp"

namespace ibt::suites {

// Memory per rank: what the process held at its peak against what the accounting
// (models/plan/accounting.hpp) plans for its stage.
struct MemoryRow {
  std::int64_t rank = 0, stage = 0;
  double peak_rss = 0, model_state = 0, accounting_model_state = 0, accounting_activations = 0;

  static constexpr std::string_view kTable = "memory";
  static constexpr std::array<store::Field<MemoryRow>, 6> kFields{{
      {"rank", &MemoryRow::rank, "", "the rank"},
      {"stage", &MemoryRow::stage, "", "its pipeline stage"},
      {"peak_rss", &MemoryRow::peak_rss, "B", "the process's peak resident memory (VmHWM; 0 when unknown)"},
      {"model_state", &MemoryRow::model_state, "B", "parameters, gradients and optimizer states the executor holds"},
      {"accounting_model_state", &MemoryRow::accounting_model_state, "B",
       "the same as the accounting plans it for the stage"},
      {"accounting_activations", &MemoryRow::accounting_activations, "B",
       "the activations the accounting plans for the stage"},
  }};
};

// One checkpoint of the run: its size and how fast the ranks wrote it.
struct CheckpointRow {
  std::int64_t step = 0;
  double total_bytes = 0, bytes_per_rank_max = 0, write_s_max = 0, write_s_median = 0, rank_GBps_min = 0,
         rank_GBps_median = 0, aggregate_GBps = 0, checkpoint_s = 0;

  static constexpr std::string_view kTable = "checkpoints";
  static constexpr std::array<store::Field<CheckpointRow>, 9> kFields{{
      {"step", &CheckpointRow::step, "", "the step after which the checkpoint was written"},
      {"total_bytes", &CheckpointRow::total_bytes, "B", "all shards together"},
      {"bytes_per_rank_max", &CheckpointRow::bytes_per_rank_max, "B", "the largest rank's shard"},
      {"write_s_max", &CheckpointRow::write_s_max, "s", "the slowest rank's write time"},
      {"write_s_median", &CheckpointRow::write_s_median, "s", "the median rank's write time"},
      {"rank_GBps_min", &CheckpointRow::rank_GBps_min, "GB/s", "the slowest rank's write bandwidth"},
      {"rank_GBps_median", &CheckpointRow::rank_GBps_median, "GB/s", "the median rank's write bandwidth"},
      {"aggregate_GBps", &CheckpointRow::aggregate_GBps, "GB/s", "all shards' bytes over the slowest write"},
      {"checkpoint_s", &CheckpointRow::checkpoint_s, "s",
       "the whole checkpoint, barrier to barrier, manifest included"},
  }};
};

// One rank's shard of a checkpoint.
struct CheckpointRankRow {
  std::int64_t step = 0, rank = 0;
  double bytes = 0, write_s = 0, write_GBps = 0;

  static constexpr std::string_view kTable = "checkpoint_ranks";
  static constexpr std::array<store::Field<CheckpointRankRow>, 5> kFields{{
      {"step", &CheckpointRankRow::step, "", "the step after which the checkpoint was written"},
      {"rank", &CheckpointRankRow::rank, "", "the rank"},
      {"bytes", &CheckpointRankRow::bytes, "B", "its shard's size"},
      {"write_s", &CheckpointRankRow::write_s, "s", "its write time: create, write, close, fsync of its shard"},
      {"write_GBps", &CheckpointRankRow::write_GBps, "GB/s", "its write bandwidth"},
  }};
};

}  // namespace ibt::suites
