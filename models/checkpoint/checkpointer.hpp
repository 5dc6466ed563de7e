#pragma once
// Checkpoints of a multi-rank run: every rank writes its own shard (shard_io.hpp), rank 0
// writes the manifest (manifest.hpp) once all shards are durable, and a resume reads
// the newest complete one back. Collective over `world`: every rank calls every function
// here, and a problem seen on any rank becomes the same exception on every rank (so no
// rank is left waiting in a collective).
//
// The checkpoint directory must be visible to all ranks under the same path (a shared
// file system): rank 0 chooses the checkpoint and writes the manifest, each rank reads
// and writes only its own shard.
#include <mpi.h>

#include <cstdint>
#include <string>
#include <vector>

#include "models/checkpoint/manifest.hpp"
#include "models/checkpoint/training_state.hpp"

namespace ibt::checkpoint {

// One checkpoint as written, gathered onto every rank.
struct SaveReport {
  std::string step_dir;
  std::int64_t step = 0;
  std::vector<std::uint64_t> bytes;   // per rank, shard file size
  std::vector<double> write_seconds;  // per rank: create, write, close, fsync of its shard
  double total_seconds = 0;           // barrier to barrier, manifest included
  std::uint64_t total_bytes() const;
  double max_write_seconds() const;
  double median_write_seconds() const;
  // Per-rank bandwidths (bytes / own write time), bytes per second.
  std::vector<double> rank_bandwidths() const;
  // All shards' bytes over the slowest rank's write time, bytes per second.
  double aggregate_bandwidth() const;
};

SaveReport save_checkpoint(const std::string& dir, const models::TrainingState& state, const RunIdentity& identity,
                           MPI_Comm world);

struct LoadReport {
  models::TrainingState state;  // this rank's
  std::string step_dir;
  std::int64_t step = 0;
  std::vector<std::string> skipped;  // newer step directories without a manifest
  double read_seconds = 0;           // this rank: verify checksum + read
};

// Finds the newest complete checkpoint under dir (rank 0), refuses it when its
// identity differs from `now` (UsageError naming both values; resharding is not
// supported), then each rank verifies its shard against the manifest (size, checksum)
// and reads it.
LoadReport load_checkpoint(const std::string& dir, const RunIdentity& now, MPI_Comm world);

// UsageError (every rank) when dir already holds step directories: a fresh run must not
// write into an earlier run's checkpoints. The message is "<flag> <dir> already holds
// checkpoints (step-NNNNNN): <advice>".
void refuse_existing_checkpoints(const std::string& dir, const std::string& flag, const std::string& advice,
                                 MPI_Comm world);

// The first non-empty message by rank order, on every rank ("" when all are empty).
std::string agree_on_error(const std::string& mine, MPI_Comm world);

}  // namespace ibt::checkpoint
