#pragma once
// CUDA status codes turned into ibt errors, and the one check every GPU entry point makes
// first: is there a usable CUDA device at all? Without one (no driver, no GPU, a driver
// older than the runtime) the entry point fails at once with one line naming the CUDA
// error, as a UsageError so the CLI exits 2 before anything is measured.
#include <cuda_runtime_api.h>

#include <string>

namespace ibt::gpu {

// Throws RuntimeError "<what> failed: <CUDA error text> (<error name>)" unless rc is success.
void check_cuda(cudaError_t rc, const std::string& what);

// Returns the number of CUDA devices, or throws UsageError with core/no_gpu.hpp's line
// "<entry_point>: no CUDA GPU on this machine (<cause>); <what needs it; what to use>"
// (without the prefix when entry_point is empty: the CLI already names the command).
int require_cuda_devices(const std::string& entry_point);

// Facts about one device for provenance and reports.
struct DeviceFacts {
  int index = 0;
  std::string name;  // "NVIDIA H100 80GB HBM3"
  int cc_major = 0;  // compute capability
  int cc_minor = 0;
  int multiprocessors = 0;
  std::size_t memory_bytes = 0;
  std::string pci_bus_id;   // "0000:18:00.0"
  int driver_version = 0;   // CUDA driver API version, e.g. 13000
  int runtime_version = 0;  // CUDA runtime version, e.g. 13000
};
DeviceFacts describe_device(int device);

// "13.0" from 13000.
std::string cuda_version_string(int version);

}  // namespace ibt::gpu
