#pragma once
// The per-rank peak ibt train measures MFU against, and the measured GEMM peak of the
// second MFU (cuda), with where each figure comes from.
#include <mpi.h>

#include <string>

#include "models/training/train_executor.hpp"
#include "models/training/train_runner.hpp"

namespace ibt::suites {

// A per-rank peak in GFLOP/s and where it comes from.
struct Peak {
  double gflops = 0;
  std::string source;
};

// The peak MFU is measured against: cpu, the measured sgemm (or --peak-tflops); cuda, the
// given or the GPU's catalog peak.
Peak rank_peak(const TrainOptions& o, const TrainExecutor& exec, MPI_Comm world, int threads);

// The measured GEMM peak of the second MFU (cuda): --gemm-peak-tflops or --gemm-peak-from's;
// 0 = none. Collective (rank 0 reads the file and shares the figure or the error).
Peak gemm_peak_of(const TrainOptions& o, const TrainExecutor& exec, MPI_Comm world);

}  // namespace ibt::suites
