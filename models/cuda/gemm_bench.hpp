#pragma once
// The GEMM throughput microbenchmark behind `ibt gemm`: cuBLASLt products with bf16 (or,
// on sm_90 and newer, fp8 e4m3) inputs, fp32 accumulation and bf16 output, timed with
// CUDA events, each result checked against a sampled float64 reference. Its best
// TFLOP/s is the measured peak that MFU is also reported against.
#include <memory>
#include <string>
#include <vector>

#include "collectives/nccl/cuda_device.hpp"
#include "models/cuda/gemm_shapes.hpp"

namespace ibt::gpu {

// GemmOptions: models/cuda/gemm_shapes.hpp (no CUDA headers, so `ibt gemm --help` builds anywhere).

struct GemmMeasurement {
  GemmShape shape;
  GemmPrecision precision = GemmPrecision::bf16;
  std::vector<double> times_s;  // every timed product
  double median_s = 0, min_s = 0;
  double tflops = 0;     // 2mnk / median
  double rel_error = 0;  // ||D - ref|| / ||ref|| over the sampled elements
  bool correct = false;  // rel_error within kGemmTolerance
  int input_sets = 1;    // input buffers rotated so L2 does not hold them
};

// bf16 output rounding alone gives about 2e-3; inputs are exact in the reference.
inline constexpr double kGemmTolerance = 1e-2;

class GemmBench {
 public:
  // Throws UsageError "[<entry_point>: ]no CUDA GPU on this machine (...); ..." (core/no_gpu.hpp) without a GPU.
  GemmBench(const std::string& entry_point, int device);
  ~GemmBench();
  GemmBench(const GemmBench&) = delete;
  GemmBench& operator=(const GemmBench&) = delete;

  const DeviceFacts& device() const { return device_; }
  std::string cublaslt_version() const;
  // fp8 e4m3 needs compute capability 9.0 or newer.
  bool supports(GemmPrecision p) const;
  GemmMeasurement measure(const GemmShape& shape, GemmPrecision p, const GemmOptions& options);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  DeviceFacts device_;
};

}  // namespace ibt::gpu
