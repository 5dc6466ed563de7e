#include "models/checkpoint/checkpointer.hpp"

#include <algorithm>
#include <filesystem>
#include <numeric>

#include "core/errors.hpp"
#include "core/stats.hpp"
#include "models/checkpoint/shard_io.hpp"

namespace ibt::checkpoint {

namespace fs = std::filesystem;

namespace {

int rank_of(MPI_Comm c) {
  int r = 0;
  MPI_Comm_rank(c, &r);
  return r;
}
int size_of(MPI_Comm c) {
  int s = 1;
  MPI_Comm_size(c, &s);
  return s;
}

std::string broadcast_string(std::string s, int root, MPI_Comm world) {
  int len = static_cast<int>(s.size());
  MPI_Bcast(&len, 1, MPI_INT, root, world);
  s.resize(static_cast<size_t>(len));
  MPI_Bcast(s.data(), len, MPI_CHAR, root, world);
  return s;
}

// Throws the agreed error: UsageError for bad input (what a user must fix), StorageError
// when a rank ran out of room (`storage` on any rank: exit 4), RuntimeError for other I/O
// failures.
void throw_if_any(const std::string& mine, bool usage, MPI_Comm world, int storage = 0) {
  const std::string error = agree_on_error(mine, world);
  if (error.empty()) return;
  if (usage) throw UsageError(error);
  MPI_Allreduce(MPI_IN_PLACE, &storage, 1, MPI_INT, MPI_MAX, world);
  if (storage) throw StorageError(error);
  throw RuntimeError(error);
}

}  // namespace

std::string agree_on_error(const std::string& mine, MPI_Comm world) {
  const int size = size_of(world);
  int first = mine.empty() ? size : rank_of(world);
  MPI_Allreduce(MPI_IN_PLACE, &first, 1, MPI_INT, MPI_MIN, world);
  if (first == size) return "";
  return broadcast_string(mine, first, world);
}

std::uint64_t SaveReport::total_bytes() const { return std::accumulate(bytes.begin(), bytes.end(), std::uint64_t{0}); }
double SaveReport::max_write_seconds() const {
  return write_seconds.empty() ? 0 : *std::max_element(write_seconds.begin(), write_seconds.end());
}
double SaveReport::median_write_seconds() const {
  return quantile(write_seconds, 0.5);  // 0 when empty
}
std::vector<double> SaveReport::rank_bandwidths() const {
  std::vector<double> out;
  for (size_t r = 0; r < bytes.size(); ++r)
    out.push_back(write_seconds[r] > 0 ? static_cast<double>(bytes[r]) / write_seconds[r] : 0.0);
  return out;
}
double SaveReport::aggregate_bandwidth() const {
  const double t = max_write_seconds();
  return t > 0 ? static_cast<double>(total_bytes()) / t : 0.0;
}

SaveReport save_checkpoint(const std::string& dir, const models::TrainingState& state, const RunIdentity& identity,
                           MPI_Comm world) {
  const int rank = rank_of(world), size = size_of(world);
  SaveReport report;
  report.step = state.steps_done;
  report.step_dir = (fs::path(dir) / step_dir_name(state.steps_done)).string();
  MPI_Barrier(world);
  const double t0 = MPI_Wtime();
  // Rank 0 prepares the step directory. A manifest left there by an earlier attempt is
  // removed first, so the directory is never complete while its shards are rewritten.
  std::string error;
  if (rank == 0) {
    std::error_code ec;
    fs::create_directories(report.step_dir, ec);
    if (ec) error = "cannot create checkpoint directory " + report.step_dir + ": " + ec.message();
    fs::remove(fs::path(report.step_dir) / kManifestName, ec);
  }
  throw_if_any(error, false, world);

  ShardWrite mine;
  const std::string file = shard_file_name(rank);
  int out_of_room = 0;
  try {
    mine = write_shard((fs::path(report.step_dir) / file).string(), state);
  } catch (const StorageError& e) {
    error = e.what();
    out_of_room = 1;
  } catch (const std::exception& e) {
    error = e.what();
  }
  throw_if_any(error, false, world, out_of_room);

  // Sizes and times to every rank (the records are rank 0's, the report everyone's);
  // checksums to rank 0 for the manifest.
  report.bytes.resize(size);
  report.write_seconds.resize(size);
  MPI_Allgather(&mine.bytes, 1, MPI_UINT64_T, report.bytes.data(), 1, MPI_UINT64_T, world);
  MPI_Allgather(&mine.write_seconds, 1, MPI_DOUBLE, report.write_seconds.data(), 1, MPI_DOUBLE, world);
  std::vector<char> sums(static_cast<size_t>(size) * 32, '\0');
  char own[32] = {};
  mine.checksum.copy(own, sizeof own - 1);
  MPI_Gather(own, 32, MPI_CHAR, sums.data(), 32, MPI_CHAR, 0, world);
  if (rank == 0) {
    Manifest m;
    m.step = state.steps_done;
    m.identity = identity;
    for (int r = 0; r < size; ++r)
      m.shards.push_back({r, shard_file_name(r), report.bytes[r], std::string(&sums[static_cast<size_t>(r) * 32])});
    try {
      write_manifest(report.step_dir, m);
    } catch (const std::exception& e) {
      error = e.what();
    }
  }
  throw_if_any(error, false, world);
  report.total_seconds = MPI_Wtime() - t0;
  MPI_Bcast(&report.total_seconds, 1, MPI_DOUBLE, 0, world);
  return report;
}

LoadReport load_checkpoint(const std::string& dir, const RunIdentity& now, MPI_Comm world) {
  const int rank = rank_of(world);
  LoadReport out;
  std::string error, skipped;
  if (rank == 0) {
    try {
      LatestCheckpoint latest = find_latest_complete(dir);
      const std::string why = identity_mismatch(latest.manifest.identity, now);
      if (!why.empty())
        error = "--resume " + latest.step_dir + ": " + why +
                " (resuming with another split, world size, model, seed, lr or data is refused: "
                "resharding ZeRO-1 optimizer shards and pipeline stage boundaries is not implemented)";
      out.step_dir = latest.step_dir;
      for (const std::string& s : latest.skipped) skipped += s + "\n";
    } catch (const std::exception& e) {
      error = e.what();
    }
  }
  throw_if_any(error, true, world);
  out.step_dir = broadcast_string(out.step_dir, 0, world);
  skipped = broadcast_string(skipped, 0, world);
  for (size_t at = 0; at < skipped.size();) {
    const size_t nl = skipped.find('\n', at);
    out.skipped.push_back(skipped.substr(at, nl - at));
    at = nl + 1;
  }

  // Every rank: its own shard, verified before it is parsed.
  const double t0 = MPI_Wtime();
  try {
    const Manifest m = read_manifest(out.step_dir);
    out.step = m.step;
    error = verify_shard(out.step_dir, m.shards.at(static_cast<size_t>(rank)));
    if (error.empty()) {
      out.state = read_shard((fs::path(out.step_dir) / m.shards[static_cast<size_t>(rank)].file).string());
      if (out.state.steps_done != m.step)
        error = "checkpoint shard " + m.shards[static_cast<size_t>(rank)].file + " in " + out.step_dir +
                " is for step " + std::to_string(out.state.steps_done) + ", the manifest for step " +
                std::to_string(m.step);
    }
  } catch (const std::exception& e) {
    error = e.what();
  }
  out.read_seconds = MPI_Wtime() - t0;
  throw_if_any(error, true, world);
  return out;
}

void refuse_existing_checkpoints(const std::string& dir, const std::string& flag, const std::string& advice,
                                 MPI_Comm world) {
  std::string error;
  if (rank_of(world) == 0) {
    const std::vector<std::string> steps = step_dirs(dir);
    if (!steps.empty())
      error = flag + " " + dir + " already holds checkpoints (" + fs::path(steps.back()).filename().string() +
              "): " + advice;
  }
  throw_if_any(error, true, world);
}

}  // namespace ibt::checkpoint
