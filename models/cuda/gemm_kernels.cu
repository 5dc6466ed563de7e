#include <cuda_bf16.h>
#include <cuda_fp8.h>

#include "collectives/nccl/cuda_device.hpp"
#include "models/cuda/gemm_kernels.hpp"

namespace ibt::gpu {
namespace {

// SplitMix64: a counter-based generator, so each element is drawn independently of the
// launch shape.
__device__ std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

__device__ float uniform(std::uint64_t seed, std::size_t i) {
  return float(mix(seed ^ mix(i)) >> 40) * (2.0f / 16777216.0f) - 1.0f;  // 24 random bits
}

__global__ void fill_bf16(__nv_bfloat16* out, std::size_t count, std::uint64_t seed) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < count;
       i += std::size_t(gridDim.x) * blockDim.x)
    out[i] = __float2bfloat16(uniform(seed, i));
}

__global__ void fill_fp8(__nv_fp8_e4m3* out, std::size_t count, std::uint64_t seed) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < count;
       i += std::size_t(gridDim.x) * blockDim.x)
    out[i] = __nv_fp8_e4m3(uniform(seed, i));
}

__global__ void fill_nan(__nv_bfloat16* out, std::size_t count) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < count;
       i += std::size_t(gridDim.x) * blockDim.x)
    out[i] = __ushort_as_bfloat16(0x7fc0);
}

__device__ double load(const void* p, std::size_t i, bool fp8) {
  return fp8 ? double(float(static_cast<const __nv_fp8_e4m3*>(p)[i]))
             : double(__bfloat162float(static_cast<const __nv_bfloat16*>(p)[i]));
}

constexpr int kReferenceThreads = 256;

// One block per sample: the threads split the k-long dot product, then reduce.
__global__ void reference_dot(const void* a, const void* b, const __nv_bfloat16* d, bool fp8, std::int64_t m,
                              std::int64_t k, const std::int64_t* rows, const std::int64_t* cols, double* reference,
                              double* result) {
  __shared__ double partial[kReferenceThreads];
  const std::int64_t row = rows[blockIdx.x], col = cols[blockIdx.x];
  double acc = 0;
  for (std::int64_t kk = threadIdx.x; kk < k; kk += blockDim.x)
    acc += load(a, std::size_t(row) * k + kk, fp8) * load(b, std::size_t(col) * k + kk, fp8);
  partial[threadIdx.x] = acc;
  __syncthreads();
  for (int stride = blockDim.x / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) partial[threadIdx.x] += partial[threadIdx.x + stride];
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    reference[blockIdx.x] = partial[0];
    result[blockIdx.x] = double(__bfloat162float(d[std::size_t(col) * m + row]));
  }
}

int grid_for(std::size_t count) {
  const std::size_t blocks = (count + 255) / 256;
  return int(blocks < 65535 ? (blocks == 0 ? 1 : blocks) : 65535);
}

}  // namespace

void fill_uniform(void* data, std::size_t count, GemmPrecision p, std::uint64_t seed, cudaStream_t stream) {
  if (p == GemmPrecision::bf16)
    fill_bf16<<<grid_for(count), 256, 0, stream>>>(static_cast<__nv_bfloat16*>(data), count, seed);
  else
    fill_fp8<<<grid_for(count), 256, 0, stream>>>(static_cast<__nv_fp8_e4m3*>(data), count, seed);
  check_cuda(cudaGetLastError(), "fill_uniform launch");
}

void fill_nan_bf16(void* data, std::size_t count, cudaStream_t stream) {
  fill_nan<<<grid_for(count), 256, 0, stream>>>(static_cast<__nv_bfloat16*>(data), count);
  check_cuda(cudaGetLastError(), "fill_nan_bf16 launch");
}

void sample_reference(const void* a, const void* b, const void* d, GemmPrecision p, std::int64_t m, std::int64_t k,
                      const std::int64_t* rows, const std::int64_t* cols, int samples, double* reference,
                      double* result, cudaStream_t stream) {
  reference_dot<<<samples, kReferenceThreads, 0, stream>>>(
      a, b, static_cast<const __nv_bfloat16*>(d), p == GemmPrecision::fp8_e4m3, m, k, rows, cols, reference, result);
  check_cuda(cudaGetLastError(), "sample_reference launch");
}

}  // namespace ibt::gpu
