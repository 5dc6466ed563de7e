#include "gpu_test_support.hpp"

namespace ibt::testing_gpu {
namespace {

__global__ void spin(long long cycles) {
  const long long start = clock64();
  while (clock64() - start < cycles) {
  }
}

}  // namespace

void spin_on_stream(double seconds, cudaStream_t stream) {
  int device = 0, khz = 0;
  cudaGetDevice(&device);
  cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, device);
  spin<<<1, 1, 0, stream>>>(static_cast<long long>(seconds * khz * 1e3));
}

}  // namespace ibt::testing_gpu
