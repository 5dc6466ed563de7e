#include "collectives/nccl/cuda_device.hpp"

#include <cuda_runtime.h>

#include "core/errors.hpp"
#include "core/no_gpu.hpp"

namespace ibt::gpu {

void check_cuda(cudaError_t rc, const std::string& what) {
  if (rc == cudaSuccess) return;
  throw RuntimeError(what + " failed: " + cudaGetErrorString(rc) + " (" + cudaGetErrorName(rc) + ")");
}

int require_cuda_devices(const std::string& entry_point) {
  int count = 0;
  const cudaError_t rc = cudaGetDeviceCount(&count);
  if (rc == cudaSuccess && count > 0) return count;
  int driver = 0;
  if (cudaDriverGetVersion(&driver) != cudaSuccess) driver = 0;
  throw UsageError(no_gpu_message(entry_point, no_gpu_cause(rc == cudaSuccess ? "" : cudaGetErrorString(rc), driver)));
}

std::string cuda_version_string(int version) {
  return std::to_string(version / 1000) + "." + std::to_string((version % 1000) / 10);
}

DeviceFacts describe_device(int device) {
  cudaDeviceProp prop{};
  check_cuda(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties");
  DeviceFacts f;
  f.index = device;
  f.name = prop.name;
  f.cc_major = prop.major;
  f.cc_minor = prop.minor;
  f.multiprocessors = prop.multiProcessorCount;
  f.memory_bytes = prop.totalGlobalMem;
  char bus_id[32] = {};
  check_cuda(cudaDeviceGetPCIBusId(bus_id, sizeof bus_id, device), "cudaDeviceGetPCIBusId");
  f.pci_bus_id = bus_id;
  check_cuda(cudaDriverGetVersion(&f.driver_version), "cudaDriverGetVersion");
  check_cuda(cudaRuntimeGetVersion(&f.runtime_version), "cudaRuntimeGetVersion");
  return f;
}

}  // namespace ibt::gpu
