#include "models/training/train_checkpoints.hpp"

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <filesystem>

#include "core/errors.hpp"
#include "core/stats.hpp"
#include "models/checkpoint/checkpointer.hpp"
#include "models/training/train_tables.hpp"

namespace ibt::suites {

TrainCheckpoints::TrainCheckpoints(const TrainOptions& o, checkpoint::RunIdentity identity, MPI_Comm world,
                                   RunRecorder* recorder)
    : options_(o), identity_(std::move(identity)), world_(world), recorder_(recorder) {
  MPI_Comm_rank(world, &rank_);
  if (o.checkpoint_every > 0) dir_ = o.checkpoint_dir.empty() ? o.resume_dir : o.checkpoint_dir;
}

int TrainCheckpoints::begin(models::CpuExecutor* exec) {
  if (!exec && (!dir_.empty() || !options_.resume_dir.empty()))
    throw UsageError("checkpoints are written and resumed by the cpu executor only");
  const bool active = recorder_ && recorder_->active();
  if (!dir_.empty() && active) {
    recorder_->set_attr("checkpoint_dir", dir_);
    recorder_->set_attr("checkpoint_every", static_cast<std::int64_t>(options_.checkpoint_every));
  }
  const std::string advice = "resume them with --resume " + dir_ + ", or choose an empty directory";
  if (options_.resume_dir.empty()) {
    if (!dir_.empty()) checkpoint::refuse_existing_checkpoints(dir_, "--checkpoint-dir", advice, world_);
    return 0;
  }
  // Writing new checkpoints into another directory that holds some would mix two runs.
  if (!dir_.empty() &&
      std::filesystem::path(dir_).lexically_normal() != std::filesystem::path(options_.resume_dir).lexically_normal())
    checkpoint::refuse_existing_checkpoints(dir_, "--checkpoint-dir", advice, world_);
  const checkpoint::LoadReport loaded = checkpoint::load_checkpoint(options_.resume_dir, identity_, world_);
  if (loaded.step >= options_.steps)
    throw UsageError("--resume " + loaded.step_dir + ": the checkpoint is at step " + std::to_string(loaded.step) +
                     ", which already reaches --steps " + std::to_string(options_.steps) +
                     " (--steps counts all steps, resumed ones included)");
  exec->restore_training_state(loaded.state);
  double read_max = loaded.read_seconds;
  MPI_Allreduce(MPI_IN_PLACE, &read_max, 1, MPI_DOUBLE, MPI_MAX, world_);
  if (rank_ == 0) {
    for (const std::string& s : loaded.skipped)
      std::printf("# resume: skipping %s: no %s (a checkpoint that was not completed)\n", s.c_str(),
                  checkpoint::kManifestName);
    std::printf("# resumed from %s: %lld steps done, shards verified and read in %.3f s (slowest rank)\n",
                loaded.step_dir.c_str(), static_cast<long long>(loaded.step), read_max);
    std::fflush(stdout);
  }
  if (active) {
    recorder_->set_attr("resumed_from_dir", loaded.step_dir);
    recorder_->set_attr("resumed_from_step", static_cast<std::int64_t>(loaded.step));
    recorder_->set_attr("resume_read_s", read_max);
  }
  return static_cast<int>(loaded.step);
}

void TrainCheckpoints::after_step(int step, models::CpuExecutor* exec) {
  if (!dir_.empty() && (step + 1) % options_.checkpoint_every == 0) {
    const checkpoint::SaveReport r = checkpoint::save_checkpoint(dir_, exec->training_state(), identity_, world_);
    ++count_;
    total_bytes_ += static_cast<double>(r.total_bytes());
    total_seconds_ += r.total_seconds;
    const std::vector<double> bw = r.rank_bandwidths();
    std::vector<double> bytes(r.bytes.begin(), r.bytes.end());
    if (rank_ == 0 && options_.print_steps) {
      std::printf(
          "# checkpoint %s: %.3f MiB in %zu shards (max %.3f MiB/rank), write max %.4f s median %.4f s, "
          "%.3f GB/s aggregate, %.3f GB/s per rank (median); %.4f s with manifest\n",
          r.step_dir.c_str(), static_cast<double>(r.total_bytes()) / 1048576.0, r.bytes.size(),
          *std::max_element(bytes.begin(), bytes.end()) / 1048576.0, r.max_write_seconds(), r.median_write_seconds(),
          r.aggregate_bandwidth() * 1e-9, quantile(bw, 0.5) * 1e-9, r.total_seconds);
      std::fflush(stdout);
    }
    if (recorder_ && recorder_->active()) {
      CheckpointRow row;
      row.step = r.step;
      row.total_bytes = static_cast<double>(r.total_bytes());
      row.bytes_per_rank_max = *std::max_element(bytes.begin(), bytes.end());
      row.write_s_max = r.max_write_seconds();
      row.write_s_median = r.median_write_seconds();
      row.rank_GBps_min = *std::min_element(bw.begin(), bw.end()) * 1e-9;
      row.rank_GBps_median = quantile(bw, 0.5) * 1e-9;
      row.aggregate_GBps = r.aggregate_bandwidth() * 1e-9;
      row.checkpoint_s = r.total_seconds;
      recorder_->append(row);
      for (size_t k = 0; k < r.bytes.size(); ++k)
        recorder_->append(
            CheckpointRankRow{r.step, static_cast<std::int64_t>(k), bytes[k], r.write_seconds[k], bw[k] * 1e-9});
    }
  }
  if (options_.exit_after_step == step) {
    std::fflush(nullptr);
    MPI_Barrier(world_);  // every rank has finished the step (and its checkpoint)
    if (rank_ == 0) {
      std::fprintf(stderr, "# --exit-after-step %d: rank 0 kills itself (SIGKILL) to simulate a crash\n", step);
      std::fflush(nullptr);
      std::raise(SIGKILL);
    }
    // The other ranks wait here for the launcher to end them: a crashed job's ranks
    // never get to finish on their own.
    MPI_Barrier(world_);
  }
}

void TrainCheckpoints::finish() {
  if (!recorder_ || !recorder_->active() || dir_.empty()) return;
  recorder_->set_attr("checkpoint_count", count_);
  recorder_->set_attr("checkpoint_bytes_total", total_bytes_);
  recorder_->set_attr("checkpoint_seconds_total", total_seconds_);
}

}  // namespace ibt::suites
