#pragma once
// The checkpoint side of `ibt train` (models/checkpoint/): resuming before the first
// step, a checkpoint every K steps, the test crash (--exit-after-step), and the run's
// records: a "checkpoints" table (one row per checkpoint), a "checkpoint_ranks" table
// (one row per rank and checkpoint) and totals as run attributes.
#include <mpi.h>

#include <cstdint>
#include <string>

#include "collectives/runtime/run_recorder.hpp"
#include "models/checkpoint/manifest.hpp"
#include "models/executor/cpu_executor.hpp"
#include "models/training/train_runner.hpp"

namespace ibt::suites {

class TrainCheckpoints {
 public:
  // Collective. identity: what a checkpoint of this run records and a resume must match.
  TrainCheckpoints(const TrainOptions& options, checkpoint::RunIdentity identity, MPI_Comm world,
                   RunRecorder* recorder);
  // Collective, before the first step: with --resume, restores exec from the newest
  // complete checkpoint and returns its step (the first step to run); otherwise refuses
  // a --checkpoint-dir that already holds checkpoints and returns 0. exec may be nullptr
  // (an executor without checkpoints) only when neither is asked for.
  int begin(models::CpuExecutor* exec);
  // Collective, after step index `step` completed: writes a checkpoint when one is due
  // ((step + 1) % K == 0), then, for --exit-after-step == step, kills rank 0 (SIGKILL)
  // to simulate a crash; the launcher then ends the other ranks.
  void after_step(int step, models::CpuExecutor* exec);
  // Totals as run attributes (rank 0's recorder).
  void finish();

 private:
  const TrainOptions& options_;
  checkpoint::RunIdentity identity_;
  MPI_Comm world_;
  RunRecorder* recorder_;
  int rank_ = 0;
  std::string dir_;  // where checkpoints go ("" = none)
  std::int64_t count_ = 0;
  double total_bytes_ = 0, total_seconds_ = 0;
};

}  // namespace ibt::suites
