#pragma once
// The cuda executor: one training step of a dense (model, split) over MPI ranks with one
// GPU each, the same pipeline schedule as the cpu executor walked by the same code
// (models/executor/pipeline_walk.hpp), with the math on the GPU (device_model.hpp:
// cuBLAS bf16 GEMMs with fp32 accumulation, fp32 kernels for the rest, fp32 master
// weights and AdamW) and the communication over NCCL:
//  - TP reductions and PP transfers: NCCL communicators on one stream, ordered after the
//    compute stream's work (each waits for it: TP and PP time is exposed, as on the CPU);
//  - DP: the gradient all-reduce runs on a separate communication stream. In a chunk's
//    last backward of the step, each layer's gradients are final once that layer's
//    backward is queued: their all-reduce starts then (head first, embedding last) and
//    overlaps the backward of the layers below it (and, interleaved, of other chunks);
//    the step waits for it only before AdamW. `dp_overlap = false` reduces everything
//    after the last backward instead.
// Step statistics are reduced over the world exactly as CpuExecutor::step() does, so
// `ibt train --check` compares both with the serial reference.
//
// Not implemented (refused by cuda_executor_check with one line): MoE/EP, ZeRO-1, CP,
// sequence parallelism, recompute, tied embeddings with pp > 1, MLA, fp8.
#include <mpi.h>

#include <memory>
#include <string>
#include <vector>

#include "models/engine/data.hpp"
#include "models/engine/reference_trainer.hpp"
#include "models/executor/process_groups.hpp"
#include "models/executor/time_breakdown.hpp"
#include "models/plan/model_config.hpp"
#include "models/plan/parallel_split.hpp"

namespace ibt::gpu {

struct CudaExecutorOptions {
  std::string precision = "bf16";  // GEMM operands: bf16 or fp32 (device_blas.hpp)
  bool dp_overlap = true;
  std::string attention = "gemm";  // attention core: threads or gemm (attention_gemm.hpp)
  double timeout_s = 300.0;        // NCCL watchdog: a stuck op aborts the job after this
};

// Why the cuda executor cannot run this split (empty when it can): validate() first,
// then what the GPU path does not implement.
std::string cuda_executor_check(const models::ParallelSplit& split, const models::ModelConfig& model, int world_size);

class CudaExecutor {
 public:
  // Throws UsageError "--executor cuda: no CUDA GPU on this machine (...); ..." (core/no_gpu.hpp) without a GPU,
  // and UsageError for a split cuda_executor_check refuses.
  CudaExecutor(const models::ModelConfig& m, const models::ParallelSplit& split, const models::TrainConfig& train,
               const models::DataSource& data, MPI_Comm world, const CudaExecutorOptions& options);
  ~CudaExecutor();
  CudaExecutor(const CudaExecutor&) = delete;
  CudaExecutor& operator=(const CudaExecutor&) = delete;

  models::StepStats step(models::TimeBreakdown* time = nullptr);
  const models::ProcessGroups& groups() const;
  double model_state_bytes() const;
  std::string device_name() const;  // "NVIDIA H100 80GB HBM3"
  std::string precision() const;    // "bf16" or "fp32"
  // This rank's parameters (fp32 masters) and gradients by name, downloaded: what the
  // GPU tests compare with the CPU engine's.
  std::vector<std::pair<std::string, std::vector<float>>> download_params(bool grads) const;

  struct Impl;  // defined in cuda_executor.cpp (device state; keeps CUDA out of this header)

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace ibt::gpu
