#pragma once
// Shared by the GPU tests: MPI for the whole test binary (the NCCL backend is built
// from an MPI job; a single process runs as an MPI singleton), and the reason a GPU test
// cannot run here, so it skips with that reason instead of passing silently.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>
#include <mpi.h>

#include <string>

namespace ibt::testing_gpu {

// Empty when a CUDA device is usable; otherwise the CUDA error text.
inline std::string no_device_reason() {
  int count = 0;
  const cudaError_t rc = cudaGetDeviceCount(&count);
  if (rc != cudaSuccess) return std::string("no CUDA device: ") + cudaGetErrorString(rc);
  if (count == 0) return "no CUDA device: cudaGetDeviceCount found none";
  return "";
}

#define IBT_REQUIRE_GPU()                                                                                  \
  do {                                                                                                     \
    if (const std::string why = ::ibt::testing_gpu::no_device_reason(); !why.empty()) GTEST_SKIP() << why; \
  } while (0)

// Queues a kernel that keeps the GPU busy for `seconds` (a stand-in for a peer that
// never arrives, to exercise the watchdog on one GPU).
void spin_on_stream(double seconds, cudaStream_t stream);

// Registered once per test binary (gpu_test_support.cpp), so tests may use MPI_COMM_WORLD.
class MpiEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (!initialized) MPI_Init(nullptr, nullptr);
  }
  void TearDown() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Finalize();
  }
};

}  // namespace ibt::testing_gpu
