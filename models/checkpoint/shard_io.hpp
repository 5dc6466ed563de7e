#pragma once
// One rank's checkpoint shard: DIR/step-NNNNNN/rank-RRRRR.h5, written with serial HDF5.
//
// Why one file per rank rather than one shared file through parallel HDF5: it needs no
// parallel-HDF5 build (Debian's libhdf5-dev is serial, and so are many site installs),
// ranks never contend on one file's metadata (the collective metadata writes are what
// limit shared-file checkpoints at scale), and each shard can be verified and read on
// its own, by the one rank that needs it.
//
// File layout (schema "ibt-checkpoint-shard", version 1):
//   /                 attrs: ibt_schema, ibt_schema_version, steps_done, optimizer_steps,
//                     seed, array_names (newline-separated, in write order)
//   /<array name>     1-D float32 dataset per TrainingState array (names are paths, so
//                     "params/x" lands in group /params)
#include <cstdint>
#include <string>

#include "models/checkpoint/training_state.hpp"

namespace ibt::checkpoint {

inline constexpr const char* kShardSchema = "ibt-checkpoint-shard";
inline constexpr int kShardSchemaVersion = 1;

struct ShardWrite {
  std::uint64_t bytes = 0;   // size of the file on disk
  double write_seconds = 0;  // create + write + close + fsync
  std::string checksum;      // of the file's bytes (file_checksum), read back after fsync
};

// "step-000012"; "rank-00003.h5".
std::string step_dir_name(std::int64_t step);
std::string shard_file_name(int rank);

// Writes the state to path (replacing any file there), then fsyncs it so the bytes
// are on stable storage before the manifest can name them. Throws RuntimeError naming
// the file when any step fails.
ShardWrite write_shard(const std::string& path, const models::TrainingState& state);

// Reads a shard back. Throws UsageError naming the file when it is missing, not HDF5,
// not a shard of this schema, or lacks an array its index names.
models::TrainingState read_shard(const std::string& path);

// "crc32:1a2b3c4d" over the file's bytes; *bytes (optional) gets the size read.
// Throws UsageError naming the file when it cannot be read.
std::string file_checksum(const std::string& path, std::uint64_t* bytes = nullptr);

// Asks the kernel to drop a file's (clean, already fsynced) pages from the page cache
// (posix_fadvise DONTNEED, no privileges needed), so a following read comes from the
// device. Returns the fraction of the file's pages still resident afterwards (mincore);
// the kernel may keep some, and a virtual disk's host may still cache the bytes.
// Throws RuntimeError naming the file when it cannot be opened or mapped.
double evict_from_page_cache(const std::string& path);

// fsync of a file or directory by path (a directory: so a rename or a new entry in it
// is durable). Throws RuntimeError naming the path.
void fsync_path(const std::string& path);

}  // namespace ibt::checkpoint
