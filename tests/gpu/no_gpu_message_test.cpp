// The no-GPU line of every GPU entry point (core/no_gpu.hpp): plain words naming what is
// missing, what needs it and what to use instead, with CUDA's own text kept in brackets.
// Runs in every build; the CUDA builds' no_device_test checks the line the real
// cudaGetDeviceCount produces on a machine without a GPU.
#include <gtest/gtest.h>

#include "core/no_gpu.hpp"

namespace ibt {
namespace {

// cudaGetErrorString(cudaErrorInsufficientDriver): what CUDA 13 says with no driver loaded.
constexpr const char* kNoDriverText = "CUDA driver version is insufficient for CUDA runtime version";

TEST(NoGpuMessage, NoDriverReadsAsNoGpuNotAsADriverToUpdate) {
  EXPECT_EQ(no_gpu_message("--backend nccl", no_gpu_cause(kNoDriverText, 0)),
            "--backend nccl: no CUDA GPU on this machine (no NVIDIA driver is loaded; CUDA says: CUDA driver "
            "version is insufficient for CUDA runtime version); the nccl backend needs one; use --backend mpi");
}

TEST(NoGpuMessage, EachEntryPointSaysWhatToUseInstead) {
  EXPECT_EQ(no_gpu_message("--executor cuda", no_gpu_cause("", 13000)),
            "--executor cuda: no CUDA GPU on this machine (the NVIDIA driver lists no device); the cuda executor "
            "needs one; use --executor cpu");
  EXPECT_EQ(no_gpu_message("", no_gpu_cause("no CUDA-capable device is detected", 13000)),
            "no CUDA GPU on this machine (CUDA says: no CUDA-capable device is detected); it measures one");
}

TEST(NoGpuMessage, ABuildWithoutCudaPointsToTheSameAlternative) {
  EXPECT_EQ(built_without_cuda_message("--backend nccl"),
            "--backend nccl: this ibt was built without CUDA; the nccl backend needs one; use --backend mpi (or "
            "rebuild with -DIBT_WITH_CUDA=ON where the CUDA toolkit and NCCL are found)");
}

}  // namespace
}  // namespace ibt
