#pragma once
// The manifest of one checkpoint: DIR/step-NNNNNN/manifest.json, written LAST by rank 0
// after every rank has written, fsynced and checksummed its shard. A step directory
// without a manifest is therefore a checkpoint that was still being written (or whose
// writer died) and is never taken for a complete one.
//
// Written atomically: to manifest.json.tmp, fsync, rename to manifest.json, fsync the
// step directory (so the rename itself survives a crash).
//
// Contents (JSON): format "ibt-checkpoint" version 1, step (steps completed), the run's
// identity (model, split, world size, seed, lr, data settings: what a resume must match),
// and per rank: shard file name, size in bytes, checksum.
#include <cstdint>
#include <string>
#include <vector>

namespace ibt::checkpoint {

inline constexpr const char* kManifestName = "manifest.json";
inline constexpr const char* kManifestFormat = "ibt-checkpoint";
inline constexpr int kManifestVersion = 1;

// What a resumed run must share with the run that wrote the checkpoint.
struct RunIdentity {
  std::string model;
  std::string split;  // describe(ParallelSplit)
  int world_size = 0;
  std::uint64_t seed = 0;
  double lr = 0;
  std::string data;  // DataSource::describe(), token width included
  bool operator==(const RunIdentity&) const = default;
};

struct ShardEntry {
  int rank = 0;
  std::string file;  // relative to the step directory
  std::uint64_t bytes = 0;
  std::string checksum;  // file_checksum()
};

struct Manifest {
  std::int64_t step = 0;  // steps completed when written
  RunIdentity identity;
  std::vector<ShardEntry> shards;  // one per rank, in rank order
  std::string written_at;          // ISO 8601 UTC
};

// Atomic write into step_dir (which must exist). Throws RuntimeError naming the file.
void write_manifest(const std::string& step_dir, const Manifest& m);
// Throws UsageError naming the file and what is wrong (missing, not JSON, a missing key,
// shards not one per rank).
Manifest read_manifest(const std::string& step_dir);

// "" when equal; otherwise one line naming the first field that differs and both values,
// e.g. "split: the checkpoint has 'dp4 ...', this run has 'dp2 ...'".
std::string identity_mismatch(const RunIdentity& checkpoint, const RunIdentity& now);

// The step directories (step-NNNNNN) under dir, oldest first; empty when dir is missing.
std::vector<std::string> step_dirs(const std::string& dir);

struct LatestCheckpoint {
  std::string step_dir;  // full path
  Manifest manifest;
  std::vector<std::string> skipped;  // newer step directories without a manifest
};
// The newest step directory that has a manifest. Throws UsageError naming dir when it
// does not exist, holds no step directories, or none of them has a manifest.
LatestCheckpoint find_latest_complete(const std::string& dir);

// "" when the shard file matches its entry; otherwise a line naming the file and what
// differs (missing, size, checksum).
std::string verify_shard(const std::string& step_dir, const ShardEntry& entry);

}  // namespace ibt::checkpoint
