#pragma once
// The executor `ibt train` and `ibt sweep` run a split with: the cpu executor (fp32,
// OpenBLAS, MPI) or the cuda executor (bf16 GEMMs, NCCL; models/cuda/executor). Both
// walk the same pipeline schedule (models/executor/pipeline_walk.hpp) and return the
// same step statistics, so the runner, --check and the HDF5 rows do not care which.
#include <mpi.h>

#include <memory>
#include <string>

#include "models/engine/data.hpp"
#include "models/engine/reference_trainer.hpp"
#include "models/executor/cpu_executor.hpp"
#include "models/executor/process_groups.hpp"
#include "models/executor/time_breakdown.hpp"
#include "models/plan/model_config.hpp"
#include "models/plan/parallel_split.hpp"

namespace ibt::suites {

struct ExecutorChoice {
  std::string kind = "cpu";             // cpu or cuda
  std::string precision;                // "" = the executor's default: fp32 on cpu, bf16 on cuda
  bool dp_overlap = true;               // cuda: DP all-reduce overlapping backward (--no-dp-overlap)
  std::string cuda_attention = "gemm";  // cuda: the attention core's kernels (--cuda-attention)
};

class TrainExecutor {
 public:
  virtual ~TrainExecutor() = default;
  virtual models::StepStats step(models::TimeBreakdown* time) = 0;
  virtual const models::ProcessGroups& groups() const = 0;
  virtual double model_state_bytes() = 0;       // this rank's weights, gradients, optimizer state
  virtual std::string kind() const = 0;         // "cpu", "cuda"
  virtual std::string precision() const = 0;    // "fp32", "bf16"
  virtual std::string device_name() const = 0;  // the GPU's name; "" on cpu
  // The executor whose training state checkpoints save and restore (models/checkpoint/
  // reads and writes the cpu executor's state); nullptr where checkpoints are not offered.
  virtual models::CpuExecutor* checkpointable() { return nullptr; }
};

// The precision the choice resolves to ("fp32" on cpu, "bf16" by default on cuda).
// Throws UsageError for an unknown executor or a precision it does not offer.
std::string resolve_precision(const ExecutorChoice& choice);

// Why the chosen executor cannot run the split (empty when it can). Throws UsageError
// for an unknown executor, or for cuda in a build without CUDA.
std::string train_executor_check(const ExecutorChoice& choice, const models::ParallelSplit& split,
                                 const models::ModelConfig& model, int world_size);

// cuda: throws UsageError "--executor cuda: no CUDA GPU on this machine (...); ..." (core/no_gpu.hpp) unless this
// process sees a GPU (so a sweep fails before it prints anything); cpu: nothing.
void require_executor_device(const ExecutorChoice& choice);

// Collective over world. Throws UsageError (exit 2) for a bad choice, a split the
// executor refuses, or (cuda) no usable GPU, naming the CUDA error in one line.
std::unique_ptr<TrainExecutor> make_train_executor(const ExecutorChoice& choice, const models::ModelConfig& model,
                                                   const models::ParallelSplit& split, const models::TrainConfig& train,
                                                   const models::DataSource& data, MPI_Comm world);

}  // namespace ibt::suites
