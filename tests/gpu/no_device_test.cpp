// Without a usable GPU every GPU entry point fails at once with one line in plain words
// ("no CUDA GPU on this machine (...); ... needs one; use ...", core/no_gpu.hpp), as a
// UsageError (exit status 2). These run where there is no GPU (CI); on a
// GPU machine they skip, saying so. Also: NVML's report, with or without a driver.
#include <gtest/gtest.h>

#include "collectives/nccl/nccl_backend.hpp"
#include "collectives/nccl/nvml_topology.hpp"
#include "core/errors.hpp"
#include "gpu_test_support.hpp"
#include "models/cuda/gemm_bench.hpp"

namespace ibt {
namespace {

// The CUDA error this machine reports, or skip when it has a device.
std::string cuda_error_text_or_skip() {
  int count = 0;
  const cudaError_t rc = cudaGetDeviceCount(&count);
  if (rc == cudaSuccess && count > 0) return "";
  return rc == cudaSuccess ? "cudaGetDeviceCount found none" : cudaGetErrorString(rc);
}

bool rc_text_is_cuda_error(const std::string& text) { return text != "cudaGetDeviceCount found none"; }

template <typename F>
std::string usage_error_of(F&& f) {
  try {
    f();
  } catch (const UsageError& e) {
    return e.what();
  } catch (const std::exception& e) {
    return std::string("wrong exception type: ") + e.what();
  }
  return "no exception";
}

TEST(NoGpu, NcclBackendFailsWithTheCudaError) {
  const std::string cuda_text = cuda_error_text_or_skip();
  if (cuda_text.empty()) GTEST_SKIP() << "a CUDA device is present; this test covers machines without one";
  const std::string message = usage_error_of([] { gpu::make_nccl_backend(MPI_COMM_WORLD, gpu::NcclOptions{}); });
  // Plain words, not a driver fault; what CUDA said stays in the brackets.
  EXPECT_EQ(message.rfind("--backend nccl: no CUDA GPU on this machine (", 0), 0u) << message;
  EXPECT_NE(message.find("; the nccl backend needs one; use --backend mpi"), std::string::npos) << message;
  if (rc_text_is_cuda_error(cuda_text)) {
    EXPECT_NE(message.find(cuda_text), std::string::npos) << message;
  }
}

TEST(NoGpu, GemmBenchFailsWithTheCudaError) {
  const std::string cuda_text = cuda_error_text_or_skip();
  if (cuda_text.empty()) GTEST_SKIP() << "a CUDA device is present; this test covers machines without one";
  const std::string gemm = usage_error_of([] { gpu::GemmBench bench("", 0); });
  EXPECT_EQ(gemm.rfind("no CUDA GPU on this machine (", 0), 0u) << gemm;
  EXPECT_NE(gemm.find("); it measures one"), std::string::npos) << gemm;
  const std::string calibrate = usage_error_of([] { gpu::GemmBench bench("calibrate", 0); });
  EXPECT_EQ(calibrate.rfind("calibrate: no CUDA GPU on this machine (", 0), 0u) << calibrate;
}

TEST(NoGpu, CheckCudaNamesTheCallAndTheError) {
  try {
    gpu::check_cuda(cudaErrorInvalidValue, "cudaMemcpy of 8 B");
    FAIL() << "check_cuda accepted an error";
  } catch (const RuntimeError& e) {
    EXPECT_EQ(std::string(e.what()), std::string("cudaMemcpy of 8 B failed: ") +
                                         cudaGetErrorString(cudaErrorInvalidValue) + " (cudaErrorInvalidValue)");
  }
  EXPECT_NO_THROW(gpu::check_cuda(cudaSuccess, "anything"));
}

}  // namespace
}  // namespace ibt

namespace ibt {
namespace {

TEST(Nvml, ReportsTheTopologyOrWhyNot) {
  const gpu::NvmlReport report = gpu::probe_nvml({});
  if (report.available) {
    EXPECT_FALSE(report.driver_version.empty());
    EXPECT_TRUE(report.matrix.empty());
  } else {
    // Machines without a driver (CI) have no NVML: the reason says which library failed.
    EXPECT_NE(report.why_unavailable.find("libnvidia-ml.so.1"), std::string::npos) << report.why_unavailable;
  }
}

TEST(Nvml, MatrixFormatsAsOneLine) {
  gpu::NvmlReport report;
  report.matrix = {{"X", "NV18"}, {"NV18", "X"}};
  EXPECT_EQ(gpu::format_matrix(report), "GPU0[X NV18];GPU1[NV18 X]");
}

}  // namespace
}  // namespace ibt
